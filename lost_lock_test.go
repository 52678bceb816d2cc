package withlock_test

// A lost lock is seen and said: taken over, Redis down or paused past the
// deadline, a read-only replica, broken by Break (which names only the
// tokens it removed), and Do's context cancelled.

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
	// again (keepalive_lateness.go); the loss is never before it.
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
