package withlock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/redistest"
)

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
