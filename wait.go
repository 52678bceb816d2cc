package withlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Bounds of the pause between two attempts of a waiting Acquire.
const (
	minRetry = 2 * time.Millisecond
	maxRetry = 100 * time.Millisecond
)

// wait retries tryAcquire with the same token until it succeeds or ctx ends.
// Keeping the token means an attempt whose reply was lost is recognised as
// ours by the next one.
func (c *Client) wait(ctx context.Context, name, token string, ttl time.Duration, opts *LockOptions) (*Lock, error) {
	backoff := minRetry
	for {
		l, err := c.tryAcquire(ctx, name, token, ttl, opts)
		var held *HeldError
		if !errors.As(err, &held) {
			return l, err
		}
		pause := min(backoff, max(held.TTL, minRetry))
		pause += rand.N(pause/2 + 1) // spread waiters that woke together
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w; gave up waiting: %w", held, context.Cause(ctx))
		case <-t.C:
		}
		backoff = min(2*backoff, maxRetry)
	}
}
