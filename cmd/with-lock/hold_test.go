package main_test

// How the lock is held: --no-renew, --min-hold, --fence, bad hold flags,
// and the guard standing down.

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// --no-renew never extends the key: it expires under a long command, which runs to its end; the release then finds the key not ours.
func TestNoRenewLetsKeyExpireUnderCommand(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	p := clitest.Start(t, redisEnv(srv), "--no-renew", "--ttl", "300ms", "norenew", "sleep", "1")
	clitest.Eventually(t, 10*time.Second, "lock taken", func() bool {
		return rdb.Exists(context.Background(), "lock:norenew").Val() == 1
	})
	clitest.Eventually(t, 5*time.Second, "key expired under the running command", func() bool {
		return rdb.Exists(context.Background(), "lock:norenew").Val() == 0
	})
	select {
	case <-p.Done():
		t.Fatal("command stopped although --no-renew was given")
	default:
	}
	res := p.Wait(10 * time.Second)
	if res.Code != 0 || !hasLine(res.Stderr, "no longer ours at release") {
		t.Errorf("exit %d, stderr %q; want 0 and the release warning", res.Code, res.Stderr)
	}
}

// --min-hold keeps a short job's lock until min-hold after acquisition; a
// second run meanwhile is refused.
func TestMinHoldKeepsShortJobsLockAfterRelease(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	res := clitest.Run(t, redisEnv(srv), "--min-hold", "1500ms", "minhold", "true")
	if res.Code != 0 || res.Stderr != "" {
		t.Fatalf("exit %d, stderr %q", res.Code, res.Stderr)
	}
	d := rdb.PTTL(context.Background(), "lock:minhold").Val()
	again := clitest.Run(t, redisEnv(srv), "minhold", "true")
	t.Logf("a %s job with --min-hold 1.5s left the key for %s more; a second run exited %d", res.Duration.Round(time.Millisecond), d, again.Code)
	if d <= 0 || d > 1500*time.Millisecond {
		t.Errorf("PTTL after the job = %s, want the rest of the 1.5s min-hold", d)
	}
	if again.Code != 75 {
		t.Errorf("second run during min-hold exited %d, want 75", again.Code)
	}
}

// --fence gives the command WITH_LOCK_FENCE, increasing per acquisition;
// without it there is none.
func TestFenceGivesCommandIncreasingNumberOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	var fences []int
	for range 3 {
		res := clitest.Run(t, redisEnv(srv), "--fence", "fenced", "sh", "-c", `echo "$WITH_LOCK_FENCE"`)
		f, err := strconv.Atoi(strings.TrimSpace(res.Stdout))
		if res.Code != 0 || err != nil {
			t.Fatalf("exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
		}
		fences = append(fences, f)
	}
	t.Logf("WITH_LOCK_FENCE over three runs: %v", fences)
	for i := range fences {
		if fences[i] <= 0 || i > 0 && fences[i] <= fences[i-1] {
			t.Errorf("fences %v, want positive and strictly increasing", fences)
		}
	}
	res := clitest.Run(t, redisEnv(srv), "unfenced", "sh", "-c", `echo "${WITH_LOCK_FENCE-unset}"`)
	if strings.TrimSpace(res.Stdout) != "unset" {
		t.Errorf("without --fence WITH_LOCK_FENCE = %q, want unset", res.Stdout)
	}
	if n := srv.Client().Exists(context.Background(), "{lock:unfenced}:fence").Val(); n != 0 {
		t.Error("an unfenced acquisition created a fence counter")
	}
}

// Bad supervision, status and min-hold flags are usage errors, 64, with a
// message.
func TestBadHoldAndStatusFlagsExit64(t *testing.T) {
	t.Parallel()
	tests := [][]string{
		{"--status", "x", "cmd"},
		{"--status"},
		{"--json", "x", "true"},
		{"--on-lost", "bogus", "x", "true"},
		{"--kill-after", "-1s", "x", "true"},
		{"--min-hold", "-1s", "x", "true"},
		{"--min-hold", "soon", "x", "true"},
		{"--leftovers", "keep", "x", "true"},
		{"--max-run", "-1s", "x", "true"},
	}
	for _, args := range tests {
		res := clitest.Run(t, []string{"WITH_LOCK_REDIS=redis://127.0.0.1:1/0"}, args...)
		if res.Code != 64 || res.Stderr == "" {
			t.Errorf("%q: exit %d, stderr %q; want 64 and a message", args, res.Code, res.Stderr)
		}
	}
}

// The guard only acts when with-lock dies: after a normal end of the job
// its background child runs to its own end, not killed, and with-lock
// exits with the command's code only then.
func TestGuardStandsDownAfterNormalExit(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	dir := t.TempDir()
	res := clitest.Run(t, redisEnv(srv), "guard", "sh", "-c", `(sleep 0.3; touch "$0/finished") >/dev/null 2>&1 & exit 3`, dir)
	if res.Code != 3 {
		t.Fatalf("exit %d, stderr %q; want the command's 3", res.Code, res.Stderr)
	}
	if !exists(filepath.Join(dir, "finished")) {
		t.Error("the command's background child was killed, or with-lock exited before it had finished")
	}
}
