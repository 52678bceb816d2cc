package withlock_test

// The examples go doc shows, run against a Redis of their own.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
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

// A daily export runs once a day across servers: OncePer skips a day that
// already succeeded, and ReleaseAndRecord releases the lock and stores the
// run, whose Window marks the day done. Its one error says which part
// failed.
func ExampleLock_ReleaseAndRecord() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: exampleRedisAddr(), MaxRetries: -1})
	defer rdb.Close()
	locker := withlock.New(rdb, nil)

	for attempt := 1; attempt <= 2; attempt++ {
		lock, err := locker.TryAcquire(ctx, "daily-export", 30*time.Second, nil)
		if err != nil {
			fmt.Println("not run:", err)
			return
		}
		span, err := lock.OncePer(ctx, withlock.Window{Every: 24 * time.Hour})
		if errors.Is(err, withlock.ErrDone) {
			fmt.Println("attempt", attempt, "skipped: today's export is done") // the lock is released
			continue
		} else if err != nil {
			fmt.Println("not run:", err)
			return
		}

		// ... run the export ...

		run := withlock.Run{ExitCode: 0, Window: &span,
			Extra: map[string]json.RawMessage{"rows": json.RawMessage("1520")}}
		err = lock.ReleaseAndRecord(context.Background(), run, 7*24*time.Hour)
		switch {
		case errors.Is(err, withlock.ErrNotReleased):
			fmt.Println(err) // Redis did not answer: the key expires by itself at its TTL
		case errors.Is(err, withlock.ErrNotRecorded):
			fmt.Println(err) // released, but the record was not stored
		}
		fmt.Println("attempt", attempt, "exported")
	}
	st, err := locker.Status(ctx, "daily-export")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("last run:", st.LastRun.Outcome, string(st.LastRun.Extra["rows"]), "rows")
	// Output:
	// attempt 1 exported
	// attempt 2 skipped: today's export is done
	// last run: ok 1520 rows
}
