package main_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// ClusterACLExtra is what a Cluster client needs beyond
// LeastPrivilegeACL: it learns which node owns which slot.
const ClusterACLExtra = " +cluster|slots"

// TestCluster shares one three-master Redis Cluster among its subtests.
func TestCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3)
	args := []string{"--cluster", "--redis-timeout", "2s"}
	for _, n := range cl.Nodes {
		args = append(args, "--redis", n.URL())
	}
	rdb := cl.Client()
	c := withlock.New(rdb, nil)

	t.Run("locks on different masters, each key on its slot's owner", func(t *testing.T) {
		seen := map[*redistest.Server]bool{}
		for i := 0; len(seen) < 3 && i < 100; i++ {
			name := fmt.Sprint("c-", i)
			node := cl.NodeFor("lock:" + name)
			if seen[node] {
				continue
			}
			seen[node] = true
			j := startJob(t, nil, 3, append(args, name)...)
			if v := node.Client().Get(ctx, "lock:"+name).Val(); v != j.token {
				t.Fatalf("%s: its master %s holds %q, want the token", name, node.Addr(), v)
			}
			if r := j.finish(); r.Code != 3 || r.Stderr != "" {
				t.Fatalf("%s: exit %d, stderr %q", name, r.Code, r.Stderr)
			}
			if node.Client().Exists(ctx, "lock:"+name).Val() != 0 {
				t.Fatalf("%s was not released", name)
			}
		}
		if len(seen) != 3 {
			t.Fatalf("locks landed on %d masters, want 3", len(seen))
		}
	})

	t.Run("busy: 75 without running", func(t *testing.T) {
		l, err := c.TryAcquire(ctx, "c-busy", 10*time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Release(ctx)
		cmd, ran := marker(t)
		res := clitest.Run(t, nil, append(append(args, "c-busy"), cmd...)...)
		if res.Code != 75 || ran() || !strings.Contains(res.Stderr, holderOf(l.Token())) {
			t.Fatalf("exit %d (ran %v), stderr %q; want 75 naming the holder", res.Code, ran(), res.Stderr)
		}
	})

	t.Run("wait: -w runs the command once the holder releases", func(t *testing.T) {
		l, err := c.TryAcquire(ctx, "c-wait", 10*time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		cmd, ran := marker(t)
		p := clitest.Start(t, nil, append(append(args, "-w", "30s", "c-wait"), cmd...)...)
		deadline := time.Now().Add(300 * time.Millisecond)
		for time.Now().Before(deadline) {
			if p.Exited() {
				t.Fatalf("with-lock -w exited while the lock was held: %+v", p.Wait(0))
			}
			if ran() {
				t.Fatal("the command ran while the lock was held")
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if r := p.Wait(clitest.RunTimeout); r.Code != 0 || !ran() {
			t.Fatalf("with-lock -w: exit %d (ran %v), stderr %q", r.Code, ran(), r.Stderr)
		}
	})

	t.Run("library: fence in the lock's slot, renew and min-hold", func(t *testing.T) {
		var last int64
		for range 3 {
			l, err := c.TryAcquire(ctx, "c-fence", 10*time.Second, &withlock.LockOptions{Fence: true})
			if err != nil {
				t.Fatal(err)
			}
			if l.Fence() <= last {
				t.Fatalf("fence %d after %d", l.Fence(), last)
			}
			last = l.Fence()
			if err := l.Extend(ctx, 20*time.Second); err != nil {
				t.Fatal(err)
			}
			if ttl, err := l.TTL(ctx); err != nil || ttl <= 10*time.Second {
				t.Fatalf("TTL after Extend: %v, %v", ttl, err)
			}
			// The fence counter is in the lock's slot: both keys on its node.
			node := cl.NodeFor(l.Key())
			for _, n := range cl.Nodes {
				keys := n.Client().Keys(ctx, "*c-fence*").Val()
				if want := map[bool]int{true: 2}[n == node]; len(keys) != want {
					t.Fatalf("%s holds %q; want the lock and its fence counter together on %s", n.Addr(), keys, node.Addr())
				}
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
		l, err := c.TryAcquire(ctx, "c-minhold", 10*time.Second, &withlock.LockOptions{MinHold: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if ttl := rdb.PTTL(ctx, l.Key()).Val(); ttl <= 0 || ttl > 5*time.Second {
			t.Fatalf("min-hold: PTTL %v after release, want (0, 5s]", ttl)
		}
	})

	t.Run("--min-replicas on the key's master: none there, 69", func(t *testing.T) {
		cmd, ran := marker(t)
		res := clitest.Run(t, nil, append(append(args, "--min-replicas", "1", "c-replicas"), cmd...)...)
		if res.Code != 69 || ran() || !strings.Contains(res.Stderr, "0 of the 1 replicas") {
			t.Fatalf("exit %d (ran %v), stderr %q; want 69", res.Code, ran(), res.Stderr)
		}
	})

	t.Run("the least-privilege ACL, plus CLUSTER SLOTS", func(t *testing.T) {
		rules := []any{"ACL", "SETUSER", "locker", "reset", "on", ">pw"}
		for _, r := range strings.Fields(LeastPrivilegeACL + ClusterACLExtra) {
			rules = append(rules, r)
		}
		for _, n := range cl.Nodes {
			if err := n.Client().Do(ctx, rules...).Err(); err != nil {
				t.Fatal(err)
			}
		}
		// The user is really used: a wrong password is refused.
		if res := clitest.Run(t, []string{"WITH_LOCK_PASSWORD=wrong"}, "--cluster", "--redis", "redis://locker@"+cl.Nodes[0].Addr()+"/0", "c-acl", "true"); res.Code != 77 {
			t.Fatalf("wrong password: exit %d, stderr %q; want 77", res.Code, res.Stderr)
		}
		cmd, ran := marker(t)
		res := clitest.Run(t, []string{"WITH_LOCK_PASSWORD=pw"}, "--cluster", "--redis",
			"redis://locker@"+cl.Nodes[0].Addr()+"/0", "c-acl", "sh", "-c", strings.Join(cmd, " "))
		if res.Code != 0 || !ran() || res.Stderr != "" {
			t.Fatalf("exit %d (ran %v), stderr %q; want 0", res.Code, ran(), res.Stderr)
		}
	})

	t.Run("a cluster has only database 0", func(t *testing.T) {
		res := clitest.Run(t, nil, "--cluster", "--redis", strings.TrimSuffix(cl.Nodes[0].URL(), "/0")+"/1", "c-db", "true")
		if res.Code != 78 {
			t.Fatalf("exit %d, stderr %q; want 78", res.Code, res.Stderr)
		}
	})

	// A node named without --cluster is found by the handshake of the
	// first connection, before any command: each path says it is a
	// Cluster node and to add --cluster, exit 78, never a bare MOVED or a
	// transaction's EXECABORT (69), for a name whose key the node serves
	// as for one it does not. No command is run, no key is left.
	t.Run("a node without --cluster is said to be one on every path", func(t *testing.T) {
		var node *redistest.Server // serves neither lock:x nor the index --list reads
		for _, n := range cl.Nodes {
			if n != cl.NodeFor("lock:x") && n != cl.NodeFor("{lock:}:names") {
				node = n
			}
		}
		flags := []string{"--redis", node.URL(), "--redis-timeout", "2s"}
		want := node.Addr() + " is a Redis Cluster node (it answered HELLO with mode cluster): add --cluster"
		for _, path := range everyRedisPath {
			t.Run(path.name, func(t *testing.T) {
				r := clitest.Run(t, nil, append(flags, path.args...)...)
				saysConfigError(t, r, want, "EXECABORT", "MOVED") // words_test.go
				if path.name == "run" {
					matchesDoc(t, r, "a Cluster node without `--cluster`")
				}
			})
		}
		t.Run("--check", func(t *testing.T) { checkSays(t, nil, flags, want) })
		owns := func(n *redistest.Server) string {
			for i := 0; ; i++ {
				if cl.NodeFor(fmt.Sprint("lock:own-", i)) == n {
					return fmt.Sprint("own-", i)
				}
			}
		}
		for _, name := range []string{owns(node), owns(cl.NodeFor("lock:x"))} {
			served := "a name the node serves"
			if cl.NodeFor("lock:"+name) != node {
				served = "a name another node serves"
			}
			t.Run(served+": nothing run, nothing left", func(t *testing.T) {
				marker := filepath.Join(t.TempDir(), "ran")
				r := clitest.Run(t, nil, append(flags, name, "touch", marker)...)
				saysConfigError(t, r, want+"; command not run")
				if _, err := os.Stat(marker); err == nil {
					t.Errorf("the command ran")
				}
				for _, n := range cl.Nodes {
					if keys := n.Client().Keys(ctx, "*"+name+"*").Val(); len(keys) > 0 {
						t.Errorf("%s holds %q after the run", n.Addr(), keys)
					}
				}
			})
		}
	})
}
