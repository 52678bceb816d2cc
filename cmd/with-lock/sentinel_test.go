package main_test

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// TestSentinel shares one master, replica and three sentinels; the
// failover runs last.
func TestSentinel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := redistest.StartSentinels(t)
	args := []string{"--sentinel-master", redistest.MasterName, "--redis-timeout", "2s"}
	for _, a := range g.Addrs() {
		args = append(args, "--sentinel", a)
	}
	master, replica := g.Master.Client(), g.Replica.Client()

	t.Run("--min-replicas with too few replicas: 69, not run, released", func(t *testing.T) {
		for _, deployment := range [][]string{args, {"--redis", g.Master.URL()}} {
			cmd, ran := marker(t)
			res := clitest.Run(t, nil, append(append(deployment, "--min-replicas", "2", "s-few"), cmd...)...)
			if res.Code != 69 || ran() || !strings.Contains(res.Stderr, "of the 2 replicas") {
				t.Fatalf("exit %d (ran %v), stderr %q; want 69", res.Code, ran(), res.Stderr)
			}
			if n := master.Exists(ctx, "lock:s-few").Val(); n != 0 {
				t.Fatal("the unacknowledged lock was left on the master")
			}
		}
	})

	t.Run("library: renew, min-hold and fence through Sentinel", func(t *testing.T) {
		c := withlock.New(g.Client(nil), nil)
		opts := &withlock.LockOptions{Fence: true, MinHold: 5 * time.Second, MinReplicas: 1}
		before := time.Now().UnixMicro()
		l, err := c.TryAcquire(ctx, "s-lib", 2*time.Second, opts)
		after := time.Now().UnixMicro()
		if err != nil {
			t.Fatal(err)
		}
		if v := replica.Get(ctx, "lock:s-lib").Val(); v != l.Token() {
			t.Fatalf("after WAIT the replica holds %q", v)
		}
		if err := l.Extend(ctx, 20*time.Second); err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if ttl := master.PTTL(ctx, "lock:s-lib").Val(); ttl <= 0 || ttl > 5*time.Second {
			t.Fatalf("min-hold: the released key has PTTL %v, want (0, 5s]", ttl)
		}
		// A first fence is the server's clock in µs, and the counter keeps it.
		if f := master.Get(ctx, fenceKey("s-lib")).Val(); f != strconv.FormatInt(l.Fence(), 10) || l.Fence() < before || l.Fence() > after {
			t.Fatalf("fence %d, counter %q; want the time in [%d, %d] in both", l.Fence(), f, before, after)
		}
	})

	t.Run("the least-privilege ACL is enough behind Sentinel", func(t *testing.T) {
		rules := []any{"ACL", "SETUSER", "locker", "reset", "on", ">pw"}
		for _, r := range strings.Fields(LeastPrivilegeACL) {
			rules = append(rules, r)
		}
		if err := master.Do(ctx, rules...).Err(); err != nil {
			t.Fatal(err)
		}
		// The user is really used: a wrong password is refused.
		if res := clitest.Run(t, []string{"WITH_LOCK_PASSWORD=wrong"}, append(append(args, "--redis", "redis://locker@/0"), "s-acl", "true")...); res.Code != 77 {
			t.Fatalf("wrong password: exit %d, stderr %q; want 77", res.Code, res.Stderr)
		}
		cmd, ran := marker(t)
		res := clitest.Run(t, []string{"WITH_LOCK_PASSWORD=pw"},
			append(append(args, "--redis", "redis://locker@/0", "s-acl"), cmd...)...)
		if res.Code != 0 || !ran() || res.Stderr != "" {
			t.Fatalf("exit %d (ran %v), stderr %q; want 0", res.Code, ran(), res.Stderr)
		}
	})

	t.Run("failover: with --min-replicas 1 the lock survives on the promoted replica", func(t *testing.T) {
		j := startJob(t, nil, 3, append(args, "--min-replicas", "1", "s-failover")...)
		token := j.token
		// --min-replicas: the replica had the key before the command started.
		if v := replica.Get(ctx, "lock:s-failover").Val(); v != token {
			t.Fatalf("the replica holds %q, want the command's token", v)
		}
		g.Master.Kill()
		g.WaitMaster(g.Replica.Addr())
		clitest.Eventually(t, 30*time.Second, "the promoted replica accepts writes", func() bool {
			info, _ := replica.Info(ctx, "replication").Result()
			return strings.Contains(info, "role:master")
		})
		if v := replica.Get(ctx, "lock:s-failover").Val(); v != token {
			t.Fatalf("after failover the new master holds %q, want the command's token", v)
		}
		// Someone else finds the lock busy on the new master.
		cmd, ran := marker(t)
		res := clitest.Run(t, nil, append(append(args, "s-failover"), cmd...)...)
		if res.Code != 75 || ran() {
			t.Fatalf("second run: exit %d (ran %v), stderr %q; want 75", res.Code, ran(), res.Stderr)
		}
		if r := j.finish(); r.Code != 3 || r.Stderr != "" {
			t.Fatalf("exit %d, stderr %q; want 3 and a quiet release", r.Code, r.Stderr)
		}
		if replica.Exists(ctx, "lock:s-failover").Val() != 0 {
			t.Fatal("the lock was not released on the new master")
		}
		// And the lock keeps working after the failover.
		cmd, ran = marker(t)
		res = clitest.Run(t, nil, append(append(args, "s-failover"), cmd...)...)
		if res.Code != 0 || !ran() || res.Stderr != "" {
			t.Fatalf("after failover: exit %d (ran %v), stderr %q; want 0", res.Code, ran(), res.Stderr)
		}
	})
}

// TestSentinelAuth asks a password-protected sentinel for the master.
func TestSentinelAuth(t *testing.T) {
	t.Parallel()
	master := redistest.Start(t)
	s := redistest.StartSentinel(t, master.Port, 1, "requirepass sentinel-pw")
	pwFile := filepath.Join(t.TempDir(), "sentinel-pw")
	writeFile(t, pwFile, []byte("sentinel-pw\n"), 0o600)
	args := []string{"--sentinel", s.Addr(), "--sentinel-master", redistest.MasterName, "--redis-timeout", "2s"}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		ok   bool
	}{
		{"WITH_LOCK_SENTINEL_PASSWORD", []string{"WITH_LOCK_SENTINEL_PASSWORD=sentinel-pw"}, nil, true},
		{"--sentinel-password-file", nil, []string{"--sentinel-password-file", pwFile}, true},
		{"no password", nil, nil, false},
		{"the master's password is not the sentinel's", []string{"WITH_LOCK_PASSWORD=sentinel-pw"}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, ran := marker(t)
			res := clitest.Run(t, tc.env, append(append(append(args, tc.args...), "s-auth"), cmd...)...)
			if (res.Code == 0) != tc.ok || ran() != tc.ok || strings.Contains(res.Stderr, "sentinel-pw") {
				t.Fatalf("exit %d (ran %v), stderr %q; want success %v", res.Code, ran(), res.Stderr, tc.ok)
			}
			if !tc.ok && res.Code != 77 {
				t.Fatalf("exit %d, stderr %q; want 77: the sentinel refused us", res.Code, res.Stderr)
			}
		})
	}
}

// A --sentinel-master name the sentinels do not know (a typo) is bad
// configuration, said as such on every path, exit 78: never "all
// sentinels ... are unreachable: redis: nil" though they answered, and
// never an answer made up from that failure, such as --break's "was not
// held" for a lock that is held.
func TestUnknownSentinelMasterIsSaidOnEveryPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	master := redistest.Start(t)
	s := redistest.StartSentinel(t, master.Port, 1, "")
	if err := master.Client().Set(ctx, "lock:x", foreign, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	flags := func(name string, sentinels ...string) []string {
		f := []string{"--redis-timeout", "2s"}
		for _, addr := range sentinels {
			f = append(f, "--sentinel", addr)
		}
		if name != "" {
			f = append(f, "--sentinel-master", name)
		}
		return f
	}
	// The sentinel answers for the name it monitors.
	if r := clitest.Run(t, nil, append(flags(redistest.MasterName, s.Addr()), "--status", "x")...); r.Code != 0 {
		t.Fatalf("--status with the right name: exit %d, stderr %q; want 0, held", r.Code, r.Stderr)
	}
	typo := flags("mymastr", s.Addr())
	want := `--sentinel-master "mymastr": the sentinels (` + s.Addr() + `) know no master of that name`
	const secret = "master-pw-123" // the master's, never shown
	env := []string{"WITH_LOCK_PASSWORD=" + secret}
	falseAnswers := []string{"unreachable", "redis: nil", "not held", "fence counter", "is Redis up", secret}
	for _, path := range everyRedisPath {
		t.Run(path.name, func(t *testing.T) {
			r := clitest.Run(t, env, append(typo, path.args...)...)
			saysConfigError(t, r, want, falseAnswers...) // words_test.go
			if path.name == "run" {
				matchesDoc(t, r, "a `--sentinel-master` name the sentinels do not know", "10.0.0.5:26379, 10.0.0.6:26379, 10.0.0.7:26379", s.Addr())
			}
		})
	}
	t.Run("--check", func(t *testing.T) { checkSays(t, env, typo, want) })
	t.Run("the name from WITH_LOCK_SENTINEL_MASTER", func(t *testing.T) {
		r := clitest.Run(t, []string{"WITH_LOCK_SENTINEL_MASTER=mymastr"}, append(flags("", s.Addr()), "x", "true")...)
		saysConfigError(t, r, `WITH_LOCK_SENTINEL_MASTER "mymastr": the sentinels (`+s.Addr()+`) know no master of that name`)
	})
	t.Run("one sentinel of two down", func(t *testing.T) {
		down := "127.0.0.1:" + strconv.Itoa(redistest.FreePort(t))
		r := clitest.Run(t, nil, append(flags("mymastr", s.Addr(), down), "x", "true")...)
		saysConfigError(t, r, "the sentinels ("+s.Addr()+", "+down+") that answered (1 of 2) know no master of that name")
	})
	if v, err := master.Client().Get(ctx, "lock:x").Result(); err != nil || v != foreign {
		t.Errorf("lock:x holds %q (%v) after every path; want the holder's value untouched", v, err)
	}
}
