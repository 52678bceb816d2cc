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
	// Fence is the last fencing number drawn for this name — the holder's
	// own if it acquired with LockOptions.Fence — or 0 if none ever was.
	Fence int64
}

// Status reads the lock called name, its remaining time and its fencing
// counter in one MULTI/EXEC, so the three belong together. Both keys are in
// one Redis Cluster slot.
func (c *Client) Status(ctx context.Context, name string) (*Status, error) {
	key := c.Key(name)
	var get, fence *redis.StringCmd
	var pttl *redis.DurationCmd
	_, err := c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		get = p.Get(ctx, key)
		pttl = p.PTTL(ctx, key)
		fence = p.Get(ctx, fenceKey(key))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("status of %s: %w", key, err)
	}
	st := &Status{Key: key}
	if token, err := get.Result(); err == nil {
		st.Held, st.Holder = true, Holder(token)
		switch d := pttl.Val(); {
		case d > 0:
			st.TTL = d
		case d == -1: // go-redis keeps PTTL's "no expiry" reply as -1ns
			st.TTL = -1
		}
	}
	if v, err := fence.Result(); err == nil {
		if st.Fence, err = strconv.ParseInt(v, 10, 64); err != nil {
			return nil, fmt.Errorf("status of %s: fence counter %q is not a number", key, v)
		}
	}
	return st, nil
}
