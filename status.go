package withlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Status is what Redis says about a lock at one moment.
type Status struct {
	Key  string // the lock's Redis key
	Held bool   // whether the key exists
	// Holder is the "<host>:<pid>" of the owner ("unknown" for a token in
	// another format); "" when the lock is free. The owner's full token is
	// never returned: it would let the reader release the lock.
	Holder string
	// TTL is the owner's remaining time: 0 when free, -1 when the key
	// exists without an expiry (not set by this package).
	TTL time.Duration
	// Since is when the holder began to acquire the lock, by its own clock
	// (a holder that waited for it shows the start of its wait); zero when
	// free or unknown (a token from an older version or another program).
	Since time.Time
	// Fence is the last fencing number drawn for this name — the holder's
	// own if it acquired with LockOptions.Fence — or 0 if none ever was.
	Fence int64
}

// Status reads the lock called name, its remaining time and its fencing
// counter as of one moment: on one deployment in one MULTI/EXEC (both keys
// are in one Redis Cluster slot). On a quorum (NewQuorum) it asks every node
// and reports the lock held when one token is on a majority of them, with
// the time until fewer than a majority of its keys remain, as Lock.TTL
// does.
func (c *Client) Status(ctx context.Context, name string) (*Status, error) {
	return c.b.status(ctx, c.Key(name))
}

// nodeStatus is one node's view of a lock. token is "" when the key is
// missing; it never leaves the package.
type nodeStatus struct {
	token string
	ttl   time.Duration // as Status.TTL
	fence int64
	err   error
}

func readStatus(ctx context.Context, rdb redis.UniversalClient, key string) nodeStatus {
	var get, fence *redis.StringCmd
	var pttl *redis.DurationCmd
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		get = p.Get(ctx, key)
		pttl = p.PTTL(ctx, key)
		fence = p.Get(ctx, fenceKey(key))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nodeStatus{err: err}
	}
	var v nodeStatus
	if token, err := get.Result(); err == nil {
		v.token = token
		switch d := pttl.Val(); {
		case d > 0:
			v.ttl = d
		case d == -1: // go-redis keeps PTTL's "no expiry" reply as -1ns
			v.ttl = -1
		}
	}
	if f, err := fence.Result(); err == nil {
		if v.fence, err = strconv.ParseInt(f, 10, 64); err != nil {
			return nodeStatus{err: fmt.Errorf("fence counter %q is not a number", f)}
		}
	}
	return v
}
