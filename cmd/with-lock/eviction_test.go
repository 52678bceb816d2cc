package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// evictionWarning is the start of what every path says of a server that
// may evict the lock called name under maxmemory-policy policy.
func evictionWarning(name, policy string) string {
	return fmt.Sprintf("Redis may evict lock:%s under memory pressure (maxmemory-policy %s), and a second run could then start beside the first: set maxmemory-policy noeviction", name, policy)
}

// A Redis set up as a cache (maxmemory with volatile-lru) evicts a held
// lock under memory pressure, and a second run starts while the first
// still runs. Every run against it warns in one line on stderr (not with
// -q), --status and --status --json report it, and --check is WARNING.
func TestEvictingRedisIsWarnedOfOnEveryPath(t *testing.T) {
	t.Parallel()
	e := setup(t, "maxmemory", "4mb", "maxmemory-policy", "volatile-lru")
	warning := "with-lock: warning: " + evictionWarning("job", "volatile-lru") + "\n"

	first := e.startJob(0, "job")
	clitest.Eventually(t, 10*time.Second, "the first run's warning", func() bool { return first.Stderr() == warning })

	res := e.run("--status", "job")
	if res.Code != 0 || !strings.HasSuffix(res.Stdout, "\nwarning: "+evictionWarning("job", "volatile-lru")+"\n") {
		t.Errorf("--status: exit %d, stdout %q; want held, the warning as its last line", res.Code, res.Stdout)
	}
	res = e.run("--status", "--json", "job")
	var st struct {
		Held           bool
		EvictionPolicy string `json:"eviction_policy"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &st); err != nil || !st.Held || st.EvictionPolicy != "volatile-lru" {
		t.Errorf("--status --json: %q (%v); want held, eviction_policy volatile-lru", res.Stdout, err)
	}
	res = e.run("--check", "job", "--running-ok", "1h")
	checkLine(t, res, 1, `^WITH-LOCK WARNING - job running on .* for \d+m?s \(--running-ok 1h\); `+
		strings.NewReplacer("(", `\(`, ")", `\)`).Replace(evictionWarning("job", "volatile-lru"))+`$`)
	res = e.run("--check", "job", "--running-ok", "1h", "--json")
	var check struct {
		Status         string
		EvictionPolicy string `json:"eviction_policy"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &check); err != nil || check.Status != "WARNING" || check.EvictionPolicy != "volatile-lru" {
		t.Errorf("--check --json: %q (%v); want WARNING, eviction_policy volatile-lru", res.Stdout, err)
	}

	// Memory pressure: the cache's keys push the held lock out.
	e.srv.FillUntilEvicted("lock:job")
	cmd, ran := marker(t)
	res = e.run(append([]string{"job"}, cmd...)...)
	if res.Code != 0 || !ran() || res.Stderr != warning {
		t.Errorf("second run while the first runs: exit %d (ran %v), stderr %q; want it run, and the warning alone", res.Code, ran(), res.Stderr)
	}
	matchesDoc(t, res, logsRow("a Redis that may evict the lock"), "lock:x", "lock:job") // log_test.go
	if first.Exited() {
		t.Error("the first run ended: the second did not run beside it")
	}
	res = e.run(append([]string{"-q", "job"}, cmd...)...)
	if res.Code != 0 || res.Stderr != "" {
		t.Errorf("-q: exit %d, stderr %q; want 0 and nothing", res.Code, res.Stderr)
	}
	first.Signal(syscall.SIGTERM)
	first.Wait(clitest.RunTimeout)
}

// A server that cannot evict a lock is not warned of: no maxmemory (the
// default), or maxmemory with noeviction.
func TestRedisThatCannotEvictIsNotWarnedOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		config []string
	}{
		{"the default", nil},
		{"maxmemory with noeviction", []string{"maxmemory", "100mb", "maxmemory-policy", "noeviction"}},
		{"no maxmemory", []string{"maxmemory-policy", "allkeys-lru"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := setup(t, tc.config...)
			if res := e.run("job", "true"); res.Code != 0 || res.Stderr != "" {
				t.Errorf("run: exit %d, stderr %q; want 0 and nothing", res.Code, res.Stderr)
			}
			if res := e.run("--status", "job"); res.Code != 1 || strings.Contains(res.Stdout, "warning") {
				t.Errorf("--status: exit %d, stdout %q; want free, no warning", res.Code, res.Stdout)
			}
		})
	}
}

// The documented least-privilege ACL lets with-lock read the eviction
// policy (+info); an ACL without +info hides it, and then nothing is said
// and nothing fails.
func TestEvictionWarningUnderTheLeastPrivilegeACL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t, "maxmemory", "100mb", "maxmemory-policy", "allkeys-lru")
	withoutInfo := strings.Replace(LeastPrivilegeACL, " +info", "", 1)
	if withoutInfo == LeastPrivilegeACL {
		t.Fatal("the least-privilege ACL has no +info")
	}
	for _, tc := range []struct {
		name, rules string
		warned      bool
	}{
		{"the documented ACL", LeastPrivilegeACL, true},
		{"without +info", withoutInfo, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			user := strings.ReplaceAll(tc.name, " ", "-")
			args := []any{"ACL", "SETUSER", user, "reset", "on", ">pw"}
			for _, r := range strings.Fields(tc.rules) {
				args = append(args, r)
			}
			if err := srv.Client().Do(ctx, args...).Err(); err != nil {
				t.Fatal(err)
			}
			env := []string{"WITH_LOCK_REDIS=redis://" + user + "@" + srv.Addr() + "/0", "WITH_LOCK_PASSWORD=pw"}
			want, wantLast := "", "usual duration: " // the last line without a warning
			if tc.warned {
				want = "with-lock: warning: " + evictionWarning("job", "allkeys-lru") + "\n"
				wantLast = "warning: " + evictionWarning("job", "allkeys-lru")
			}
			if res := clitest.Run(t, env, "job", "true"); res.Code != 0 || res.Stderr != want {
				t.Errorf("run: exit %d, stderr %q; want 0 and %q", res.Code, res.Stderr, want)
			}
			res := clitest.Run(t, env, "--status", "job")
			lines := strings.Split(strings.TrimSuffix(res.Stdout, "\n"), "\n")
			if res.Code != 1 || lines[0] != "lock:job is free" || !strings.HasPrefix(lines[len(lines)-1], wantLast) || res.Stderr != "" {
				t.Errorf("--status: exit %d, stdout %q, stderr %q; want 1, free, last line %q", res.Code, res.Stdout, res.Stderr, wantLast)
			}
		})
	}
}
