package withlock

// Describing a foreign key that holds what this package did not write
// (ErrWrongType).

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// wrongType describes key after Redis answered err, a WRONGTYPE reply, for
// it: its type, or its value when it is a string, in one round trip taken
// only on this error path.
func wrongType(ctx context.Context, rdb redis.UniversalClient, key, what string, err error) error {
	var typ *redis.StatusCmd
	var get *redis.StringCmd
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		typ = p.Type(ctx, key)
		get = p.Get(ctx, key)
		return nil
	})
	e := &wrongTypeError{what: what, key: key, holds: "something else", err: err}
	switch t := typ.Val(); t {
	case "string":
		e.holds = quoteShort(get.Val(), 32)
	case "", "none": // gone meanwhile, or TYPE failed
	default:
		e.holds = "a " + t
	}
	return e
}

// quoteShort quotes s, cut to n bytes, for an error message.
func quoteShort(s string, n int) string {
	if len(s) <= n {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q...", s[:n])
}

// isWrongType reports whether err is Redis's WRONGTYPE reply (or the fenced
// acquisition script's, which uses the same prefix). go-redis v9 has no
// predicate for it, unlike READONLY or NOAUTH, so this matches the reply's
// prefix.
func isWrongType(err error) bool { return redis.HasErrorPrefix(err, "WRONGTYPE") }
