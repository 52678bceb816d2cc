package withlock_test

import (
	"context"
	"errors"
	"log"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
)

// A lock on three independent Redis masters survives the loss of any one.
func ExampleNewQuorum() {
	var nodes []redis.UniversalClient
	for _, addr := range []string{"redis-a:6379", "redis-b:6379", "redis-c:6379"} {
		nodes = append(nodes, redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1}))
	}
	locker, err := withlock.NewQuorum(nodes, nil)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	lock, err := locker.TryAcquire(ctx, "nightly-report", time.Minute, nil)
	switch {
	case errors.Is(err, withlock.ErrNotObtained):
		return // another owner holds a majority
	case errors.Is(err, withlock.ErrNoQuorum):
		log.Fatal(err) // fewer than two masters answered in time
	case err != nil:
		log.Fatal(err)
	}
	defer lock.Release(ctx)
	// ... the job, finished well within the validity time ...
}
