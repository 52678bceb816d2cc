package withlock

// DELETE AT MERGE: this file stands in for the backend seam (issue 9, H1's
// backend.go / single.go / quorum.go) so that the waiting line can be built
// against c.b.subscribe and c.b.handOver before that branch lands.

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// seamShim is today's Client seen through the two backend methods the
// waiting line uses.
type seamShim struct{ c *Client }

// subscribe returns the Pub/Sub handle on which release messages arrive:
// the one deployment, or on a quorum the first node (every node's release
// script publishes).
func (s seamShim) subscribe(ctx context.Context) *redis.PubSub {
	return s.c.rdb.Subscribe(ctx)
}

// handOver releases from and, in the same round trip, sends the SET NX PX
// of to. handled is false, with nothing sent, where that is not possible
// (a quorum). err is the release's outcome as Release reports it; got is
// whether to is held now, and setErr, when it is not, the SET's own error
// (nil when someone else holds the key).
func (s seamShim) handOver(ctx context.Context, from, to *Lock) (handled, got bool, setErr, err error) {
	if s.c.nodes != nil {
		return false, false, nil, nil
	}
	var release *redis.Cmd
	var set *redis.BoolCmd
	_, _ = s.c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		release = p.Eval(ctx, releaseScript, []string{from.key}, from.token, 0)
		set = p.SetNX(ctx, to.key, to.token, to.ttl)
		return nil
	})
	n, err := release.Int64()
	got, setErr = set.Result()
	switch {
	case err != nil:
		err = opError("release", from.key, err)
	case n != 1:
		err = ErrLockNotHeld
	}
	return true, got, setErr, err
}
