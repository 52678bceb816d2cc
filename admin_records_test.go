package withlock_test

// Last-run records and history: what a run's record holds, which outcome it
// says, how long it is kept.

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/keys"
	"github.com/with-lock/with-lock/internal/redistest"
)

// runOnce takes the lock called name on c and ends it with a recorded run
// that exits code.
func runOnce(t *testing.T, c *withlock.Client, name string, code int) {
	t.Helper()
	ctx := context.Background()
	l, err := c.TryAcquire(ctx, name, 5*time.Second, nil)
	if err != nil {
		t.Fatalf("acquire %s: %v", name, err)
	}
	if err := errors.Join(l.ReleaseAndRecord(ctx, withlock.Run{ExitCode: code}, time.Minute)); err != nil {
		t.Fatalf("release and record %s: %v", name, err)
	}
}

// A failed run after a successful one is the last run, and the success
// stays the last success; a success replaces it. The outcome follows the
// exit code.
func TestLastSuccessSurvivesALaterFailure(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		client func(t *testing.T) *withlock.Client
	}{
		{"one Redis", func(t *testing.T) *withlock.Client { return withlock.New(srv.Client(), nil) }},
		{"a semaphore", func(t *testing.T) *withlock.Client {
			c, err := withlock.NewSemaphore(srv.Client(), 2, &withlock.Options{Prefix: "{sem}:"})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}},
		{"a quorum", func(t *testing.T) *withlock.Client {
			_, _, c := quorumNodes(t)
			return c
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.client(t)
			st, err := c.Status(ctx, "job")
			if err != nil || st.LastSuccess != nil {
				t.Fatalf("before any run: last success %+v, %v; want none", st.LastSuccess, err)
			}
			runOnce(t, c, "job", 0)
			runOnce(t, c, "job", 3)
			st, err = c.Status(ctx, "job")
			if err != nil {
				t.Fatal(err)
			}
			if st.LastRun == nil || st.LastRun.ExitCode != 3 || st.LastRun.Outcome != withlock.OutcomeFailed {
				t.Errorf("last run %+v, want the failure (exit 3, %q)", st.LastRun, withlock.OutcomeFailed)
			}
			if st.LastSuccess == nil || st.LastSuccess.ExitCode != 0 || st.LastSuccess.Outcome != withlock.OutcomeOK ||
				!st.LastSuccess.Finished.Before(st.LastRun.Finished) && !st.LastSuccess.Finished.Equal(st.LastRun.Finished) {
				t.Errorf("last success %+v, want the earlier exit 0", st.LastSuccess)
			}
			if st.LastSuccess != nil && st.LastSuccess.Holder == "" {
				t.Errorf("last success %+v has no holder", st.LastSuccess)
			}
			// Each run once, newest first, also merged from a quorum's nodes.
			if runs, err := c.History(ctx, "job", 0); err != nil || len(runs) != 2 || runs[0].ExitCode != 3 || runs[1].ExitCode != 0 {
				t.Errorf("history %+v, %v; want exit 3 then exit 0", runs, err)
			}
			first := st.LastSuccess
			runOnce(t, c, "job", 0)
			if st, err = c.Status(ctx, "job"); err != nil || st.LastSuccess == nil || first == nil ||
				!st.LastSuccess.Finished.After(first.Finished) {
				t.Errorf("after a second success: last success %+v (%v), want one after %+v", st.LastSuccess, err, first)
			}
		})
	}
}

// History lists a name's runs newest first, keeps Options.History of them,
// and lives for the record's retention.
func TestHistoryIsNewestFirstAndTrimmed(t *testing.T) {
	rdb := startRedis(t)
	ctx := context.Background()
	c := withlock.New(rdb, &withlock.Options{History: 4})
	for code := range 6 { // exit codes 0..5, oldest first
		runOnce(t, c, "hist", code)
	}
	runs, err := c.History(ctx, "hist", 0)
	if err != nil {
		t.Fatal(err)
	}
	var codes []int
	for _, r := range runs {
		codes = append(codes, r.ExitCode)
	}
	if want := []int{5, 4, 3, 2}; len(codes) != len(want) || codes[0] != 5 || codes[1] != 4 || codes[2] != 3 || codes[3] != 2 {
		t.Errorf("history exit codes %v, want %v (newest first, 4 kept)", codes, want)
	}
	if n := rdb.LLen(ctx, "{lock:hist}:runs").Val(); n != 4 {
		t.Errorf("the list holds %d runs, want 4", n)
	}
	if ttl := rdb.PTTL(ctx, "{lock:hist}:runs").Val(); ttl <= 0 || ttl > time.Minute {
		t.Errorf("the history lives %v, want the record's retention (at most 1m)", ttl)
	}
	for i, r := range runs {
		if r.Holder == "" || r.Started.IsZero() || r.Finished.Before(r.Started) {
			t.Errorf("run %d: %+v lacks a holder or times", i, r)
		}
		if i > 0 && r.Finished.After(runs[i-1].Finished) {
			t.Errorf("run %d finished after run %d", i, i-1)
		}
	}
	if two, err := c.History(ctx, "hist", 2); err != nil || len(two) != 2 || two[0].ExitCode != 5 || two[1].ExitCode != 4 {
		t.Errorf("History(2) = %+v, %v; want the two newest", two, err)
	}
	if none, err := c.History(ctx, "never-ran", 10); err != nil || len(none) != 0 {
		t.Errorf("History of a name without runs = %+v, %v; want none", none, err)
	}

	off := withlock.New(rdb, &withlock.Options{History: -1})
	runOnce(t, off, "nohist", 0)
	if n := rdb.Exists(ctx, "{lock:nohist}:runs").Val(); n != 0 {
		t.Error("History -1 kept a history")
	}
	if st, err := off.Status(ctx, "nohist"); err != nil || st.LastRun == nil || st.LastSuccess == nil {
		t.Errorf("History -1: status %+v, %v; want the last run and success kept", st, err)
	}

	// The default keeps DefaultHistory runs.
	def := withlock.New(rdb, nil)
	for code := range withlock.DefaultHistory + 2 {
		runOnce(t, def, "default", code)
	}
	if runs, err := def.History(ctx, "default", 0); err != nil || len(runs) != withlock.DefaultHistory {
		t.Errorf("default history: %d runs, %v; want %s", len(runs), err, strconv.Itoa(withlock.DefaultHistory))
	}
}

// A run's outcome follows how it ended, unless the caller names one.
func TestOutcomeFollowsHowTheRunEnded(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	c := withlock.New(srv.Client(), nil)
	for _, tc := range []struct {
		run  withlock.Run
		want withlock.Outcome
	}{
		{withlock.Run{ExitCode: 0}, withlock.OutcomeOK},
		{withlock.Run{ExitCode: 2}, withlock.OutcomeFailed},
		{withlock.Run{ExitCode: 125, Lost: true}, withlock.OutcomeLost},
		{withlock.Run{ExitCode: 124, Lost: true, Outcome: "timed-out"}, "timed-out"},
		{withlock.Run{ExitCode: 0, Outcome: "skipped-by-caller"}, "skipped-by-caller"},
	} {
		l := mustAcquire(t, c, "outcome", 5*time.Second)
		if err := errors.Join(l.ReleaseAndRecord(ctx, tc.run, time.Minute)); err != nil {
			t.Fatal(err)
		}
		st, err := c.Status(ctx, "outcome")
		if err != nil || st.LastRun == nil || st.LastRun.Outcome != tc.want {
			t.Errorf("%+v: last run %+v, %v; want outcome %q", tc.run, st.LastRun, err, tc.want)
		}
	}
}

// ReleaseAndRecord says which part failed: a record it refuses (a
// retention below 1ms) is ErrNotRecorded alone, and the lock is released
// all the same.
func TestReleaseAndRecordReleasesWhenTheRecordIsRefused(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	rdb := srv.Client()
	l, err := withlock.New(rdb, nil).TryAcquire(ctx, "refused-record", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = l.ReleaseAndRecord(ctx, withlock.Run{}, 0)
	if !errors.Is(err, withlock.ErrNotRecorded) || errors.Is(err, withlock.ErrNotReleased) || errors.Is(err, withlock.ErrLockNotHeld) {
		t.Errorf("ReleaseAndRecord with retention 0 = %v; want the release done and the record refused (ErrNotRecorded alone)", err)
	}
	if n := rdb.Exists(ctx, l.Key()).Val(); n != 0 {
		t.Errorf("the lock's key still exists after ReleaseAndRecord refused only the record")
	}
}

// Run.Output is stored with the record as the caller gave it, as UTF-8
// text: Status and History read it back, bytes that are not UTF-8 as
// U+FFFD; a run without it stores none.
func TestRecordKeepsTheOutputTheCallerGave(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	c := withlock.New(srv.Client(), nil)
	l := mustAcquire(t, c, "job", 5*time.Second)
	const output = "exported 1200 rows\n<b>disk full</b> \"quoted\"\t\x1b[31m\xff\xfe\n"
	if err := errors.Join(l.ReleaseAndRecord(ctx, withlock.Run{ExitCode: 3, Output: output}, time.Minute)); err != nil {
		t.Fatal(err)
	}
	runOnce(t, c, "job", 0) // no output
	const want = "exported 1200 rows\n<b>disk full</b> \"quoted\"\t\x1b[31m\uFFFD\uFFFD\n"
	runs, err := c.History(ctx, "job", 0)
	if err != nil || len(runs) != 2 || runs[0].Output != "" || runs[1].Output != want {
		t.Fatalf("history %+v (%v): want the later run without output, the first with %q", runs, err, want)
	}
	st, err := c.Status(ctx, "job")
	if err != nil || st.LastRun == nil || st.LastRun.Output != "" {
		t.Errorf("status: last run %+v (%v), want it without output", st.LastRun, err)
	}
	raw := srv.Client().LIndex(ctx, "{lock:job}:runs", 1).Val()
	if !strings.Contains(raw, `"output":"exported 1200 rows\n`) {
		t.Errorf("the history's record %s does not hold the output as the field output", raw)
	}
}

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
