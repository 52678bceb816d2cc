package withlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/keys"
)

// recordTTL is what a test's records are kept for: unlike any lock's TTL
// or min-hold in these tests, so that a record kept for either shows.
const recordTTL = 90 * time.Minute

// A record's token digest tells the holder's own finished run from
// another's: while a later run of the same process holds the name, Status
// shows the earlier run as the last one but not as finished; when that
// later run ends within its min-hold, its own record makes the key read as
// finished. For a plain lock and a semaphore's slot.
func TestRecordTellsOwnFinishedRunFromAnothers(t *testing.T) {
	rdb := startRedis(t)
	ctx := context.Background()
	for name, c := range map[string]*withlock.Client{"own-plain": withlock.New(rdb, nil), "own-sem": semaphore(t, rdb, 2)} {
		first := mustAcquire(t, c, name, time.Minute)
		if err := errors.Join(first.ReleaseAndRecord(ctx, withlock.Run{ExitCode: 1}, recordTTL)); err != nil {
			t.Fatal(err)
		}
		opts := &withlock.LockOptions{MinHold: time.Minute}
		second, err := c.TryAcquire(ctx, name, time.Minute, opts)
		if err != nil {
			t.Fatal(err)
		}
		st, err := c.Status(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if !st.Held || st.LastRun == nil || st.LastRun.ExitCode != 1 || st.KeptByMinHold {
			t.Errorf("%s held by a second run after the first recorded: %+v, last run %+v; want held, the first run (exit 1) last, not finished", name, st, st.LastRun)
		}
		if err := errors.Join(second.ReleaseAndRecord(ctx, withlock.Run{ExitCode: 2}, recordTTL)); err != nil {
			t.Fatal(err)
		}
		st, err = c.Status(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if !st.Held || st.LastRun == nil || st.LastRun.ExitCode != 2 || !st.KeptByMinHold {
			t.Errorf("%s kept by the second run's min-hold after it recorded: %+v, last run %+v; want held, its own run (exit 2) last, finished", name, st, st.LastRun)
		}
		if _, err := c.Break(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
}

// A lost run is recorded too: ReleaseAndRecord of a lock another holder
// took over stores the run (its holder, fence, exit code and Lost), kept for
// the retention asked, says ErrLockNotHeld for the release and nil for the record, and
// leaves the new holder's key alone. For a plain lock and a semaphore's
// slot.
func TestRecordOfALostRunIsStored(t *testing.T) {
	rdb := startRedis(t)
	ctx := context.Background()
	for _, tc := range []struct {
		what, name string
		c          *withlock.Client
		key        func(*withlock.Lock) string // the key the holder's token is in
	}{
		{"plain lock", "lost-plain", withlock.New(rdb, nil), func(l *withlock.Lock) string { return l.Key() }},
		{"semaphore", "lost-sem", semaphore(t, rdb, 2), func(l *withlock.Lock) string { return slotKeyOf(l.Key(), l.Slot()) }},
	} {
		name := tc.name
		l, err := tc.c.TryAcquire(ctx, name, time.Minute, &withlock.LockOptions{Fence: true})
		if err != nil {
			t.Fatal(err)
		}
		const taker = "otherhost:4242:0123456789abcdef0123456789abcdef"
		if err := rdb.Set(ctx, tc.key(l), taker, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		err = l.ReleaseAndRecord(ctx, withlock.Run{ExitCode: 125, Lost: true}, recordTTL)
		if !errors.Is(err, withlock.ErrLockNotHeld) || errors.Is(err, withlock.ErrNotReleased) || errors.Is(err, withlock.ErrNotRecorded) {
			t.Errorf("%s: ReleaseAndRecord of a lost lock = %v; want ErrLockNotHeld alone, the record stored", tc.what, err)
		}
		if v := rdb.Get(ctx, tc.key(l)).Val(); v != taker {
			t.Errorf("%s: the new holder's key holds %q after the lost run's release", tc.what, v)
		}
		st, err := withlock.New(rdb, nil).Status(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		run := st.LastRun
		if run == nil || !run.Lost || run.ExitCode != 125 || run.Holder != withlock.HolderOf(l.Token()) || run.Fence != l.Fence() {
			t.Errorf("%s: last run %+v, want the lost run of %s with exit 125 and fence %d", tc.what, run, withlock.HolderOf(l.Token()), l.Fence())
		}
		if st.KeptByMinHold {
			t.Errorf("%s: the new holder %s reads as the lost run, finished", tc.what, st.Holder.ID)
		}
		recordKeptFor(t, rdb, name, recordTTL)
	}
}

// recordKeptFor checks that the last-run record of the lock called name
// (default prefix) expires in about ttl.
func recordKeptFor(t *testing.T, rdb *redis.Client, name string, ttl time.Duration) {
	t.Helper()
	key := keys.Record("lock:" + name)
	if d := rdb.PTTL(context.Background(), key).Val(); d <= ttl-time.Minute || d > ttl {
		t.Errorf("record %s kept for %s, want the retention asked, %s", key, d, ttl)
	}
}

// A run recorded without times started when its lock was acquired (when
// its acquiring command was sent) and finished when ReleaseAndRecord was
// called; the holder and fence are the lock's.
func TestRecordStartsAtAcquisitionAndFinishesAtRelease(t *testing.T) {
	rdb := startRedis(t)
	ctx := context.Background()
	c := withlock.New(rdb, nil)
	l, err := c.TryAcquire(ctx, "times", time.Minute, &withlock.LockOptions{Fence: true})
	if err != nil {
		t.Fatal(err)
	}
	acquired := l.Acquired()
	clitest.Eventually(t, promptly, "the clock never moved past the acquisition", func() bool {
		return time.Since(acquired) > 20*time.Millisecond
	})
	before := time.Now()
	if err := errors.Join(l.ReleaseAndRecord(ctx, withlock.Run{ExitCode: 7}, recordTTL)); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	st, err := c.Status(ctx, "times")
	if err != nil {
		t.Fatal(err)
	}
	run := st.LastRun
	if run == nil {
		t.Fatalf("no last run after ReleaseAndRecord: %+v", st)
	}
	if !run.Started.Equal(acquired) {
		t.Errorf("run started %s, want when the lock was acquired, %s", run.Started, acquired)
	}
	if run.Finished.Before(before) || run.Finished.After(after) {
		t.Errorf("run finished %s, want within the ReleaseAndRecord call [%s, %s]", run.Finished, before, after)
	}
	if run.Holder != withlock.HolderOf(l.Token()) || run.Fence != l.Fence() || run.ExitCode != 7 || run.Lost {
		t.Errorf("run %+v, want holder %s, fence %d, exit 7", *run, withlock.HolderOf(l.Token()), l.Fence())
	}
	recordKeptFor(t, rdb, "times", recordTTL)
}
