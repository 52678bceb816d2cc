package withlock_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/redistest"
)

// KeepAlive against a real Redis: what its renewals do to the key, and how
// a paused, killed or taken-over Redis is seen. Its exact schedule, and
// Stop, are tested on a fake clock in keepalive_synctest_test.go.

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

func TestKeepAliveRenewsWithoutExceedingTTL(t *testing.T) {
	locker, rdb := kaSetup(t)
	ctx := context.Background()
	const ttl = 300 * time.Millisecond
	l, err := locker.TryAcquire(ctx, "ka-renew", ttl, nil)
	if err != nil {
		t.Fatal(err)
	}
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

func TestKeepAliveDetectsTakeover(t *testing.T) {
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
			l, err := locker.TryAcquire(ctx, "ka-takeover-"+tt.name, ttl, nil)
			if err != nil {
				t.Fatal(err)
			}
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
			err = ka.Err()
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
	srv := redistest.Start(t)
	const ttl = time.Second
	// The read timeout is far beyond the TTL: only the independent
	// deadline timer can report the loss in time.
	locker := kaClient(t, srv, 10*time.Second)
	ctx := context.Background()
	l, err := locker.TryAcquire(ctx, "ka-paused", ttl, nil)
	if err != nil {
		t.Fatal(err)
	}
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
	if after < ttl-margin-10*time.Millisecond {
		t.Errorf("loss reported %s after acquisition, before the local deadline %s", after, ttl-margin)
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
	srv := redistest.Start(t)
	const ttl = time.Second
	locker := kaClient(t, srv, time.Second)
	ctx := context.Background()
	l, err := locker.TryAcquire(ctx, "ka-down", ttl, nil)
	if err != nil {
		t.Fatal(err)
	}
	ka := l.KeepAlive(ctx, nil)
	defer ka.Stop()
	srv.Kill()
	lostAt := waitLost(t, ka, 5*time.Second)
	after := lostAt.Sub(l.Acquired())
	margin := withlock.DefaultMargin(ttl)
	t.Logf("Redis down: loss reported %s after acquisition (TTL %s, margin %s): %v", after.Round(time.Millisecond), ttl, margin, ka.Err())
	if after < ttl-margin-10*time.Millisecond || after >= ttl {
		t.Errorf("loss after %s, want at the local deadline %s, before the TTL", after, ttl-margin)
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

// OnRenew reports every renewal with its round trip: quick ones, one held
// up by a paused Redis, and the one that finds the lock taken over, which
// it reports before Lost is closed.
func TestKeepAliveOnRenewReportsEachRenewal(t *testing.T) {
	locker, rdb := kaSetup(t)
	ctx := context.Background()
	const ttl = 600 * time.Millisecond // a renewal every 200ms
	l, err := locker.TryAcquire(ctx, "ka-onrenew", ttl, nil)
	if err != nil {
		t.Fatal(err)
	}
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
	if r := next(); r.err != nil || r.took > 150*time.Millisecond {
		t.Fatalf("first renewal: took %s, err %v; want a quick success", r.took, r.err)
	}
	// Held up: the next renewal is due in about 200ms and waits for the pause.
	if err := rdb.Do(ctx, "CLIENT", "PAUSE", 300, "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	if r := next(); r.err != nil || r.took < 50*time.Millisecond {
		t.Errorf("renewal during a 300ms CLIENT PAUSE: took %s, err %v; want a slow success", r.took, r.err)
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
