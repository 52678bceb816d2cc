package withlock_test

import (
	"context"
	"fmt"
	"time"

	withlock "github.com/with-lock/with-lock"
)

// servedWithin bounds one waiting Acquire of a test that expects every
// waiter to be served: well below longPoll, so that a lost wake-up (which
// only the minute's poll would repair) fails the test in seconds with a
// message instead of blocking until go test's timeout; and generous for a
// loaded machine running -race.
const servedWithin = 30 * time.Second

// acquireBounded is Acquire bounded by servedWithin.
func acquireBounded(c *withlock.Client, name string, ttl time.Duration, opts *withlock.LockOptions) (*withlock.Lock, error) {
	ctx, cancel := context.WithTimeout(context.Background(), servedWithin)
	defer cancel()
	l, err := c.Acquire(ctx, name, ttl, opts)
	if err != nil {
		return nil, fmt.Errorf("waiter not served within %s (a lost wake-up?): %w", servedWithin, err)
	}
	return l, nil
}
