package withlock_test

// Last-run records and history: what a run's record holds, which outcome it
// says, how long it is kept; further down, once-per windows.

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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

// Windows are aligned to multiples of Every since the Unix epoch in UTC,
// shifted by Offset; a boundary belongs to the window it starts.
func TestWindowsAlignToTheEpochShiftedByTheOffset(t *testing.T) {
	t.Parallel()
	at := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		w          withlock.Window
		t          string
		start, end string
	}{
		{withlock.Window{Every: 24 * time.Hour}, "2026-12-01T13:45:00Z", "2026-12-01T00:00:00Z", "2026-12-02T00:00:00Z"},
		{withlock.Window{Every: 24 * time.Hour}, "2026-12-01T00:00:00Z", "2026-12-01T00:00:00Z", "2026-12-02T00:00:00Z"},
		{withlock.Window{Every: 24 * time.Hour, Offset: 2 * time.Hour}, "2026-12-01T01:59:59Z", "2026-11-30T02:00:00Z", "2026-12-01T02:00:00Z"},
		{withlock.Window{Every: 24 * time.Hour, Offset: -time.Hour}, "2026-12-01T23:30:00+00:00", "2026-12-01T23:00:00Z", "2026-12-02T23:00:00Z"},
		{withlock.Window{Every: time.Hour}, "2026-12-01T13:45:00+02:00", "2026-12-01T11:00:00Z", "2026-12-01T12:00:00Z"},
		{withlock.Window{Every: 7 * time.Minute}, "1969-12-31T23:59:00Z", "1969-12-31T23:53:00Z", "1970-01-01T00:00:00Z"},
	} {
		got := tc.w.At(at(tc.t))
		if !got.Start.Equal(at(tc.start)) || !got.End.Equal(at(tc.end)) || got.Start.Location() != time.UTC {
			t.Errorf("%+v at %s = [%s, %s), want [%s, %s) in UTC", tc.w, tc.t, got.Start, got.End, tc.start, tc.end)
		}
	}
}

// A run that succeeds marks its window: the next holder in that window is
// told ErrDone and the lock is released at once, min-hold or not. A failure
// marks nothing, so the next holder runs again.
func TestOncePerRunsOnceAWindowAndRetriesAFailure(t *testing.T) {
	t.Parallel()
	rdb := startRedis(t)
	ctx := context.Background()
	c := withlock.New(rdb, nil)
	w := withlock.Window{Every: time.Hour}
	// Place now in the middle of a window, so that no boundary passes.
	now := time.Now()
	w.Offset = (now.Sub(w.At(now).Start) - 30*time.Minute).Truncate(time.Second)
	opts := &withlock.LockOptions{MinHold: time.Minute}

	// attempt runs once: a job that ends with code, recorded with the
	// window OncePer returned when record is true.
	attempt := func(code int, record bool) (withlock.Span, error) {
		t.Helper()
		l, err := c.TryAcquire(ctx, "nightly", 5*time.Second, opts)
		if err != nil {
			t.Fatalf("acquire: %v", err)
		}
		span, err := l.OncePer(ctx, w)
		if err != nil {
			return span, err
		}
		run := withlock.Run{ExitCode: code}
		if record {
			run.Window = &span
		}
		// Free the key at once for the next attempt: the min-hold is not
		// what this test is about.
		if err := l.ReleaseAndRecord(ctx, run, time.Hour); err != nil {
			t.Fatalf("release and record: %v", err)
		}
		rdb.Del(ctx, "lock:nightly")
		return span, nil
	}
	if _, err := attempt(3, true); err != nil {
		t.Fatalf("first attempt: %v", err)
	}
	if st, err := c.Status(ctx, "nightly"); err != nil || st.Done != nil {
		t.Fatalf("after a failure: done %+v, %v; want no window done", st.Done, err)
	}
	// A success recorded without its Run.Window marks nothing either.
	if _, err := attempt(0, false); err != nil {
		t.Fatalf("attempt after a failure: %v; want it to run", err)
	}
	if st, err := c.Status(ctx, "nightly"); err != nil || st.Done != nil {
		t.Fatalf("after a success without its window: done %+v, %v; want no window done", st.Done, err)
	}
	if _, err := attempt(0, true); err != nil {
		t.Fatalf("attempt after a success without its window: %v; want it to run", err)
	}
	window, err := attempt(0, true)
	if !errors.Is(err, withlock.ErrDone) || !window.Start.Equal(w.At(time.Now()).Start) {
		t.Fatalf("attempt after a success: %v in the window starting %s; want ErrDone in the window starting %s", err, window.Start, w.At(time.Now()).Start)
	}
	if n := rdb.Exists(ctx, "lock:nightly").Val(); n != 0 {
		t.Error("the lock of a run that did not run is kept (min-hold)")
	}
	st, err := c.Status(ctx, "nightly")
	if err != nil || st.Done == nil || !st.Done.Start.Equal(window.Start) || !st.Done.End.Equal(window.End) {
		t.Fatalf("status: done %+v, %v; want %+v", st.Done, err, window)
	}
	// The marker lives until the window's end plus a margin (1h for 1h windows).
	left := time.Until(window.End.Add(time.Hour))
	if ttl := rdb.PTTL(ctx, "{lock:nightly}:done").Val(); ttl <= left-time.Minute || ttl > left+time.Second {
		t.Errorf("marker TTL %s, want about %s", ttl, left)
	}
}

// A semaphore and a quorum refuse once-per windows: OncePer, and a record
// of a run with a Window, whose lock is released all the same.
func TestOncePerNeedsAPlainLockOnOneDeployment(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sem := semaphore(t, startRedis(t), 2)
	_, _, q := quorumNodes(t)
	for name, c := range map[string]*withlock.Client{"semaphore": sem, "quorum": q} {
		l, err := c.TryAcquire(ctx, "{once}", 5*time.Second, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := l.OncePer(ctx, withlock.Window{Every: time.Hour}); !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("%s: OncePer = %v, want ErrUnsupported", name, err)
		}
		span := withlock.Window{Every: time.Hour}.At(time.Now())
		err = l.ReleaseAndRecord(ctx, withlock.Run{Window: &span}, time.Minute)
		if !errors.Is(err, withlock.ErrNotRecorded) || !errors.Is(err, errors.ErrUnsupported) || errors.Is(err, withlock.ErrNotReleased) {
			t.Errorf("%s: ReleaseAndRecord of a run with a Window = %v, want ErrNotRecorded and ErrUnsupported alone", name, err)
		}
		if st, err := c.Status(ctx, "{once}"); err != nil || st.Held {
			t.Errorf("%s: Status after ReleaseAndRecord refused the record = %+v, %v; want the lock free", name, st, err)
		}
	}
}

// The window is taken from the Redis server's clock, which every host
// shares, not from the host's: here the host's clock is a synctest bubble's,
// stopped in the year 2000, and every window, the marker's expiry included,
// still follows the server's present. Hosts whose clocks straddle a
// window's edge therefore agree on the window.
func TestOncePerWindowIsTheServersClockNotTheHosts(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	before, err := srv.Client().Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	w := withlock.Window{Every: time.Hour}
	var first, second withlock.Span
	var secondErr error
	synctest.Test(t, func(t *testing.T) {
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		defer rdb.Close()
		c := withlock.New(rdb, nil)
		l := mustAcquire(t, c, "nightly", 5*time.Second)
		span, err := l.OncePer(ctx, w)
		if err != nil {
			t.Fatalf("first run: %v", err)
		}
		if err := l.ReleaseAndRecord(ctx, withlock.Run{ExitCode: 0, Window: &span}, time.Hour); err != nil {
			t.Fatalf("release and record: %v", err)
		}
		if first, _, err = c.WindowDone(ctx, "nightly", w); err != nil {
			t.Fatal(err)
		}
		l = mustAcquire(t, c, "nightly", 5*time.Second)
		second, secondErr = l.OncePer(ctx, w)
	})
	after, err := srv.Client().Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if s := first.Start; !s.Equal(w.At(before).Start) && !s.Equal(w.At(after).Start) {
		t.Fatalf("WindowDone's window starts %s, want %s (the server's hour, not the host's)", s, w.At(after).Start)
	}
	if !errors.Is(secondErr, withlock.ErrDone) || !second.Start.Equal(first.Start) {
		t.Errorf("second run in the window: %v (window %s); want ErrDone for the window starting %s", secondErr, second.Start, first.Start)
	}
	// The marker lives until the window's end plus an hour by the server's
	// clock; by the host's it would have expired 26 years ago, or be kept
	// for years.
	left := first.End.Add(time.Hour).Sub(after)
	if ttl := srv.Client().PTTL(ctx, "{lock:nightly}:done").Val(); ttl <= left-time.Minute || ttl > left+time.Second {
		t.Errorf("marker TTL %s, want about %s", ttl, left)
	}
}
