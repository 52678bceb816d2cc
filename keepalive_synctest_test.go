package withlock

// KeepAlive from inside the package: its schedule and deadline under
// synctest's fake clock, the slack its timer's lateness adds, and what it
// says of the server's clock.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// KeepAlive's schedule on a fake clock: testing/synctest runs each test in a
// bubble whose time moves only when every goroutine in it waits, so the
// times asserted here are exact and the tests take no real time. The
// backend is a fake that only counts and answers renewals; what the
// renewals do to a real Redis is keepalive_test.go's, and the fake and
// its answers are export_test.go's.

// TestKeepAliveRenewsOnSchedule: renewals come every third of the TTL, or
// every Interval, capped so that two fit before the local deadline; early
// when the backend asks; and each is timed from when the last successful
// one was sent, not from its answer.
func TestKeepAliveRenewsOnSchedule(t *testing.T) {
	t.Parallel()
	const ttl = 3 * time.Second // default margin 400ms: the deadline is 2.6s after a success
	tests := []struct {
		name    string
		opts    *KeepAliveOptions
		renewBy time.Duration
		answer  func(context.Context, int) error
		want    []time.Duration // renewals sent within 4.45s
	}{
		{"a third of the TTL", nil, 0, nil, ms(1000, 2000, 3000, 4000)},
		{"the configured interval", &KeepAliveOptions{Interval: 1100 * time.Millisecond}, 0, nil, ms(1100, 2200, 3300, 4400)},
		{"an interval capped at half of TTL minus margin", &KeepAliveOptions{Interval: time.Minute}, 0, nil, ms(1300, 2600, 3900)},
		{"the cap follows a configured margin", &KeepAliveOptions{Interval: time.Minute, Margin: 1200 * time.Millisecond}, 0, nil, ms(900, 1800, 2700, 3600)},
		{"early when the backend asks", nil, 400 * time.Millisecond, nil, ms(400, 1400, 2400, 3400, 4400)},
		{"from when a slow renewal was sent", nil, 0, slow(300 * time.Millisecond), ms(1000, 2000, 3000, 4000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeRenewals{answer: tt.answer, renewBy: tt.renewBy}
				_, ka := keepAlive(t, f, ttl, tt.opts)
				time.Sleep(4450 * time.Millisecond)
				sent, _ := f.renewals()
				if !slices.Equal(sent, tt.want) {
					t.Errorf("renewals sent at %v, want %v", sent, tt.want)
				}
				for i, d := range f.ttls {
					if d != ttl {
						t.Errorf("renewal %d asked for TTL %s, want %s", i+1, d, ttl)
					}
				}
				if err := ka.Err(); err != nil {
					t.Errorf("Err() = %v, want nil: every renewal succeeded", err)
				}
			})
		})
	}
}

// TestKeepAliveDeclaresLossAtTheLocalDeadline: when no renewal succeeds the
// lock is presumed lost exactly at the local deadline — the last successful
// command's send time plus TTL minus margin, before the key can expire —
// whether renewals hang or fail at once (they are retried every quarter
// interval meanwhile); a renewal that finds the key not ours loses it at
// once. Nothing is renewed after a loss.
func TestKeepAliveDeclaresLossAtTheLocalDeadline(t *testing.T) {
	t.Parallel()
	const ttl = 3 * time.Second
	failFrom := func(n int, err error) func(context.Context, int) error {
		return func(_ context.Context, i int) error {
			if i >= n {
				return err
			}
			return nil
		}
	}
	tests := []struct {
		name    string
		opts    *KeepAliveOptions
		answer  func(context.Context, int) error
		lostAt  time.Duration
		errs    []error // what LostError.Err must match, each
		renewed []time.Duration
	}{
		{"a renewal that never answers", nil, stuck, 2600 * time.Millisecond, []error{errNoAnswer}, ms(1000)},
		{"renewals that fail at once", nil, failFrom(1, errDown), 2600 * time.Millisecond, []error{errDown},
			ms(1000, 1250, 1500, 1750, 2000, 2250, 2500)},
		{"a failure, then a renewal in flight at the deadline", nil, func(ctx context.Context, n int) error {
			if n == 1 {
				return errDown
			}
			return stuck(ctx, n)
		}, 2600 * time.Millisecond, []error{errDown, errNoAnswer}, ms(1000, 1250)},
		{"a configured margin", &KeepAliveOptions{Margin: time.Second}, stuck, 2 * time.Second, []error{errNoAnswer}, ms(1000)},
		{"counted from the last success", nil, func(ctx context.Context, n int) error {
			if n == 1 {
				return nil
			}
			return stuck(ctx, n)
		}, 3600 * time.Millisecond, []error{errNoAnswer}, ms(1000, 2000)},
		{"the key is not ours", nil, failFrom(2, fmt.Errorf("extend lock:job: %w", ErrLockNotHeld)), 2 * time.Second, []error{ErrLockNotHeld}, ms(1000, 2000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeRenewals{answer: tt.answer}
				l, ka := keepAlive(t, f, ttl, tt.opts)
				select {
				case <-ka.Lost():
				case <-time.After(time.Minute):
					t.Fatal("no loss reported")
				}
				if at := time.Since(l.acquired); at != tt.lostAt {
					t.Errorf("loss reported %s after acquisition, want %s", at, tt.lostAt)
				}
				err := ka.Err()
				var lerr *LostError
				if !errors.As(err, &lerr) || !errors.Is(err, ErrLockLost) {
					t.Errorf("Err() = %v, want a *LostError matching ErrLockLost", err)
				}
				for _, want := range tt.errs {
					if lerr != nil && !errors.Is(lerr.Err, want) {
						t.Errorf("Err() = %v, want its Err to match %v", err, want)
					}
				}
				if cause := context.Cause(ka.Context()); cause != err {
					t.Errorf("context cause = %v, want %v", cause, err)
				}
				time.Sleep(time.Minute)
				if sent, _ := f.renewals(); !slices.Equal(sent, tt.renewed) {
					t.Errorf("renewals sent at %v, want %v and none after the loss", sent, tt.renewed)
				}
			})
		})
	}
}

// TestKeepAliveDeadlineFollowsEachSuccess: Deadline is Lock.Acquired plus
// TTL minus margin until a renewal succeeds, then that renewal's send time
// plus TTL minus margin — already when OnRenew hears of it — and a failed
// renewal leaves it where it was.
func TestKeepAliveDeadlineFollowsEachSuccess(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const ttl = 3 * time.Second // default margin 400ms
		f := &fakeRenewals{answer: func(_ context.Context, n int) error {
			if n >= 2 {
				return errDown
			}
			return nil
		}}
		var ka *KeepAlive
		var mu sync.Mutex
		var seen []time.Time
		l, err := newClient(f, nil).TryAcquire(t.Context(), "job", ttl, nil)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		ka = l.KeepAlive(context.Background(), &KeepAliveOptions{OnRenew: func(time.Duration, error) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, ka.Deadline())
		}})
		mu.Unlock()
		t.Cleanup(ka.Stop)
		at := func() time.Duration { return ka.Deadline().Sub(l.Acquired()) }
		if got := at(); got != 2600*time.Millisecond {
			t.Errorf("Deadline before any renewal is Acquired+%s, want +2.6s", got)
		}
		time.Sleep(1500 * time.Millisecond) // renewed at 1s
		if got := at(); got != 3600*time.Millisecond {
			t.Errorf("Deadline after the renewal sent at 1s is Acquired+%s, want +3.6s", got)
		}
		time.Sleep(time.Second) // the renewal at 2s failed
		if got := at(); got != 3600*time.Millisecond {
			t.Errorf("Deadline after a failed renewal is Acquired+%s, want still +3.6s", got)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(seen) < 2 || seen[0].Sub(l.Acquired()) != 3600*time.Millisecond || seen[1].Sub(l.Acquired()) != 3600*time.Millisecond {
			t.Errorf("OnRenew saw deadlines %v after acquisition %v, want +3.6s for the success and the failure", seen, l.Acquired())
		}
	})
}

// TestKeepAliveRetriesAfterAFailedRenewal: a failed renewal is retried a
// quarter interval after its answer, and once one succeeds the schedule
// runs from when that one was sent. OnRenew reports each with its time.
func TestKeepAliveRetriesAfterAFailedRenewal(t *testing.T) {
	t.Parallel()
	const ttl = 3 * time.Second
	tests := []struct {
		name string
		took time.Duration // how long each answer takes
		want []time.Duration
	}{
		{"failures answered at once", 0, ms(1000, 1250, 1500, 2500, 3500)},
		{"failures answered slowly", 100 * time.Millisecond, ms(1000, 1350, 1700, 2700, 3700)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeRenewals{answer: func(_ context.Context, n int) error {
					time.Sleep(tt.took)
					if n <= 2 {
						return errDown
					}
					return nil
				}}
				type report struct {
					took time.Duration
					err  error
				}
				var reports []report // OnRenew runs on the KeepAlive's goroutine, one at a time
				var mu sync.Mutex
				_, ka := keepAlive(t, f, ttl, &KeepAliveOptions{OnRenew: func(took time.Duration, err error) {
					mu.Lock()
					defer mu.Unlock()
					reports = append(reports, report{took, err})
				}})
				time.Sleep(3900 * time.Millisecond)
				if sent, _ := f.renewals(); !slices.Equal(sent, tt.want) {
					t.Errorf("renewals sent at %v, want %v", sent, tt.want)
				}
				if err := ka.Err(); err != nil {
					t.Errorf("Err() = %v, want nil: a renewal succeeded before the deadline", err)
				}
				mu.Lock()
				defer mu.Unlock()
				want := []report{{tt.took, errDown}, {tt.took, errDown}, {tt.took, nil}, {tt.took, nil}, {tt.took, nil}}
				if !slices.Equal(reports, want) {
					t.Errorf("OnRenew got %v, want %v", reports, want)
				}
			})
		})
	}
}

// TestKeepAliveStopEndsRenewalWithoutALoss: Stop, or the end of the
// KeepAlive's context, ends renewal without a loss; Stop returns only once
// a renewal in flight has been answered, so none can land after a
// following Release, and it may be called twice and after a loss.
func TestKeepAliveStopEndsRenewalWithoutALoss(t *testing.T) {
	t.Parallel()
	const ttl = 3 * time.Second
	t.Run("between renewals", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := &fakeRenewals{}
			l, ka := keepAlive(t, f, ttl, nil)
			time.Sleep(1500 * time.Millisecond)
			ka.Stop()
			ka.Stop()
			if at := time.Since(l.acquired); at != 1500*time.Millisecond {
				t.Errorf("Stop returned %s after acquisition, want at once (1.5s)", at)
			}
			stoppedWithoutLoss(t, f, ka, ms(1000))
		})
	})
	t.Run("while a renewal is in flight", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := &fakeRenewals{answer: slow(500 * time.Millisecond)}
			l, ka := keepAlive(t, f, ttl, nil)
			time.Sleep(1200 * time.Millisecond) // the renewal sent at 1s is answered at 1.5s
			ka.Stop()
			if at := time.Since(l.acquired); at != 1500*time.Millisecond {
				t.Errorf("Stop returned %s after acquisition, want when the renewal in flight was answered (1.5s)", at)
			}
			if _, inflight := f.renewals(); inflight != 0 {
				t.Errorf("Stop returned with %d renewals in flight", inflight)
			}
			stoppedWithoutLoss(t, f, ka, ms(1000))
		})
	})
	t.Run("when its context ends", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := &fakeRenewals{}
			l, err := newClient(f, nil).TryAcquire(t.Context(), "job", ttl, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			ka := l.KeepAlive(ctx, nil)
			time.Sleep(1500 * time.Millisecond)
			cancel()
			synctest.Wait()
			stoppedWithoutLoss(t, f, ka, ms(1000))
			ka.Stop()
		})
	})
	t.Run("after a loss", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := &fakeRenewals{answer: stuck}
			_, ka := keepAlive(t, f, ttl, nil)
			<-ka.Lost()
			ka.Stop()
			ka.Stop()
			if _, inflight := f.renewals(); inflight != 0 {
				t.Errorf("Stop returned with %d renewals in flight", inflight)
			}
			if !errors.Is(ka.Err(), ErrLockLost) {
				t.Errorf("Err() after a loss and Stop = %v, want the loss", ka.Err())
			}
		})
	})
}

// stoppedWithoutLoss checks that ka stopped without a loss, its Context
// done, and that over a minute more nothing was renewed beyond renewed.
func stoppedWithoutLoss(t *testing.T, f *fakeRenewals, ka *KeepAlive, renewed []time.Duration) {
	t.Helper()
	if err := ka.Err(); err != nil {
		t.Errorf("Err() = %v, want nil", err)
	}
	select {
	case <-ka.Lost():
		t.Error("Lost closed without a loss")
	default:
	}
	if err := ka.Context().Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("Context().Err() = %v, want Canceled", err)
	}
	time.Sleep(time.Minute)
	if sent, _ := f.renewals(); !slices.Equal(sent, renewed) {
		t.Errorf("renewals sent at %v, want %v and none after renewal stopped", sent, renewed)
	}
}

// TestSlackFollowsTheTimersLateness: the local deadline comes earlier by
// three times the worst recent lateness of the renewal timer, which fades
// by an eighth per renewal, capped at the margin again and at a quarter of
// what the margin leaves of the TTL, so renewals keep their room.
func TestSlackFollowsTheTimersLateness(t *testing.T) {
	t.Parallel()
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, tc := range []struct {
		name         string
		ttl, margin  time.Duration
		late         []time.Duration
		want         time.Duration
		wantDeadline time.Duration // from the last success
	}{
		{"an idle host", time.Second, ms(200), []time.Duration{0, 0}, 0, ms(800)},
		{"late by 20ms", time.Second, ms(200), []time.Duration{ms(20)}, ms(60), ms(740)},
		{"a spike fades by an eighth per renewal", time.Second, ms(200), []time.Duration{ms(40), 0, 0}, 3 * (ms(40) * 7 / 8 * 7 / 8), ms(800) - 3*(ms(40)*7/8*7/8)},
		{"capped at the margin again", 30 * time.Second, ms(3100), []time.Duration{5 * time.Second}, ms(3100), 30*time.Second - ms(6200)},
		{"capped at a quarter of what the margin leaves", time.Second, ms(600), []time.Duration{time.Second}, ms(100), ms(300)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := &KeepAlive{lock: &Lock{ttl: tc.ttl}, margin: tc.margin}
			for _, d := range tc.late {
				k.sched.observe(d)
			}
			base := time.Now()
			if got := k.slack(); got != tc.want {
				t.Errorf("slack %s, want %s", got, tc.want)
			}
			if got := k.deadlineFrom(base).Sub(base); got != tc.wantDeadline {
				t.Errorf("deadline %s after the last success, want %s", got, tc.wantDeadline)
			}
		})
	}
}

// KeepAlive tells of the server's clock only when it moved unlike this
// host's by more than a second (or a tenth of the TTL) beyond what the
// round trips leave unknown, and says which way.
func TestServerClockMovedTellsOnlyASteps(t *testing.T) {
	t.Parallel()
	base := time.Unix(1_796_000_000, 0)
	local := time.Now()
	for _, tc := range []struct {
		name   string
		ttl    time.Duration
		server time.Duration // how far the server's clock moved while this host's moved 10s
		spread time.Duration // each round trip's
		want   time.Duration // 0: not told
	}{
		{"in step", 30 * time.Second, 10 * time.Second, time.Millisecond, 0},
		{"a rate NTP slews at", 30 * time.Second, 10*time.Second + 5*time.Millisecond, time.Millisecond, 0},
		{"an hour ahead", 30 * time.Second, time.Hour + 10*time.Second, time.Millisecond, time.Hour},
		{"five seconds back", 30 * time.Second, 5 * time.Second, time.Millisecond, -5 * time.Second},
		{"half a second ahead on a 30s TTL", 30 * time.Second, 10*time.Second + 500*time.Millisecond, time.Millisecond, 0},
		{"half a second ahead on a 3s TTL", 3 * time.Second, 10*time.Second + 500*time.Millisecond, time.Millisecond, 500 * time.Millisecond},
		{"slow round trips hide it", 3 * time.Second, 10*time.Second + 500*time.Millisecond, 400 * time.Millisecond, 0},
	} {
		var told []time.Duration
		l := &Lock{ttl: tc.ttl}
		k := &KeepAlive{lock: l, onServerClock: func(d time.Duration) { told = append(told, d) }}
		for i, s := range []serverSample{
			{server: base, local: local, spread: tc.spread},
			{server: base.Add(tc.server), local: local.Add(10 * time.Second), spread: tc.spread},
		} {
			l.clock.last = s
			k.serverClockMoved()
			k.serverClockMoved() // the same reading again: nothing new
			if i == 0 && len(told) > 0 {
				t.Errorf("%s: told %v at the first reading", tc.name, told)
			}
		}
		switch {
		case tc.want == 0 && len(told) > 0:
			t.Errorf("%s: told %v, want nothing", tc.name, told)
		case tc.want != 0 && (len(told) != 1 || told[0] != tc.want):
			t.Errorf("%s: told %v, want [%s]", tc.name, told, tc.want)
		}
	}
}

// The extend script's reply carries TIME beside the answer, which note
// keeps and takes off.
func TestNoteTakesTheServersTimeOffTheReply(t *testing.T) {
	t.Parallel()
	var c serverClock
	sent := time.Now()
	if v := c.note([]any{int64(1), "1796000000", "250000"}, sent, sent.Add(4*time.Millisecond)); v != int64(1) {
		t.Errorf("reply %v, want 1", v)
	}
	s := c.sample()
	if !s.server.Equal(time.Unix(1_796_000_000, 250_000_000)) || !s.local.Equal(sent.Add(2*time.Millisecond)) || s.spread != 4*time.Millisecond {
		t.Errorf("sample %+v", s)
	}
	if v := c.note(int64(0), sent, sent); v != int64(0) {
		t.Errorf("a reply without TIME came back as %v", v)
	}
}
