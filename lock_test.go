package withlock_test

// A held Lock: Extend, TTL and MinHold, the release script sent by digest,
// what the uncontended pair allocates, and Do, which holds a lock around a
// function; further down, fencing numbers.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

func TestExtend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("ours", func(t *testing.T) {
		locker, rdb, _ := setup(t)
		l := mustAcquire(t, locker, "job", time.Second)
		for _, ttl := range []time.Duration{20 * time.Second, 5 * time.Second} { // longer, then shorter
			if err := l.Extend(ctx, ttl); err != nil {
				t.Fatalf("Extend(%v): %v", ttl, err)
			}
			if pttl := rdb.PTTL(ctx, "lock:job").Val(); pttl <= ttl-5*time.Second || pttl > ttl {
				t.Errorf("PTTL after Extend(%v) = %v", ttl, pttl)
			}
		}
		if got := rdb.Get(ctx, "lock:job").Val(); got != l.Token() {
			t.Errorf("Extend changed the value to %q", got)
		}
	})
	t.Run("missing key is not recreated", func(t *testing.T) {
		locker, rdb, _ := setup(t)
		l := mustAcquire(t, locker, "job", time.Second)
		rdb.Del(ctx, "lock:job")
		if err := l.Extend(ctx, 10*time.Second); !errors.Is(err, withlock.ErrLockNotHeld) {
			t.Errorf("Extend of a deleted lock = %v, want ErrLockNotHeld", err)
		}
		if rdb.Exists(ctx, "lock:job").Val() != 0 {
			t.Error("Extend recreated the deleted key")
		}
	})
	t.Run("taken over", func(t *testing.T) {
		locker, rdb, _ := setup(t)
		l := mustAcquire(t, locker, "job", time.Second)
		rdb.Set(ctx, "lock:job", foreignToken, 3*time.Second)
		if err := l.Extend(ctx, time.Minute); !errors.Is(err, withlock.ErrLockNotHeld) {
			t.Errorf("Extend of a taken-over lock = %v, want ErrLockNotHeld", err)
		}
		if pttl := rdb.PTTL(ctx, "lock:job").Val(); pttl > 3*time.Second {
			t.Errorf("Extend prolonged the other owner's lock to %v", pttl)
		}
	})
	t.Run("below 1ms", func(t *testing.T) {
		locker, _, _ := setup(t)
		l := mustAcquire(t, locker, "job", time.Second)
		if err := l.Extend(ctx, 0); err == nil || errors.Is(err, withlock.ErrLockNotHeld) {
			t.Errorf("Extend(0) = %v, want an argument error", err)
		}
	})
}

func TestTTL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	locker, rdb, _ := setup(t)
	l := mustAcquire(t, locker, "job", 10*time.Second)
	if d, err := l.TTL(ctx); err != nil || d <= 5*time.Second || d > 10*time.Second {
		t.Errorf("TTL = %v, %v; want about 10s", d, err)
	}
	rdb.Set(ctx, "lock:job", foreignToken, time.Minute)
	if d, err := l.TTL(ctx); !errors.Is(err, withlock.ErrLockNotHeld) {
		t.Errorf("TTL of a taken-over lock = %v, %v; want ErrLockNotHeld", d, err)
	}
	rdb.Del(ctx, "lock:job")
	if d, err := l.TTL(ctx); !errors.Is(err, withlock.ErrLockNotHeld) {
		t.Errorf("TTL of a deleted lock = %v, %v; want ErrLockNotHeld", d, err)
	}
}

func TestMinHold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("early release keeps the key", func(t *testing.T) {
		locker, rdb, _ := setup(t)
		const minHold = 3 * time.Second
		l, err := locker.TryAcquire(ctx, "job", 30*time.Second, &withlock.LockOptions{MinHold: minHold})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		left := minHold - time.Since(l.Acquired())
		pttl := rdb.PTTL(ctx, "lock:job").Val()
		if pttl <= 0 || pttl > minHold || pttl < left-time.Second {
			t.Errorf("PTTL after an early Release = %v, want about the %v left of the min-hold", pttl, left)
		}
		if got := rdb.Get(ctx, "lock:job").Val(); got != l.Token() {
			t.Errorf("key after an early Release holds %q, want still our token", got)
		}
		if _, err := locker.TryAcquire(ctx, "job", time.Second, nil); !errors.Is(err, withlock.ErrNotObtained) {
			t.Errorf("TryAcquire during the min-hold = %v, want ErrNotObtained", err)
		}
		// The key still holds our token: a second release is still ours,
		// and the key goes when the min-hold is over.
		if err := l.Release(ctx); err != nil {
			t.Errorf("second Release during the min-hold: %v", err)
		}
		kaWaitGone(t, rdb, "lock:job", minHold+time.Second)
	})
	t.Run("late release deletes the key", func(t *testing.T) {
		locker, rdb, _ := setup(t)
		const minHold = 100 * time.Millisecond
		l, err := locker.TryAcquire(ctx, "job", 30*time.Second, &withlock.LockOptions{MinHold: minHold})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Until(l.Acquired().Add(minHold))) // the job's run time
		if err := l.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if rdb.Exists(ctx, "lock:job").Val() != 0 {
			t.Error("key still exists after a Release past the min-hold")
		}
	})
}

// A long-lived Client sends the release script whole once, then by its
// digest; when the server has forgotten it (SCRIPT FLUSH, a restart, a
// failover) the release still works, sending it whole again.
func TestReleaseSendsScriptDigestAfterFirstRelease(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	c := waitClient(t, srv)
	ctx := context.Background()
	release := func(what string) map[string]int {
		t.Helper()
		l := mustAcquire(t, c, "job", time.Minute)
		resetStats(t, rdb)
		if err := l.Release(ctx); err != nil {
			t.Fatalf("%s Release: %v", what, err)
		}
		calls := commandCallsExceptSetup(t, rdb)
		if n, err := rdb.Exists(ctx, l.Key()).Result(); err != nil || n != 0 {
			t.Fatalf("after the %s Release the key exists (%d, %v)", what, n, err)
		}
		return calls
	}

	if calls := release("first"); calls["eval"] != 1 || calls["evalsha"] != 0 {
		t.Errorf("first Release sent %v, want one eval and no evalsha", calls)
	}
	if calls := release("second"); calls["evalsha"] != 1 || calls["eval"] != 0 {
		t.Errorf("second Release sent %v, want one evalsha and no eval", calls)
	}
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatalf("SCRIPT FLUSH: %v", err)
	}
	if calls := release("after SCRIPT FLUSH"); calls["evalsha"] != 1 || calls["eval"] != 1 {
		t.Errorf("Release after SCRIPT FLUSH sent %v, want an evalsha answered NOSCRIPT, then one eval", calls)
	}
}

// A user whose ACL refuses EVALSHA still releases: after one refused
// EVALSHA the Client sends the script whole for good.
func TestReleaseWithoutEvalshaPermissionSendsScriptWhole(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	if err := rdb.Do(ctx, "ACL", "SETUSER", "noshas", "reset", "on", ">pw", "~*", "&*", "+@all", "-evalsha").Err(); err != nil {
		t.Fatalf("ACL SETUSER: %v", err)
	}
	c := withlock.New(srv.ClientWith(&redis.Options{Username: "noshas", Password: "pw"}), nil)
	// A refused EVALSHA is not counted in its calls: each release shows
	// one EVAL. INFO errorstats counts the refusal: the second release
	// tries EVALSHA once, and no release after it does.
	for i, wantRefused := range []int{0, 1, 0} {
		l := mustAcquire(t, c, "job", time.Minute)
		resetStats(t, rdb)
		if err := l.Release(ctx); err != nil {
			t.Fatalf("Release %d: %v", i+1, err)
		}
		calls := commandCallsExceptSetup(t, rdb)
		if calls["eval"] != 1 || calls["evalsha"] != 0 {
			t.Errorf("Release %d ran %v, want one eval", i+1, calls)
		}
		if refused := errorReplies(t, rdb)["NOPERM"]; refused != wantRefused {
			t.Errorf("Release %d had %d EVALSHAs refused NOPERM, want %d", i+1, refused, wantRefused)
		}
	}
}

// compareAndDelete is the release of a lock written by hand with go-redis.
var compareAndDelete = redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`)

// An uncontended TryAcquire and Release allocate no more than the same
// lock written by hand on go-redis: a random token, SET NX PX and a
// compare-and-delete script sent by its digest. What the lock adds on the
// hot path (the key, the Lock, the waiting mark, the release's arguments)
// is built within what those allocate anyway.
//
// Not parallel: AllocsPerRun counts the allocations of every goroutine.
func TestUncontendedPairAllocatesNoMoreThanGoRedisByHand(t *testing.T) {
	rdb := startRedis(t)
	c := withlock.New(rdb, nil)
	ctx := context.Background()
	var failed error
	pair := func() {
		l, err := c.TryAcquire(ctx, "alloc", time.Minute, nil)
		if err == nil {
			err = l.Release(ctx)
		}
		if err != nil {
			failed = err
		}
	}
	byHand := func() {
		var b [16]byte
		_, _ = rand.Read(b[:])
		token := hex.EncodeToString(b[:])
		ok, err := rdb.SetNX(ctx, "lock:by-hand", token, time.Minute).Result()
		if err == nil && ok {
			err = compareAndDelete.Run(ctx, rdb, []string{"lock:by-hand"}, token).Err()
		}
		if err != nil {
			failed = err
		}
	}
	pair() // the release script's digest is learnt at the first release
	byHand()
	ours, theirs := testing.AllocsPerRun(200, pair), testing.AllocsPerRun(200, byHand)
	if failed != nil {
		t.Fatal(failed)
	}
	t.Logf("allocations per pair: with-lock %.0f, by hand %.0f", ours, theirs)
	if ours > theirs {
		t.Errorf("an uncontended pair allocates %.0f times, more than the %.0f of the same lock by hand", ours, theirs)
	}
}

// Not parallel: it holds a bound in time, kept clear of the parallel
// tests' load.
func TestDoRunsUnderLockAndReleases(t *testing.T) {
	locker, rdb := kaSetup(t)
	ctx := context.Background()
	ran := false
	err := locker.Do(ctx, "do-ok", 600*time.Millisecond, nil, func(ctx context.Context, l *withlock.Lock) error {
		ran = true
		// Longer than the TTL: only renewal keeps the lock.
		for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if v := rdb.Get(ctx, l.Key()).Val(); v != l.Token() {
				t.Errorf("after %s the key holds %q, not our token", time.Since(l.Acquired()), v)
				return nil
			}
		}
		return ctx.Err()
	})
	if err != nil || !ran {
		t.Fatalf("Do = %v (fn ran: %v), want nil after running fn", err, ran)
	}
	if n := rdb.Exists(ctx, locker.Key("do-ok")).Val(); n != 0 {
		t.Error("lock not released after Do")
	}
}

func TestDoBusy(t *testing.T) {
	t.Parallel()
	locker, rdb := kaSetup(t)
	ctx := context.Background()
	if err := rdb.Set(ctx, locker.Key("do-busy"), "somehost:1:abc", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	called := false
	err := locker.Do(ctx, "do-busy", time.Second, nil, func(context.Context, *withlock.Lock) error {
		called = true
		return nil
	})
	if !errors.Is(err, withlock.ErrNotObtained) || called {
		t.Fatalf("Do on a busy lock = %v (fn called: %v), want ErrNotObtained without calling fn", err, called)
	}
}

var errFn = errors.New("fn failed")

// Min-hold keeps a quickly finished Do's lock until it passes, and fencing
// numbers grow across acquisitions.
func TestDoMinHoldAndFence(t *testing.T) {
	t.Parallel()
	locker, rdb := kaSetup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const minHold = 800 * time.Millisecond
	opts := &withlock.DoOptions{LockOptions: withlock.LockOptions{Fence: true, MinHold: minHold}, Wait: true}
	var fences []int64
	var acquired []time.Time
	for range 2 {
		err := locker.Do(ctx, "do-minhold", 2*time.Second, opts, func(_ context.Context, l *withlock.Lock) error {
			fences = append(fences, l.Fence())
			acquired = append(acquired, l.Acquired())
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if d := rdb.PTTL(ctx, locker.Key("do-minhold")).Val(); d <= 0 || d > minHold {
			t.Errorf("after Do the key's PTTL is %s, want it kept for the rest of the %s min-hold", d, minHold)
		}
	}
	gap := acquired[1].Sub(acquired[0])
	t.Logf("fences %v; second Do acquired %s after the first (min-hold %s)", fences, gap.Round(time.Millisecond), minHold)
	if fences[0] <= 0 || fences[1] <= fences[0] {
		t.Errorf("fences %v, want positive and strictly increasing", fences)
	}
	if gap < minHold-50*time.Millisecond {
		t.Errorf("second Do acquired %s after the first, inside the %s min-hold", gap, minHold)
	}
	if _, err := rdb.Get(ctx, withlock.FenceKey(locker, "do-minhold")).Result(); errors.Is(err, redis.Nil) {
		t.Error("no fence counter in Redis")
	}
}

// A panic in fn, recovered by the caller as net/http recovers a handler's,
// must not leave the lock held and renewed for as long as the process lives:
// Do stops the KeepAlive, releases, and lets the panic go on.
func TestDoReleasesWhenFnPanics(t *testing.T) {
	t.Parallel()
	locker, rdb := kaSetup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const ttl = 600 * time.Millisecond
	var renewals atomic.Int64
	opts := &withlock.DoOptions{KeepAlive: withlock.KeepAliveOptions{
		Interval: 50 * time.Millisecond,
		OnRenew:  func(time.Duration, error) { renewals.Add(1) },
	}}
	type boom struct{}
	var recovered any
	func() {
		defer func() { recovered = recover() }()
		_ = locker.Do(ctx, "do-panic", ttl, opts, func(ctx context.Context, _ *withlock.Lock) error {
			// Panic only once renewal runs, so that a KeepAlive left going
			// would show.
			for renewals.Load() == 0 {
				select {
				case <-ctx.Done():
					t.Error("fn's context done before the first renewal")
					return nil
				case <-time.After(10 * time.Millisecond):
				}
			}
			panic(boom{})
		})
	}()
	if _, ok := recovered.(boom); !ok {
		t.Fatalf("recovered %v from Do, want fn's panic to go on up the stack", recovered)
	}
	key := locker.Key("do-panic")
	if n := rdb.Exists(ctx, key).Val(); n != 0 {
		t.Fatalf("right after Do's panic the lock key still exists (PTTL %s): a recovered panic keeps the lock", rdb.PTTL(ctx, key).Val())
	}
	// The KeepAlive must be stopped: no renewal attempt over many of its
	// intervals (a running one would report each, failed or not).
	before := renewals.Load()
	time.Sleep(ttl)
	if n := renewals.Load() - before; n != 0 {
		t.Errorf("%d renewals attempted in the %s after Do's panic, want the KeepAlive stopped", n, ttl)
	}
	// The lock is free to take at once.
	l, err := locker.TryAcquire(ctx, "do-panic", ttl, nil)
	if err != nil {
		t.Fatalf("TryAcquire after Do's panic: %v, want the lock free", err)
	}
	_ = l.Release(ctx)
}

func TestFenceStrictlyIncreases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	locker, rdb, _ := setup(t)
	fenced := &withlock.LockOptions{Fence: true}
	var last int64
	for i := range 5 {
		l, err := locker.TryAcquire(ctx, "job", 10*time.Second, fenced)
		if err != nil {
			t.Fatalf("fenced TryAcquire %d: %v", i, err)
		}
		if l.Fence() <= last {
			t.Fatalf("fence %d after %d: not strictly increasing", l.Fence(), last)
		}
		last = l.Fence()
		if got := rdb.Get(ctx, "lock:job").Val(); got != l.Token() {
			t.Fatalf("fenced lock's key holds %q, want its token", got)
		}
		if pttl := rdb.PTTL(ctx, "lock:job").Val(); pttl <= 5*time.Second || pttl > 10*time.Second {
			t.Errorf("fenced lock's PTTL = %v, want about 10s", pttl)
		}
		// A busy fenced attempt fails like any other and draws no number.
		_, err = locker.TryAcquire(ctx, "job", 10*time.Second, fenced)
		if !errors.Is(err, withlock.ErrNotObtained) {
			t.Fatalf("fenced TryAcquire of a held lock = %v, want ErrNotObtained", err)
		}
		if i%2 == 0 {
			err = l.Release(ctx)
		} else { // an expired or deleted lock does not reset the counter
			err = rdb.Del(ctx, "lock:job").Err()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	counter, err := rdb.Get(ctx, withlock.FenceKey(locker, "job")).Int64()
	if err != nil || counter != last {
		t.Errorf("fence counter at %s = %d, %v; want the last fence %d", withlock.FenceKey(locker, "job"), counter, err, last)
	}
	// Without Fence the acquisition is a plain SET NX: no number, and the
	// counter is left alone.
	l := mustAcquire(t, locker, "job", 10*time.Second)
	if l.Fence() != 0 {
		t.Errorf("unfenced lock has fence %d", l.Fence())
	}
	if got, _ := rdb.Get(ctx, withlock.FenceKey(locker, "job")).Int64(); got != last {
		t.Errorf("unfenced acquisition moved the counter to %d", got)
	}
}

// TestFenceKeyInLockSlot asks a real cluster-mode Redis which slot each key
// hashes to: the fenced script writes both keys, which Redis Cluster allows
// only within one slot. Then it takes fenced locks on that node, where
// keys of two slots would fail with CROSSSLOT.
func TestFenceKeyInLockSlot(t *testing.T) {
	t.Parallel() // a new cluster node waits 2s before it serves keys
	ctx := context.Background()
	srv := redistest.Start(t, "cluster-enabled", "yes", "cluster-config-file", "nodes.conf")
	rdb := srv.Client()
	if err := rdb.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", "0", "16383").Err(); err != nil {
		t.Fatalf("CLUSTER ADDSLOTSRANGE: %v", err)
	}
	slot := func(key string) int64 {
		t.Helper()
		n, err := rdb.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT %q: %v", key, err)
		}
		return n
	}
	names := []string{
		"job", "nightly-report", "a{tag}b", "{tag}", "{}", "a{}b", "a{}b{c}",
		"a}b", "}", "{", "a{b", "}{x}", "ночной-отчёт",
	}
	prefixes := []string{"", "{jobs}:", "jobs}:"}
	for _, prefix := range prefixes {
		locker := withlock.New(rdb, &withlock.Options{Prefix: prefix})
		for _, name := range names {
			key, fence := locker.Key(name), withlock.FenceKey(locker, name)
			if key == fence {
				t.Errorf("FenceKey(%q) = Key = %q", name, key)
			}
			if ks, fs := slot(key), slot(fence); ks != fs {
				t.Errorf("prefix %q name %q: key %q in slot %d, fence key %q in slot %d", prefix, name, key, ks, fence, fs)
			}
		}
	}

	clusterOK(t, rdb)
	locker := withlock.New(rdb, nil)
	for _, name := range names {
		before := time.Now().UnixMicro()
		l, err := locker.TryAcquire(ctx, name, 10*time.Second, &withlock.LockOptions{Fence: true})
		if err != nil {
			t.Errorf("fenced TryAcquire(%q) on a cluster node: %v", name, err)
			continue
		}
		// A fresh counter starts at the server's clock, the same as ours.
		if after := time.Now().UnixMicro(); l.Fence() < before || l.Fence() > after {
			t.Errorf("first fence of %q = %d, want the time in µs, in [%d, %d]", name, l.Fence(), before, after)
		}
		if err := l.Release(ctx); err != nil {
			t.Errorf("Release(%q): %v", name, err)
		}
	}
}

// clusterOK waits until a one-node cluster that was just given all slots
// reports cluster_state:ok and serves keys.
func clusterOK(t *testing.T, rdb *redis.Client) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := rdb.ClusterInfo(ctx).Result()
		if err == nil && strings.Contains(info, "cluster_state:ok") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster not ok after 10s: %v %s", err, info)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fenceAheadOfClock stores in the fence counter of c's lock called name a
// number a day ahead of the server's TIME in µs, as a failover to a replica
// whose clock is behind, or a counter carried over, leaves it. It returns
// that number.
func fenceAheadOfClock(t *testing.T, rdb *redis.Client, c *withlock.Client, name string) int64 {
	t.Helper()
	ctx := context.Background()
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatalf("TIME: %v", err)
	}
	ahead := now.Add(24 * time.Hour).UnixMicro()
	if err := rdb.Set(ctx, withlock.FenceKey(c, name), strconv.FormatInt(ahead, 10), 0).Err(); err != nil {
		t.Fatal(err)
	}
	return ahead
}

// When the stored counter is ahead of the server's clock, every fenced
// acquisition still draws a number above all earlier ones: the counter plus
// one, never the counter itself or the clock. For a plain lock (TryAcquire
// and a waiting Acquire) and for the slots of a semaphore, held together
// and one after another.
func TestFenceStrictlyIncreasesWhenCounterIsAheadOfClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := startRedis(t)
	fenced := &withlock.LockOptions{Fence: true}

	// check asserts that l's fence is the one after last and is stored.
	check := func(t *testing.T, c *withlock.Client, l *withlock.Lock, last int64) int64 {
		t.Helper()
		if l.Fence() != last+1 {
			t.Fatalf("fence %d after %d (the counter, ahead of the clock): want %d, the counter plus one", l.Fence(), last, last+1)
		}
		if got, err := rdb.Get(ctx, withlock.FenceKey(c, withlock.LockName(l))).Int64(); err != nil || got != l.Fence() {
			t.Fatalf("counter after drawing %d: %d, %v; want the fence stored back", l.Fence(), got, err)
		}
		return l.Fence()
	}

	t.Run("PlainLock", func(t *testing.T) {
		c := withlock.New(rdb, nil)
		last := fenceAheadOfClock(t, rdb, c, "ahead")
		for i := range 3 {
			l, err := c.TryAcquire(ctx, "ahead", time.Minute, fenced)
			if err != nil {
				t.Fatalf("fenced TryAcquire %d: %v", i, err)
			}
			last = check(t, c, l, last)
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
		actx, cancel := context.WithTimeout(ctx, promptly)
		defer cancel()
		l, err := c.Acquire(actx, "ahead", time.Minute, fenced)
		if err != nil {
			t.Fatalf("fenced Acquire: %v", err)
		}
		check(t, c, l, last)
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("Semaphore", func(t *testing.T) {
		c := semaphore(t, rdb, 3)
		last := fenceAheadOfClock(t, rdb, c, "ahead-sem")
		for round := range 2 {
			var held []*withlock.Lock
			for range 3 {
				l, err := c.TryAcquire(ctx, "ahead-sem", time.Minute, fenced)
				if err != nil {
					t.Fatalf("round %d: fenced TryAcquire: %v", round, err)
				}
				last = check(t, c, l, last)
				held = append(held, l)
			}
			for _, l := range held {
				if err := l.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}

// drawFences takes and releases the fenced lock called name n times and
// returns the last fencing number, checking that they strictly increase.
func drawFences(t *testing.T, c *withlock.Client, name string, n int, after int64) int64 {
	t.Helper()
	ctx := context.Background()
	for range n {
		l, err := c.TryAcquire(ctx, name, 10*time.Second, &withlock.LockOptions{Fence: true})
		if err != nil {
			t.Fatalf("fenced TryAcquire: %v", err)
		}
		if l.Fence() <= after {
			t.Fatalf("fence %d after %d: not strictly increasing", l.Fence(), after)
		}
		after = l.Fence()
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return after
}

func TestFenceIncreasesAcrossEmptyRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	last := drawFences(t, withlock.New(srv.Client(), nil), "job", 3, 0)

	srv.Kill() // kill -9: nothing is saved on the way out
	srv.Restart()
	rdb := srv.Client()
	for _, kv := range [][2]string{{"save", ""}, {"appendonly", "no"}} {
		if got := rdb.ConfigGet(ctx, kv[0]).Val()[kv[0]]; got != kv[1] {
			t.Fatalf("restarted server has %s %q, want %q: it must not persist", kv[0], got, kv[1])
		}
	}
	if n := rdb.DBSize(ctx).Val(); n != 0 {
		t.Fatalf("restarted server holds %d keys, want none", n)
	}
	for _, f := range []string{"dump.rdb", "appendonlydir"} {
		if _, err := os.Stat(filepath.Join(srv.Dir, f)); err == nil {
			t.Fatalf("%s exists in the server's directory", f)
		}
	}

	next := drawFences(t, withlock.New(rdb, nil), "job", 1, 0)
	t.Logf("last fence before the restart %d, first after %d", last, next)
	if next <= last {
		t.Errorf("first fence after an empty restart %d, not above the last before it, %d", next, last)
	}
}

// A replica that missed the last draws is promoted: its counter is behind,
// and the next fence must still be above every one drawn on the old master.
// The replica misses them because CLIENT PAUSE WRITE holds back its master
// stream (but not the sentinels' INFO), and the old master dies before the
// pause ends.
func TestFenceIncreasesAcrossFailoverToLaggingReplica(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := redistest.StartSentinels(t)
	replica := g.Replica.Client()
	newClient := func() *withlock.Client {
		return withlock.New(g.Client(&redis.FailoverOptions{MaxRetries: -1}), nil)
	}
	c := newClient()
	fenceKey := withlock.FenceKey(c, "job")
	counter := func() int64 { n, _ := replica.Get(ctx, fenceKey).Int64(); return n }

	replicated := drawFences(t, c, "job", 1, 0)
	clitest.Eventually(t, 10*time.Second, "the replica never received the first fence", func() bool {
		return counter() == replicated
	})
	if err := replica.Do(ctx, "CLIENT", "PAUSE", "30000", "WRITE").Err(); err != nil {
		t.Fatalf("CLIENT PAUSE on the replica: %v", err)
	}
	t.Cleanup(func() { _ = replica.Do(context.Background(), "CLIENT", "UNPAUSE").Err() })
	last := drawFences(t, c, "job", 3, replicated)

	g.Master.Kill()
	clitest.Eventually(t, 10*time.Second, "the replica never saw its master go", func() bool {
		info, _ := replica.Info(ctx, "replication").Result()
		return strings.Contains(info, "master_link_status:down")
	})
	if err := replica.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatalf("CLIENT UNPAUSE on the replica: %v", err)
	}
	if got := counter(); got != replicated {
		t.Fatalf("the replica's counter is %d, want %d: it was to miss the last draws", got, replicated)
	}
	g.WaitMaster(g.Replica.Addr())

	next := drawFences(t, newClient(), "job", 1, 0)
	t.Logf("fences: %d replicated, %d last on the old master, %d first on the promoted replica", replicated, last, next)
	if next <= last {
		t.Errorf("first fence after the failover %d, not above the last on the old master, %d", next, last)
	}
}
