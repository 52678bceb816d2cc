package withlock_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

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
