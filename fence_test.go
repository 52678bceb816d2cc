package withlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/redistest"
)

func TestFenceStrictlyIncreases(t *testing.T) {
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
	l, err := locker.TryAcquire(ctx, "job", 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
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
