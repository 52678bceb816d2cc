package main_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// quorumMasters starts three independent masters and returns them, an
// admin client on each, the with-lock flags that name them, and a function
// that reads a key on master i ("" when missing).
func quorumMasters(t *testing.T) ([]*redistest.Server, []*redis.Client, []string, func(i int, key string) string) {
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
		v, _ := admins[i].Get(context.Background(), key).Result()
		return v
	}
	return servers, admins, args, get
}

// TestQuorumCLI runs with-lock against three independent masters.
func TestQuorumCLI(t *testing.T) {
	t.Parallel()
	servers, _, args, get := quorumMasters(t)
	// onEvery checks that every master holds want ("" for none) at key.
	onEvery := func(t *testing.T, key, want string) {
		t.Helper()
		for i := range servers {
			if v := get(i, key); v != want {
				t.Errorf("node %d holds %q at %s, want %q", i+1, v, key, want)
			}
		}
	}

	t.Run("all up: the key is on all three during the run and gone after", func(t *testing.T) {
		j := startJob(t, nil, 3, append(args, "q-all")...)
		token := j.token
		onEvery(t, "lock:q-all", token)
		if r := j.finish(); r.Code != 3 || r.Stderr != "" {
			t.Fatalf("exit %d, stderr %q; want 3 and nothing", r.Code, r.Stderr)
		}
		onEvery(t, "lock:q-all", "")
	})

	t.Run("busy on a majority: 75, command not run", func(t *testing.T) {
		j := startJob(t, nil, 3, append(args, "q-busy")...)
		cmd, ran := marker(t)
		res := clitest.Run(t, nil, append(append(args, "q-busy"), cmd...)...)
		if res.Code != 75 || ran() {
			t.Fatalf("exit %d (ran %v), stderr %q; want 75 without running", res.Code, ran(), res.Stderr)
		}
		j.finish()
	})

	t.Run("a master restarted mid-run: the run completes and releases", func(t *testing.T) {
		j := startJob(t, nil, 3, append(args, "q-restart")...)
		token := j.token
		servers[0].Restart() // loses the key: no persistence
		if v := get(1, "lock:q-restart"); v != token {
			t.Fatalf("node 2 holds %q", v)
		}
		if r := j.finish(); r.Code != 3 || r.Stderr != "" {
			t.Fatalf("exit %d, stderr %q; want 3 and nothing", r.Code, r.Stderr)
		}
		if v := get(1, "lock:q-restart") + get(2, "lock:q-restart"); v != "" {
			t.Fatalf("keys left behind: %q", v)
		}
	})

	t.Run("masters restarted one after another: renewal keeps a majority past the TTL", func(t *testing.T) {
		const ttl = 1500 * time.Millisecond
		j := startJob(t, nil, 3, append(args, "--ttl", ttl.String(), "q-renew")...)
		token := j.token
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
		onEvery(t, "lock:q-renew", token)
		if r := j.finish(); r.Code != 3 || r.Stderr != "" {
			t.Fatalf("exit %d, stderr %q; want 3 and nothing (the lock was never lost)", r.Code, r.Stderr)
		}
		onEvery(t, "lock:q-renew", "")
	})

	t.Run("one master down: still runs", func(t *testing.T) {
		servers[2].Kill()
		defer servers[2].Restart()
		cmd, ran := marker(t)
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
		cmd, ran := marker(t)
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

// A master that still held another owner's short claim when with-lock took
// the lock on the other two gets the key as soon as that claim expires, so
// the run survives the loss of one of the first two half a second later,
// before the first regular renewal (TTL/3).
//
// Not parallel: the repair must come within a few hundred milliseconds of
// the claim's expiry, a bound in time kept clear of the parallel tests'
// load (it failed beside them on Valkey 8.0).
func TestQuorumCLIRepairsAMasterFreedAfterAcquire(t *testing.T) {
	ctx := context.Background()
	servers, admins, args, get := quorumMasters(t)
	clitest.Binary(t) // built before the short claim starts to run out
	const foreign = 300 * time.Millisecond
	if err := admins[2].Set(ctx, "lock:q2", "other:1:abc", foreign).Err(); err != nil {
		t.Fatal(err)
	}
	freeAt := time.Now().Add(foreign)
	marker := filepath.Join(t.TempDir(), "done")
	p := clitest.Start(t, nil, append(args, "--ttl", "2s", "q2", "sh", "-c", `sleep 3 && touch "$1"`, "sh", marker)...)
	var token string
	clitest.Eventually(t, 5*time.Second, "with-lock took the lock on master 1", func() bool {
		token = get(0, "lock:q2")
		return token != ""
	})
	if get(2, "lock:q2") != "other:1:abc" {
		t.Fatalf("the other owner's key on master 3 expired before with-lock took the lock (%s after start): too slow a start to test the repair",
			time.Since(p.Started).Round(time.Millisecond))
	}
	// The fault comes 500ms after the start, before the first renewal that
	// a 2s TTL schedules (about 667ms after the acquisition).
	killAt := p.Started.Add(500 * time.Millisecond)
	repaired := time.Duration(-1)
	for time.Now().Before(killAt) {
		if repaired < 0 && get(2, "lock:q2") == token {
			repaired = time.Since(freeAt)
		}
		time.Sleep(2 * time.Millisecond)
	}
	servers[1].Kill()
	if repaired < 0 {
		t.Errorf("master 3 lacked the key when master 2 was killed, %s after the other owner's key expired", time.Since(freeAt).Round(time.Millisecond))
	} else {
		t.Logf("master 3 got the key %s after the other owner's key expired; master 2 killed %s after with-lock started",
			repaired.Round(time.Millisecond), time.Since(p.Started).Round(time.Millisecond))
	}
	res := p.Wait(15 * time.Second)
	if _, err := os.Stat(marker); res.Code != 0 || err != nil {
		t.Fatalf("exit %d (command completed: %v), stderr %q; want 0 and the command completed", res.Code, err == nil, res.Stderr)
	}
	if v := get(0, "lock:q2") + get(2, "lock:q2"); v != "" {
		t.Fatalf("keys left behind: %q", v)
	}
}

// With two of three masters gone mid-run the lock is lost: masters that
// answer without our key (restarted empty) say so at the next renewal;
// dead ones leave it presumed lost at the local deadline (TTL minus margin
// after the last renewal), before any key could expire. Either way: exit
// 125 with the reason.
func TestQuorumCLIMajorityLostMidRun(t *testing.T) {
	t.Parallel()
	const ttl = time.Second
	const interval = ttl / 3
	tests := []struct {
		name   string
		fault  func(*testing.T, *redistest.Server)
		reason []string      // on the line that announces the loss
		within time.Duration // from the fault to with-lock's exit; -1: the local deadline plus 300ms
	}{
		// Emptied as by a restart without persistence, but both at once: a
		// restart takes long enough on a loaded machine that a renewal in
		// between would rightly repair the first master before the second
		// goes, and the lock would survive.
		{"emptied at once", flushAll, []string{"lost: the key vanished"}, interval + 300*time.Millisecond},
		{"killed", func(_ *testing.T, srv *redistest.Server) { srv.Kill() }, []string{"presumed lost", "no majority"}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			servers, _, args, _ := quorumMasters(t)
			margin, within := deadlineMargin(t, servers[0].Client(), ttl), tt.within
			if within < 0 {
				within = ttl - margin + 300*time.Millisecond
			}
			j := startJob(t, nil, 3, append(args, "--ttl", ttl.String(), "q-majority")...)
			tt.fault(t, servers[1])
			tt.fault(t, servers[2])
			faultAt := time.Now()
			r := j.Wait(clitest.RunTimeout)
			code, stderr := r.Code, r.Stderr
			took := time.Since(faultAt)
			t.Logf("two masters %s: with-lock exited %d after %s (TTL %s, renewal every %s, margin %s)",
				tt.name, code, took.Round(time.Millisecond), ttl, interval.Round(time.Millisecond), margin)
			if code != 125 || !hasLine(stderr, append(tt.reason, "lock:q-majority", "SIGTERM")...) {
				t.Fatalf("exit %d, stderr %q; want 125 and a line saying %q", code, stderr, tt.reason)
			}
			if took > within {
				t.Errorf("the loss took %s to act on, more than %s", took, within)
			}
		})
	}
}

// flushAll empties srv as a restart without persistence would, without the
// time a restart takes.
func flushAll(t *testing.T, srv *redistest.Server) {
	if err := srv.Client().FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
}
