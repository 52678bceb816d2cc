package withlock_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

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
