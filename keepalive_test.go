package withlock_test

// KeepAlive's renewals: within the TTL, each reported to OnRenew, and with
// Reacquire a vanished key taken back (and only that).

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/redistest"
)

// stopUnlost fails the test if ka has reported a loss, and otherwise
// stops it and releases l, which must still be ours.
func stopUnlost(t *testing.T, ka *withlock.KeepAlive, l *withlock.Lock) {
	t.Helper()
	select {
	case <-ka.Lost():
		t.Fatalf("lost: %v", ka.Err())
	default:
	}
	ka.Stop()
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("release after Stop: %v", err)
	}
}

// Not parallel: it holds a bound in time, kept clear of the parallel
// tests' load.
func TestKeepAliveRenewsWithoutExceedingTTL(t *testing.T) {
	locker, rdb := kaSetup(t)
	ctx := context.Background()
	const ttl = 600 * time.Millisecond // 250ms to spare between a renewal and the local deadline
	l := mustAcquire(t, locker, "ka-renew", ttl)
	ka := l.KeepAlive(ctx, nil)
	defer ka.Stop()

	// Four TTLs: without renewal the key would be gone three times over.
	var samples int
	minTTL, maxTTL := time.Hour, time.Duration(0)
	for end := time.Now().Add(4 * ttl); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		var get *redis.StringCmd
		var pttl *redis.DurationCmd
		if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			get, pttl = p.Get(ctx, l.Key()), p.PTTL(ctx, l.Key())
			return nil
		}); err != nil {
			t.Fatalf("sample %d: key gone or unreadable after %s: %v", samples, time.Since(l.Acquired()), err)
		}
		if get.Val() != l.Token() {
			t.Fatalf("sample %d: key holds another value", samples)
		}
		d := pttl.Val()
		if d <= 0 || d > ttl {
			t.Fatalf("sample %d: PTTL %s outside (0, %s]", samples, d, ttl)
		}
		samples++
		minTTL, maxTTL = min(minTTL, d), max(maxTTL, d)
	}
	t.Logf("%d samples over %s with TTL %s: PTTL between %s and %s", samples, 4*ttl, ttl, minTTL, maxTTL)
	stopUnlost(t, ka, l)
}

// OnRenew reports every renewal with its round trip: quick ones, one held
// up by a paused Redis, and the one that finds the lock taken over, which
// it reports before Lost is closed.
//
// Not parallel: it holds a bound in time, kept clear of the parallel
// tests' load.
func TestKeepAliveOnRenewReportsEachRenewal(t *testing.T) {
	locker, rdb := kaSetup(t)
	ctx := context.Background()
	// A renewal every 800ms; the pause below outlasts that by 300ms, and
	// ends more than a second before the local deadline (the TTL less its
	// 340ms margin), so that a loaded machine neither sends the renewal
	// after the pause nor loses the lock during it.
	const ttl, pause = 2400 * time.Millisecond, 1100 * time.Millisecond
	l := mustAcquire(t, locker, "ka-onrenew", ttl)
	type report struct {
		took       time.Duration
		err        error
		lostBefore bool
	}
	reports := make(chan report, 100)
	var ka *withlock.KeepAlive
	ready := make(chan struct{})
	ka = l.KeepAlive(ctx, &withlock.KeepAliveOptions{OnRenew: func(took time.Duration, err error) {
		<-ready
		lost := false
		select {
		case <-ka.Lost():
			lost = true
		default:
		}
		reports <- report{took, err, lost}
	}})
	close(ready)
	defer ka.Stop()
	next := func() report {
		t.Helper()
		select {
		case r := <-reports:
			return r
		case <-time.After(5 * time.Second):
			t.Fatal("no renewal reported within 5s")
			return report{}
		}
	}
	if r := next(); r.err != nil || r.took > 300*time.Millisecond {
		t.Fatalf("first renewal: took %s, err %v; want a quick success", r.took, r.err)
	}
	// Held up: the next renewal is due within 800ms and waits for the pause.
	if err := rdb.Do(ctx, "CLIENT", "PAUSE", pause.Milliseconds(), "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	if r := next(); r.err != nil || r.took < 100*time.Millisecond {
		t.Errorf("renewal during a %s CLIENT PAUSE: took %s, err %v; want a slow success", pause, r.took, r.err)
	}
	if err := rdb.Set(ctx, l.Key(), "otherhost:1:x", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	for {
		r := next()
		if r.err == nil {
			continue // a renewal sent before the takeover
		}
		if !errors.Is(r.err, withlock.ErrLockNotHeld) || r.lostBefore {
			t.Errorf("after a takeover: err %v, Lost already closed %v; want ErrLockNotHeld reported before the loss", r.err, r.lostBefore)
		}
		break
	}
	waitLost(t, ka, 5*time.Second)
}

// renewLog collects what a KeepAlive's OnRenew and OnReacquire report:
// OnRenew's error, and errReacquired for each call of OnReacquire.
type renewLog chan error

// errReacquired stands for a call of OnReacquire in a renewLog.
var errReacquired = errors.New("OnReacquire was called")

func (rl renewLog) onRenew(_ time.Duration, err error) {
	select {
	case rl <- err:
	default: // never block the KeepAlive; the tests read as they go
	}
}

func (rl renewLog) onReacquire(time.Duration) { rl.onRenew(0, errReacquired) }

// options are KeepAliveOptions with Reacquire that report to rl.
func (rl renewLog) options() *withlock.KeepAliveOptions {
	return &withlock.KeepAliveOptions{Reacquire: true, OnRenew: rl.onRenew, OnReacquire: rl.onReacquire}
}

// waitFor waits up to timeout for OnRenew to report an error matching
// want (errReacquired: for OnReacquire to be called), failing on a loss
// first.
func (rl renewLog) waitFor(t *testing.T, ka *withlock.KeepAlive, want error, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case err := <-rl:
			if errors.Is(err, want) {
				return
			}
		case <-ka.Lost():
			t.Fatalf("lost before OnRenew reported %v: %v", want, ka.Err())
		case <-deadline:
			t.Fatalf("OnRenew did not report %v within %s", want, timeout)
		}
	}
}

// A key that vanishes under a running KeepAlive with Reacquire, by a
// FLUSHALL or a restart of Redis without persistence, is taken again under
// the same token: no loss, the key back with the lock's token and TTL, a
// fenced lock with a higher fencing number that Fence returns, and a
// Release that works.
func TestKeepAliveReacquireTakesVanishedKeyBack(t *testing.T) {
	t.Parallel()
	// Long enough for a restart of Redis to fit well inside the local
	// deadline on a loaded machine.
	const ttl = 2 * time.Second
	tests := []struct {
		name  string
		fence bool
		fault func(srv *redistest.Server, rdb *redis.Client) error
	}{
		{"flushall", false, func(_ *redistest.Server, rdb *redis.Client) error {
			return rdb.FlushAll(context.Background()).Err()
		}},
		{"flushall fenced", true, func(_ *redistest.Server, rdb *redis.Client) error {
			return rdb.FlushAll(context.Background()).Err()
		}},
		{"restart empty fenced", true, func(srv *redistest.Server, _ *redis.Client) error {
			srv.Restart() // SIGKILL, then a fresh empty server on the same port
			return nil
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.Start(t)
			ctx := context.Background()
			locker := kaClient(t, srv, time.Second)
			l, err := locker.TryAcquire(ctx, "reacquire-"+strconv.Itoa(i), ttl, &withlock.LockOptions{Fence: tt.fence})
			if err != nil {
				t.Fatal(err)
			}
			before := l.Fence()
			rl := make(renewLog, 16)
			ka := l.KeepAlive(ctx, rl.options())
			defer ka.Stop()
			if err := tt.fault(srv, srv.Client()); err != nil {
				t.Fatal(err)
			}
			rl.waitFor(t, ka, errReacquired, 5*time.Second)
			rdb := srv.Client()
			if v := rdb.Get(ctx, l.Key()).Val(); v != l.Token() {
				t.Fatalf("after the reacquisition the key holds %q, want the lock's own token", v)
			}
			if d := rdb.PTTL(ctx, l.Key()).Val(); d <= 0 || d > ttl {
				t.Errorf("reacquired key's PTTL %s, want within (0, %s]", d, ttl)
			}
			if tt.fence {
				counter, _ := rdb.Get(ctx, withlock.FenceKey(locker, withlock.LockName(l))).Int64()
				if l.Fence() <= before || counter != l.Fence() {
					t.Errorf("fence %d before, %d after, counter %d: want a higher number, stored as the counter", before, l.Fence(), counter)
				}
			} else if l.Fence() != 0 {
				t.Errorf("an unfenced lock got fence %d", l.Fence())
			}
			// Renewals go on: a TTL later the key is still ours.
			time.Sleep(ttl + ttl/4)
			stopUnlost(t, ka, l)
			if n := rdb.Exists(ctx, l.Key()).Val(); n != 0 {
				t.Error("the reacquired key outlived Release")
			}
		})
	}
}

// Reacquire takes back only a key nobody holds: one that another owner
// took after it vanished, or overwrote, is left alone, and the lock is
// lost as without Reacquire.
func TestKeepAliveReacquireLeavesAnotherOwnersKey(t *testing.T) {
	t.Parallel()
	const ttl = 900 * time.Millisecond
	locker, rdb := kaSetup(t)
	for i, tt := range redistest.Takeovers {
		t.Run(tt.Name, func(t *testing.T) {
			ctx := context.Background()
			l := mustAcquire(t, locker, "reacquire-other-"+strconv.Itoa(i), ttl)
			ka := l.KeepAlive(ctx, &withlock.KeepAliveOptions{Reacquire: true})
			defer ka.Stop()
			if err := tt.Do(ctx, rdb, l.Key(), "other"); err != nil {
				t.Fatal(err)
			}
			waitLost(t, ka, 5*time.Second)
			var lerr *withlock.LostError
			if err := ka.Err(); !errors.As(err, &lerr) || !errors.Is(err, withlock.ErrLockNotHeld) || lerr.BrokenBy != "" {
				t.Errorf("Err() = %v, want a loss with ErrLockNotHeld and no breaker", err)
			}
			ka.Stop()
			if v, d := rdb.Get(ctx, l.Key()).Val(), rdb.PTTL(ctx, l.Key()).Val(); v != "other" || d < 50*time.Second {
				t.Errorf("the other owner's key = %q with PTTL %s, want it untouched", v, d)
			}
		})
	}
}

// A semaphore's slot is never reacquired: its number may be another
// holder's by then. The vanished slot is a loss, as without Reacquire.
func TestKeepAliveReacquireDoesNotTakeBackASemaphoreSlot(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	sem, err := withlock.NewSemaphore(srv.ClientWith(&redis.Options{MaxRetries: -1}), 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := mustAcquire(t, sem, "reacquire-slots", 900*time.Millisecond)
	ka := l.KeepAlive(ctx, &withlock.KeepAliveOptions{Reacquire: true})
	defer ka.Stop()
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	waitLost(t, ka, 5*time.Second)
	if err := ka.Err(); !errors.Is(err, withlock.ErrLockNotHeld) {
		t.Errorf("Err() = %v, want a loss with ErrLockNotHeld", err)
	}
	ka.Stop()
	if keys := rdb.Keys(ctx, "*").Val(); len(keys) != 0 {
		t.Errorf("keys %q after the loss, want none: the slot was taken back", keys)
	}
}

// TestRecheckOnAPromotedMaster: a server given to KeepAliveOptions.Recheck
// is read at once. One that holds the lock's token keeps it held; one that
// does not answer changes nothing while it is asked again; one that lacks
// the key — a promoted replica that had not received it — loses the lock
// there and then, long before the next renewal, naming the server.
func TestRecheckOnAPromotedMaster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	locker, rdb, _ := setup(t)
	l := mustAcquire(t, locker, "recheck", time.Minute) // the first renewal is 20s away
	servers := make(chan redis.UniversalClient)
	ka := l.KeepAlive(ctx, &withlock.KeepAliveOptions{Recheck: servers})
	defer ka.Stop()

	down := "127.0.0.1:" + strconv.Itoa(redistest.FreePort(t))
	unreachable := redis.NewClient(&redis.Options{Addr: down, MaxRetries: -1})
	defer unreachable.Close()
	empty := redistest.Start(t)
	for _, tc := range []struct {
		name string
		rdb  redis.UniversalClient
		lost bool
	}{
		{"the lock's own server holds it", rdb, false},
		{"a server that does not answer", unreachable, false},
		{"a server without the key", empty.Client(), true},
	} {
		sent := time.Now()
		servers <- tc.rdb
		select {
		case <-ka.Lost():
			if !tc.lost {
				t.Fatalf("%s: lost (%v)", tc.name, ka.Err())
			}
		case <-time.After(time.Second):
			if tc.lost {
				t.Fatalf("%s: not lost a second later", tc.name)
			}
		}
		if tc.lost {
			var lerr *withlock.LostError
			if !errors.Is(ka.Err(), withlock.ErrLockNotHeld) || !errors.As(ka.Err(), &lerr) || lerr.Promoted != empty.Addr() {
				t.Fatalf("%s: Err %v; want ErrLockNotHeld naming %s", tc.name, ka.Err(), empty.Addr())
			}
			if context.Cause(ka.Context()) != ka.Err() {
				t.Fatalf("%s: the context was not cancelled with the loss", tc.name)
			}
			t.Logf("lost %s after the promoted master was given", time.Since(sent).Round(time.Millisecond))
		}
	}
}
