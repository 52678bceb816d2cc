package withlock_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
)

// compareAndDelete is the release of a lock written by hand with go-redis.
var compareAndDelete = redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`)

// An uncontended TryAcquire and Release allocate no more than the same
// lock written by hand on go-redis: a random token, SET NX PX and a
// compare-and-delete script sent by its digest. What the lock adds on the
// hot path (the key, the Lock, the waiting mark, the release's arguments)
// is built within what those allocate anyway.
func TestUncontendedPairAllocatesNoMoreThanGoRedisByHand(t *testing.T) {
	rdb := startRedis(t)
	c := withlock.New(rdb, nil)
	ctx := context.Background()
	var failed error
	pair := func() {
		l, err := c.TryAcquire(ctx, "alloc", time.Minute, nil)
		if err == nil {
			err = l.Release(ctx)
		}
		if err != nil {
			failed = err
		}
	}
	byHand := func() {
		var b [16]byte
		_, _ = rand.Read(b[:])
		token := hex.EncodeToString(b[:])
		ok, err := rdb.SetNX(ctx, "lock:by-hand", token, time.Minute).Result()
		if err == nil && ok {
			err = compareAndDelete.Run(ctx, rdb, []string{"lock:by-hand"}, token).Err()
		}
		if err != nil {
			failed = err
		}
	}
	pair() // the release script's digest is learnt at the first release
	byHand()
	ours, theirs := testing.AllocsPerRun(200, pair), testing.AllocsPerRun(200, byHand)
	if failed != nil {
		t.Fatal(failed)
	}
	t.Logf("allocations per pair: with-lock %.0f, by hand %.0f", ours, theirs)
	if ours > theirs {
		t.Errorf("an uncontended pair allocates %.0f times, more than the %.0f of the same lock by hand", ours, theirs)
	}
}
