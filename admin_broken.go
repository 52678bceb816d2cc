package withlock

// Client.Break's marker: the key naming who broke a lock, which a holder's
// KeepAlive reads to say so in its LostError.

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/keys"
)

// The marker Client.Break leaves for the holder of the lock it removed, so
// that the holder's KeepAlive can say who broke it (LostError.BrokenBy)
// and not take it back (KeepAliveOptions.Reacquire).

// brokenKey is the key of the marker Client.Break leaves beside the lock
// key key, in its Cluster slot: "<host:pid of the breaker> <sha1 of each
// token removed>…", living as long as the broken key had left (plus a
// second), so that its holder's next renewal can find it.
func brokenKey(key string) string { return keys.Broken(key) }

// breaker is who breaks a lock as the marker names it: the Client's
// "<host>:<pid>".
func (c *Client) breaker() string { return strings.TrimSuffix(c.owner, ":") }

// tokenSum is how the break marker names a token it removed: the hex SHA-1
// that Lua's redis.sha1hex computes. The marker never holds a token.
func tokenSum(token string) string {
	sum := sha1.Sum([]byte(token))
	return hex.EncodeToString(sum[:])
}

// brokenBy reads the break marker of l's key: the "<host>:<pid>" of the
// Client whose Break removed l's token, or "" when Redis knows of no such
// break (the key vanished otherwise, or the marker has expired). It is one
// GET, sent only after a renewal found l not ours. A semaphore's slot is
// named in its name's marker, so this serves both.
func (s *single) brokenBy(ctx context.Context, l *Lock) (string, error) {
	return brokenOn(ctx, s.rdb, l)
}

// brokenOn reads the break marker of l's key on rdb (see single.brokenBy).
func brokenOn(ctx context.Context, rdb redis.UniversalClient, l *Lock) (string, error) {
	v, err := rdb.Get(ctx, brokenKey(l.key)).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "", nil
	case err != nil:
		return "", err
	}
	by, sums, _ := strings.Cut(v, " ")
	for _, sum := range strings.Fields(sums) {
		if sum == tokenSum(l.token) {
			return by, nil
		}
	}
	return "", nil
}

// brokenBy on a quorum asks every node at once (Break left the marker on
// each that held the key) and returns the first breaker named, without
// waiting for the nodes that are slow to answer once one did; "" when none
// names l's token.
func (q *quorum) brokenBy(ctx context.Context, l *Lock) (string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // the slower reads end here
	found := make(chan string, len(q.nodes))
	for _, rdb := range q.nodes {
		go func() {
			by, _ := brokenOn(ctx, rdb, l)
			found <- by
		}()
	}
	for range q.nodes {
		if by := <-found; by != "" {
			return by, nil
		}
	}
	return "", nil
}
