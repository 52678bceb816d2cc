package withlock

// Sending the release script by its digest (EVALSHA) once a Client has sent
// it whole.

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// releaseDigest is the SHA1 digest of releaseScript, what EVALSHA sends. It
// is computed at a Client's second release, not at package initialization:
// a one-shot process such as the CLI never sends it, and would pay for the
// hash at every start.
var releaseDigest = sync.OnceValue(func() string { return redis.NewScript(releaseScript()).Hash() })

// How a Client sends the release script (single.releaseBy).
const (
	releaseWhole    int32 = iota // no release yet: EVAL
	releaseByDigest              // one EVAL done: EVALSHA, EVAL on NOSCRIPT
	releaseNoDigest              // EVALSHA refused by ACL: EVAL for good
)

// runRelease runs the release script with keys and args. A Client's first release sends
// the whole script with EVAL, which also loads it into the server's cache;
// every later one sends only its 40-byte digest instead of ~900 bytes that
// Redis would hash again, and the whole script again when the server answers
// NOSCRIPT (a restart, a failover, SCRIPT FLUSH, another Cluster node). The
// rule is per Client, with no option: a one-shot process such as the CLI
// releases once, so it always sends one plain EVAL (and never pays a
// NOSCRIPT round trip on a fresh server), while a long-lived Client pays the
// whole script once. A user whose ACL allows EVAL but not EVALSHA (the
// least-privilege list in docs/production-redis.md) costs one refused EVALSHA, then EVAL only.
func (s *single) runRelease(ctx context.Context, keys []string, args []any) (any, error) {
	if s.releaseBy.Load() == releaseByDigest {
		v, err := s.rdb.EvalSha(ctx, releaseDigest(), keys, args...).Result()
		switch {
		case err == nil: // HasErrorPrefix allocates even for nil
			return v, nil
		case redis.HasErrorPrefix(err, "NOPERM"):
			s.releaseBy.Store(releaseNoDigest)
		case !redis.HasErrorPrefix(err, "NOSCRIPT"):
			return v, err
		}
	}
	v, err := s.rdb.Eval(ctx, releaseScript(), keys, args...).Result()
	if err == nil {
		s.releaseBy.CompareAndSwap(releaseWhole, releaseByDigest)
	}
	return v, err
}
