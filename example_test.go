package withlock_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/redistest"
)

// exampleServer is the Redis the examples use. Examples take no
// *testing.T, so they cannot start a server of their own: the first
// example to run starts one (exampleRedisAddr) and TestMain stops it after
// the run, which keeps the examples runnable (checked against their
// Output) instead of compile-only. Tests start their own servers and do
// not use it. A run that selects no example starts no server here.
var exampleServer struct {
	once sync.Once
	addr string
	stop func()
}

// exampleRedisAddr returns the address of the examples' Redis, starting it
// on first use.
func exampleRedisAddr() string {
	exampleServer.once.Do(func() {
		srv, stop, err := redistest.StartMain()
		if err != nil {
			panic(fmt.Sprintf("the examples need redis-server: %v", err))
		}
		exampleServer.addr, exampleServer.stop = srv.Addr(), stop
	})
	return exampleServer.addr
}

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		// The examples need a Redis and an example cannot skip itself, so
		// go test -short, which runs only what needs no server, leaves
		// them out as -skip would.
		skip := "^Example"
		if prev := flag.Lookup("test.skip").Value.String(); prev != "" {
			skip = prev + "|" + skip
		}
		if err := flag.Set("test.skip", skip); err != nil {
			fmt.Fprintln(os.Stderr, "TestMain:", err)
			os.Exit(2)
		}
	}
	code := m.Run()
	if exampleServer.stop != nil {
		exampleServer.stop()
	}
	os.Exit(code)
}

// A job takes its lock with TryAcquire, runs only if it got it, and releases
// it afterwards. A second taker is refused at once while the lock is held.
func Example() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{
		Addr:       exampleRedisAddr(), // e.g. "127.0.0.1:6379"
		MaxRetries: -1,                 // a retried SET NX may find its own lock: see the package doc
	})
	defer rdb.Close()
	locker := withlock.New(rdb, nil)

	lock, err := locker.TryAcquire(ctx, "nightly-report", 30*time.Second, nil)
	if err != nil {
		fmt.Println("not run:", err)
		return
	}
	fmt.Println("holding", lock.Key())

	// Another server's copy of the same job, started meanwhile.
	_, err = locker.TryAcquire(ctx, "nightly-report", 30*time.Second, nil)
	var held *withlock.NotObtainedError
	if errors.As(err, &held) {
		fmt.Println("second copy refused:", errors.Is(err, withlock.ErrNotObtained), held.Holder.TTL > 0)
	}

	// ... run the job ...

	if err := lock.Release(ctx); err != nil {
		fmt.Println("release:", err) // withlock.ErrLockNotHeld if it expired and was taken over
		return
	}
	fmt.Println("released")
	// Output:
	// holding lock:nightly-report
	// second copy refused: true true
	// released
}

// Acquire waits for a busy lock until its context ends.
func ExampleClient_Acquire() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: exampleRedisAddr(), MaxRetries: -1})
	defer rdb.Close()
	locker := withlock.New(rdb, nil)

	first, err := locker.TryAcquire(ctx, "import", time.Minute, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer first.Release(ctx)

	wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = locker.Acquire(wctx, "import", time.Minute, nil)
	fmt.Println(errors.Is(err, withlock.ErrNotObtained), errors.Is(err, context.DeadlineExceeded))
	// Output:
	// true true
}
