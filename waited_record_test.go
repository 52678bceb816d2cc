package withlock_test

import (
	"context"
	"testing"
	"time"

	withlock "github.com/with-lock/with-lock"
)

// A waiting Acquire's record starts when the lock was handed to it, never
// before the holder it waited for released it: Acquired, the conservative
// clock of the key's expiry, may be the wait's last command, sent while
// the holder still held the lock.
func TestWaitedRecordStartsWhenTheLockWasObtained(t *testing.T) {
	t.Parallel()
	rdb := startRedis(t)
	ctx := context.Background()
	holder, err := withlock.New(rdb, nil).TryAcquire(ctx, "waited", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := withlock.New(rdb, nil)
	got := make(chan *withlock.Lock, 1)
	go func() {
		l, err := c.Acquire(ctx, "waited", time.Minute, nil)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	eventually(t, "the waiter joined the line", func() bool { return inLine(t, rdb, "lock:waited") == 1 })
	released := time.Now()
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l := <-got
	if l == nil {
		t.FailNow()
	}
	returned := time.Now()
	if err := l.ReleaseAndRecord(ctx, withlock.Run{}, recordTTL); err != nil {
		t.Fatal(err)
	}
	st, err := c.Status(ctx, "waited")
	if err != nil || st.LastRun == nil {
		t.Fatalf("Status: %+v, %v; want the last run", st, err)
	}
	if s := st.LastRun.Started; s.Before(released) || s.After(returned) {
		t.Errorf("the waiter's run started %s, want between the holder's release (%s) and Acquire's return (%s)",
			s.Format(time.RFC3339Nano), released.Format(time.RFC3339Nano), returned.Format(time.RFC3339Nano))
	}
}
