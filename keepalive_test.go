package withlock_test

// KeepAlive's renewals: within the TTL, each reported to OnRenew, and with
// Reacquire a vanished key taken back (and only that); further down, a lost
// lock seen and said.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
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

// A lost lock is seen and said: taken over, Redis down or paused past the
// deadline, a read-only replica, broken by Break (which names only the
// tokens it removed), and Do's context cancelled.

// waitLost waits up to timeout for ka to report a loss and returns when.
func waitLost(t *testing.T, ka *withlock.KeepAlive, timeout time.Duration) time.Time {
	t.Helper()
	select {
	case <-ka.Lost():
		return time.Now()
	case <-time.After(timeout):
		t.Fatalf("no loss reported within %s", timeout)
		return time.Time{}
	}
}

func TestKeepAliveDetectsTakeover(t *testing.T) {
	t.Parallel()
	const ttl = 600 * time.Millisecond
	const interval = ttl / 3
	tests := []struct {
		name     string
		fault    func(rdb *redis.Client, key string) error
		newOwner bool // the key then holds "other" and must stay untouched
	}{
		{"replaced", func(rdb *redis.Client, key string) error {
			return rdb.Set(context.Background(), key, "other", time.Minute).Err()
		}, true},
		{"deleted", func(rdb *redis.Client, key string) error {
			return rdb.Del(context.Background(), key).Err()
		}, false},
		{"pexpired", func(rdb *redis.Client, key string) error {
			return rdb.PExpire(context.Background(), key, time.Millisecond).Err()
		}, false},
	}
	locker, rdb := kaSetup(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			l := mustAcquire(t, locker, "ka-takeover-"+tt.name, ttl)
			ka := l.KeepAlive(ctx, nil)
			defer ka.Stop()
			time.Sleep(interval / 2) // mid-run, between two renewals
			faultAt := time.Now()
			if err := tt.fault(rdb, l.Key()); err != nil {
				t.Fatal(err)
			}
			lostAt := waitLost(t, ka, 3*time.Second)
			took := lostAt.Sub(faultAt)
			t.Logf("loss detected %s after the key was %s (renewal interval %s)", took.Round(time.Millisecond), tt.name, interval)
			if took > interval+500*time.Millisecond {
				t.Errorf("detection took %s, more than one renewal interval (%s) plus 500ms", took, interval)
			}
			err := ka.Err()
			if !errors.Is(err, withlock.ErrLockLost) || !errors.Is(err, withlock.ErrLockNotHeld) {
				t.Errorf("Err() = %v, want ErrLockLost wrapping ErrLockNotHeld", err)
			}
			if cause := context.Cause(ka.Context()); cause != err {
				t.Errorf("context cause = %v, want %v", cause, err)
			}
			ka.Stop()
			// Let a renewal interval pass: nothing may touch the key now.
			time.Sleep(2 * interval)
			val, err := rdb.Get(ctx, l.Key()).Result()
			switch {
			case tt.newOwner && (err != nil || val != "other"):
				t.Errorf("new owner's key = %q, %v; want it untouched", val, err)
			case tt.newOwner:
				if d := rdb.PTTL(ctx, l.Key()).Val(); d < 50*time.Second {
					t.Errorf("new owner's TTL = %s, want about a minute", d)
				}
			case !errors.Is(err, redis.Nil):
				t.Errorf("key recreated after loss: %q, %v", val, err)
			}
		})
	}
}

// A renewal stuck on a paused Redis must not delay the verdict: the loss
// comes at the local deadline, before the key could expire on the server.
func TestKeepAliveDeadlineWhileRedisPaused(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	const ttl = time.Second
	// The read timeout is far beyond the TTL: only the independent
	// deadline timer can report the loss in time.
	locker := kaClient(t, srv, 10*time.Second)
	ctx := context.Background()
	l := mustAcquire(t, locker, "ka-paused", ttl)
	ka := l.KeepAlive(ctx, nil)
	srv.Signal(syscall.SIGSTOP)
	defer srv.Signal(syscall.SIGCONT)
	lostAt := waitLost(t, ka, 5*time.Second)
	after := lostAt.Sub(l.Acquired())
	margin := withlock.DefaultMargin(ttl)
	t.Logf("loss reported %s after the acquiring SET was sent (TTL %s, margin %s)", after.Round(time.Millisecond), ttl, margin)
	if after >= ttl {
		t.Errorf("loss reported %s after acquisition, not before the TTL (%s) ran out", after, ttl)
	}
	// The deadline comes earlier on a loaded host, by at most the margin
	// again (keepalive_clocks.go); the loss is never before it.
	if early := ka.Deadline().Sub(lostAt); after < ttl-2*margin || early > 10*time.Millisecond {
		t.Errorf("loss reported %s after acquisition, %s before the local deadline (TTL-%s, less the slack of a loaded host)", after, early, margin)
	}
	var lerr *withlock.LostError
	if err := ka.Err(); !errors.As(err, &lerr) || errors.Is(err, withlock.ErrLockNotHeld) || lerr.Err == nil {
		t.Errorf("Err() = %v, want a presumed loss (ErrLockLost, not ErrLockNotHeld) naming the unanswered renewal", err)
	}
	srv.Signal(syscall.SIGCONT)
	ka.Stop() // the stuck renewal returns once Redis runs again
}

// Renewals that fail at once (Redis gone) are retried until the deadline,
// not given up on early; the loss then carries the last error.
func TestKeepAliveRedisDown(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	const ttl = time.Second
	locker := kaClient(t, srv, time.Second)
	ctx := context.Background()
	l := mustAcquire(t, locker, "ka-down", ttl)
	ka := l.KeepAlive(ctx, nil)
	defer ka.Stop()
	srv.Kill()
	lostAt := waitLost(t, ka, 5*time.Second)
	after := lostAt.Sub(l.Acquired())
	margin := withlock.DefaultMargin(ttl)
	t.Logf("Redis down: loss reported %s after acquisition (TTL %s, margin %s): %v", after.Round(time.Millisecond), ttl, margin, ka.Err())
	if early := ka.Deadline().Sub(lostAt); after < ttl-2*margin || early > 10*time.Millisecond || after >= ttl {
		t.Errorf("loss after %s, %s before the local deadline; want at the local deadline (TTL-%s, less the slack of a loaded host), before the TTL", after, early, margin)
	}
	var lerr *withlock.LostError
	if !errors.As(ka.Err(), &lerr) || lerr.Err == nil || errors.Is(lerr, withlock.ErrLockNotHeld) {
		t.Errorf("Err() = %#v, want a *LostError carrying the last connection error", ka.Err())
	}
}

func kaWaitGone(t *testing.T, rdb *redis.Client, key string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for rdb.Exists(context.Background(), key).Val() == 1 {
		if time.Now().After(deadline) {
			t.Fatalf("key %s still there after %s", key, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestReadOnlyIsLost demotes the master that holds a lock after its replica
// took over (a failover): the old master still has the key but answers
// READONLY, and the lock counts as lost.
func TestReadOnlyIsLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	master := redistest.Start(t, "repl-diskless-sync-delay", "0")
	replica := redistest.Start(t, "replicaof", fmt.Sprintf("127.0.0.1 %d", master.Port), "repl-diskless-sync-delay", "0")
	c := withlock.New(master.ClientWith(&redis.Options{MaxRetries: -1}), nil)

	var locks []*withlock.Lock
	for i := range 3 {
		l, err := c.TryAcquire(ctx, fmt.Sprint("ro-", i), time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		locks = append(locks, l)
	}
	mc, rc := master.Client(), replica.Client()
	clitest.Eventually(t, 20*time.Second, "replica has the keys", func() bool {
		n, _ := rc.Exists(ctx, locks[0].Key(), locks[1].Key(), locks[2].Key()).Result()
		return n == 3
	})
	// The failover: promote the replica, demote the master under it.
	if err := rc.ReplicaOf(ctx, "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	if err := mc.ReplicaOf(ctx, "127.0.0.1", fmt.Sprint(replica.Port)).Err(); err != nil {
		t.Fatal(err)
	}
	clitest.Eventually(t, 20*time.Second, "old master in sync as a replica", func() bool {
		info, _ := mc.Info(ctx, "replication").Result()
		return strings.Contains(info, "master_link_status:up")
	})
	if v, _ := mc.Get(ctx, locks[0].Key()).Result(); v != locks[0].Token() {
		t.Fatalf("old master lost the key (%q): the test would not reach READONLY", v)
	}

	for name, op := range map[string]func(*withlock.Lock) error{
		"Extend":  func(l *withlock.Lock) error { return l.Extend(ctx, time.Minute) },
		"Release": func(l *withlock.Lock) error { return l.Release(ctx) },
	} {
		l := locks[0]
		if name == "Release" {
			l = locks[1]
		}
		err := op(l)
		if !errors.Is(err, withlock.ErrLockNotHeld) || !strings.Contains(err.Error(), "READONLY") {
			t.Errorf("%s on a demoted master = %v, want ErrLockNotHeld saying READONLY", name, err)
		}
	}
}

// The holder of a lock that Client.Break removed learns who broke it
// (LostError.BrokenBy, from the marker Break leaves), a plain lock's or a
// semaphore slot's; with Reacquire it does not take a broken lock back,
// since breaking it was an operator's decision.
func TestKeepAliveLearnsWhoBrokeTheLock(t *testing.T) {
	t.Parallel()
	const ttl = 900 * time.Millisecond
	breaker := holder(t) // Break's Client is in this process
	tests := []struct {
		name      string
		slots     int
		reacquire bool
	}{
		{"plain", 1, false},
		{"plain with reacquire", 1, true},
		{"semaphore slot", 3, false},
	}
	srv := redistest.Start(t)
	rdb := srv.Client()
	admin := withlock.New(srv.Client(), nil)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			locker, err := withlock.NewSemaphore(srv.ClientWith(&redis.Options{MaxRetries: -1}), tt.slots, nil)
			if err != nil {
				t.Fatal(err)
			}
			name := "broken-{" + strconv.Itoa(i) + "}" // a hash tag: the marker is then under the prefix, which List scans
			l := mustAcquire(t, locker, name, ttl)
			ka := l.KeepAlive(ctx, &withlock.KeepAliveOptions{Reacquire: tt.reacquire})
			defer ka.Stop()
			if st, err := admin.Break(ctx, name); err != nil || !st.Held {
				t.Fatalf("Break = %+v, %v; want the lock it removed", st, err)
			}
			waitLost(t, ka, 5*time.Second)
			var lerr *withlock.LostError
			err = ka.Err()
			if !errors.As(err, &lerr) || !errors.Is(err, withlock.ErrLockNotHeld) || lerr.BrokenBy != breaker {
				t.Fatalf("Err() = %v (BrokenBy %q); want ErrLockNotHeld broken by %s", err, lerr.BrokenBy, breaker)
			}
			if !strings.Contains(err.Error(), "broken by "+breaker) {
				t.Errorf("Err() says %q, want it to name the breaker", err)
			}
			ka.Stop()
			if n := rdb.Exists(ctx, l.Key()).Val(); n != 0 {
				t.Error("the broken lock was taken back")
			}
			if list, err := admin.List(ctx, nil); err != nil || len(list) != 0 {
				t.Errorf("List after the break = %v, %v; want no lock (the marker is none)", list, err)
			}
		})
	}
}

// The marker speaks only of the tokens Break removed: a later holder whose
// key vanishes otherwise is not told its lock was broken, and with
// Reacquire takes it back.
func TestBreakMarkerNamesOnlyTheTokensItRemoved(t *testing.T) {
	t.Parallel()
	locker, rdb := kaSetup(t)
	ctx := context.Background()
	first := mustAcquire(t, locker, "broken-later", time.Minute)
	if _, err := locker.Break(ctx, "broken-later"); err != nil {
		t.Fatal(err)
	}
	l := mustAcquire(t, locker, "broken-later", 900*time.Millisecond)
	if l.Token() == first.Token() {
		t.Fatal("two acquisitions drew one token")
	}
	rl := make(renewLog, 16)
	ka := l.KeepAlive(ctx, rl.options())
	defer ka.Stop()
	if err := rdb.Del(ctx, l.Key()).Err(); err != nil {
		t.Fatal(err)
	}
	rl.waitFor(t, ka, errReacquired, 5*time.Second)
	if v := rdb.Get(ctx, l.Key()).Val(); v != l.Token() {
		t.Errorf("key holds %q after the reacquisition, want the later holder's token", v)
	}
}

func TestDoCancelsOnLoss(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		fnErr  func(ctx context.Context) error // fn's return once its ctx is done
		wantFn error                           // an error fn's result must match too
	}{
		{"fn returns the cause", context.Cause, nil},
		{"fn returns nil", func(context.Context) error { return nil }, nil},
		{"fn returns its own error", func(context.Context) error { return errFn }, errFn},
	}
	locker, rdb := kaSetup(t)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			name := "do-lost-" + string(rune('a'+i))
			var cancelled time.Duration
			err := locker.Do(ctx, name, 600*time.Millisecond, nil, func(ctx context.Context, l *withlock.Lock) error {
				if err := rdb.Set(ctx, l.Key(), "other", time.Minute).Err(); err != nil {
					return err
				}
				start := time.Now()
				select {
				case <-ctx.Done():
					cancelled = time.Since(start)
				case <-time.After(5 * time.Second):
					t.Error("fn's context not cancelled within 5s of a takeover")
				}
				return tt.fnErr(ctx)
			})
			t.Logf("fn's context cancelled %s after the takeover; Do = %v", cancelled.Round(time.Millisecond), err)
			if !errors.Is(err, withlock.ErrLockLost) || !errors.Is(err, withlock.ErrLockNotHeld) {
				t.Errorf("Do = %v, want ErrLockLost (not held)", err)
			}
			if tt.wantFn != nil && !errors.Is(err, tt.wantFn) {
				t.Errorf("Do = %v, want it to carry fn's error %v", err, tt.wantFn)
			}
			if v := rdb.Get(ctx, locker.Key(name)).Val(); v != "other" {
				t.Errorf("new owner's key = %q, want untouched", v)
			}
		})
	}
}
