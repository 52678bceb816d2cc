package main_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// TestQuorumCLI runs with-lock against three independent masters.
func TestQuorumCLI(t *testing.T) {
	ctx := context.Background()
	var servers []*redistest.Server
	var admins []*redis.Client
	args := []string{"--redis-timeout", "2s"}
	for range 3 {
		s := redistest.Start(t)
		servers = append(servers, s)
		admins = append(admins, s.Client())
		args = append(args, "--redis", s.URL())
	}
	get := func(i int, key string) string {
		v, _ := admins[i].Get(ctx, key).Result()
		return v
	}

	t.Run("all up: the key is on all three during the run and gone after", func(t *testing.T) {
		j := startProdJob(t, nil, append(args, "q-all")...)
		token := j.WaitStarted()
		for i := range servers {
			if v := get(i, "lock:q-all"); v != token {
				t.Errorf("node %d holds %q, want the command's token", i+1, v)
			}
		}
		if code, stderr := j.Finish(); code != 3 || stderr != "" {
			t.Fatalf("exit %d, stderr %q; want 3 and nothing", code, stderr)
		}
		for i := range servers {
			if v := get(i, "lock:q-all"); v != "" {
				t.Errorf("node %d still holds %q", i+1, v)
			}
		}
	})

	t.Run("busy on a majority: 75, command not run", func(t *testing.T) {
		j := startProdJob(t, nil, append(args, "q-busy")...)
		j.WaitStarted()
		cmd, ran := prodMarker(t)
		res := clitest.Run(t, nil, append(append(args, "q-busy"), cmd...)...)
		if res.Code != 75 || ran() {
			t.Fatalf("exit %d (ran %v), stderr %q; want 75 without running", res.Code, ran(), res.Stderr)
		}
		j.Finish()
	})

	t.Run("a master restarted mid-run: the run completes and releases", func(t *testing.T) {
		j := startProdJob(t, nil, append(args, "q-restart")...)
		token := j.WaitStarted()
		servers[0].Restart() // loses the key: no persistence
		if v := get(1, "lock:q-restart"); v != token {
			t.Fatalf("node 2 holds %q", v)
		}
		if code, stderr := j.Finish(); code != 3 || stderr != "" {
			t.Fatalf("exit %d, stderr %q; want 3 and nothing", code, stderr)
		}
		if v := get(1, "lock:q-restart") + get(2, "lock:q-restart"); v != "" {
			t.Fatalf("keys left behind: %q", v)
		}
	})

	t.Run("masters restarted one after another: renewal keeps a majority past the TTL", func(t *testing.T) {
		const ttl = 1500 * time.Millisecond
		j := startProdJob(t, nil, append(args, "--ttl", ttl.String(), "q-renew")...)
		token := j.WaitStarted()
		start := time.Now()
		for _, i := range []int{0, 1} {
			servers[i].Restart() // empty: no persistence
			// A renewal (every TTL/3) puts the key back while the other two
			// still hold the majority; only then is the next restart safe.
			clitest.Eventually(t, 2*ttl, "the restarted master got the key back", func() bool {
				return get(i, "lock:q-renew") == token
			})
		}
		clitest.Eventually(t, 3*ttl, "the run outlasted two TTLs", func() bool {
			return time.Since(start) > 2*ttl
		})
		for i := range servers {
			if v := get(i, "lock:q-renew"); v != token {
				t.Errorf("node %d holds %q after %s, want our token", i+1, v, time.Since(start))
			}
		}
		if code, stderr := j.Finish(); code != 3 || stderr != "" {
			t.Fatalf("exit %d, stderr %q; want 3 and nothing (the lock was never lost)", code, stderr)
		}
		for i := range servers {
			if v := get(i, "lock:q-renew"); v != "" {
				t.Errorf("node %d still holds %q", i+1, v)
			}
		}
	})

	t.Run("one master down: still runs", func(t *testing.T) {
		servers[2].Kill()
		defer servers[2].Restart()
		cmd, ran := prodMarker(t)
		res := clitest.Run(t, nil, append(append(args, "q-one-down"), cmd...)...)
		if res.Code != 0 || !ran() {
			t.Fatalf("exit %d (ran %v), stderr %q; want 0 and the command run", res.Code, ran(), res.Stderr)
		}
	})

	t.Run("two masters down: 69, command never runs, nothing left behind", func(t *testing.T) {
		servers[1].Kill()
		servers[2].Kill()
		defer servers[1].Restart()
		defer servers[2].Restart()
		cmd, ran := prodMarker(t)
		res := clitest.Run(t, nil, append(append(args, "q-two-down"), cmd...)...)
		if res.Code != 69 || ran() {
			t.Fatalf("exit %d (ran %v), stderr %q; want 69 without running", res.Code, ran(), res.Stderr)
		}
		if !strings.Contains(res.Stderr, "no majority") || strings.Count(res.Stderr, "\n") != 1 {
			t.Fatalf("stderr %q: want one line about the missing majority", res.Stderr)
		}
		if v := get(0, "lock:q-two-down"); v != "" {
			t.Fatalf("the surviving master kept %q", v)
		}
	})

	t.Run("an even number of masters is a usage error", func(t *testing.T) {
		res := clitest.Run(t, nil, "--redis", servers[0].URL(), "--redis", servers[0].URL(), "q-even", "true")
		if res.Code != 64 {
			t.Fatalf("exit %d, stderr %q; want 64", res.Code, res.Stderr)
		}
	})
}
