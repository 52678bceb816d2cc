package withlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
)

// Do runs a job longer than the lock's TTL: the lock is renewed while the
// job runs, and the job's context is cancelled if the lock is lost anyway.
// The fencing number lets the storage the job writes to reject a writer
// that lost the lock.
func ExampleClient_Do() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", MaxRetries: -1})
	defer rdb.Close()
	locker := withlock.New(rdb, nil)

	opts := &withlock.DoOptions{LockOptions: withlock.LockOptions{Fence: true}}
	err := locker.Do(context.Background(), "nightly-report", 30*time.Second, opts,
		func(ctx context.Context, l *withlock.Lock) error {
			for part := range 100 {
				if err := ctx.Err(); err != nil {
					return context.Cause(ctx) // the lock is gone: stop writing
				}
				fmt.Println("writing part", part, "with fence", l.Fence())
			}
			return nil
		})
	switch {
	case errors.Is(err, withlock.ErrNotObtained):
		fmt.Println("another server runs the report")
	case errors.Is(err, withlock.ErrLockLost):
		fmt.Println("lost the lock mid-run:", err)
	case err != nil:
		fmt.Println("report failed:", err)
	}
}

// KeepAlive renews a lock the caller manages itself and says when it is
// lost.
func ExampleLock_KeepAlive() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", MaxRetries: -1})
	defer rdb.Close()
	ctx := context.Background()
	l, err := withlock.New(rdb, nil).TryAcquire(ctx, "import", 10*time.Second, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	ka := l.KeepAlive(ctx, nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		runImport(ka.Context()) // should stop when its context is cancelled
	}()
	select {
	case <-done:
	case <-ka.Lost():
		fmt.Println(ka.Err()) // someone else may hold the lock now
		<-done                // runImport's context was cancelled
	}
	ka.Stop() // before Release, so no renewal lands after it
	if err := l.Release(ctx); err != nil {
		fmt.Println(err)
	}
}

func runImport(context.Context) {}
