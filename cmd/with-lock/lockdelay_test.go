package main_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/lapse"
)

// A run that takes a lock whose last lease expired holds it --lock-delay
// before its command starts, renewing it past its TTL; after a release it
// starts at once.
func TestLockDelayWaitsOnlyAfterAnExpiredLease(t *testing.T) {
	t.Parallel()
	const delay = 3 * time.Second
	for _, tc := range []struct {
		name    string
		expired bool
	}{
		{"released", false},
		{"expired", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := setup(t)
			ctx := context.Background()
			// The last holder: a lease that a crash lets expire, or one
			// released at the end of its run.
			opts := &withlock.LockOptions{}
			lapse.Detect(opts)
			last, err := withlock.New(e.rdb, nil).TryAcquire(ctx, "x", 300*time.Millisecond, opts)
			if err != nil {
				t.Fatal(err)
			}
			if tc.expired {
				clitest.Eventually(t, clitest.WaitTimeout, "the last lease expires", func() bool {
					return e.rdb.Exists(ctx, "lock:x").Val() == 0
				})
			} else if err := last.Release(ctx); err != nil {
				t.Fatal(err)
			}
			started := e.path("started")
			// A 1s TTL under a 3s delay: only renewal keeps the lock.
			r := e.run("--ttl", "1s", "--lock-delay", delay.String(), "x", "touch", started)
			if r.Code != 0 || !exists(started) {
				t.Fatalf("exit %d, command ran: %v; stderr:\n%s", r.Code, exists(started), r.Stderr)
			}
			said := strings.Contains(r.Stderr, "(--lock-delay) before the command starts")
			switch {
			case tc.expired && (r.Duration < delay || !said):
				t.Errorf("after an expired lease the run took %s, want at least --lock-delay %s, and said so; stderr:\n%s", r.Duration, delay, r.Stderr)
			case !tc.expired && (r.Duration >= delay || said):
				t.Errorf("after a released lease the run took %s and waited; stderr:\n%s", r.Duration, r.Stderr)
			}
			t.Logf("%s: the run took %s", tc.name, r.Duration)
		})
	}
}

// A run ended during --lock-delay's wait never runs its command: by a
// signal (128+N), the lock released, or by losing the lock (125).
func TestRunEndedDuringLockDelayDoesNotRunItsCommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		end  func(p *clitest.Proc, e *env)
		code int
		says string
	}{
		{"signal", func(p *clitest.Proc, _ *env) { p.Signal(syscall.SIGTERM) }, 128 + int(syscall.SIGTERM), "during --lock-delay on lock:x; command not run"},
		{"lost", func(_ *clitest.Proc, e *env) { e.rdb.Del(context.Background(), "lock:x") }, 125, "during --lock-delay; command not run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := setup(t)
			ctx := context.Background()
			opts := &withlock.LockOptions{}
			lapse.Detect(opts)
			if _, err := withlock.New(e.rdb, nil).TryAcquire(ctx, "x", 300*time.Millisecond, opts); err != nil {
				t.Fatal(err)
			}
			clitest.Eventually(t, clitest.WaitTimeout, "the last lease expires", func() bool {
				return e.rdb.Exists(ctx, "lock:x").Val() == 0
			})
			marker, ran := marker(t)
			p := clitest.Start(t, redisEnv(e.srv), append([]string{"--ttl", "1s", "--lock-delay", "1m", "x"}, marker...)...)
			p.WaitStderr("(--lock-delay) before the command starts")
			tc.end(p, e)
			r := p.Wait(clitest.WaitTimeout)
			if r.Code != tc.code || ran() || !strings.Contains(r.Stderr, tc.says) {
				t.Errorf("exit %d, command ran %v; stderr:\n%s", r.Code, ran(), r.Stderr)
			}
			if n := e.rdb.Exists(ctx, "lock:x").Val(); n != 0 {
				t.Error("the lock was left behind")
			}
		})
	}
}

// With --lock-delay the lock is still taken by one SET NX EX and given up
// by one EVAL: the lease mark is one more SET, of its own key, in the
// SET's round trip (TestLapsedTellsAnExpiredLeaseFromAReleasedOne counts
// the round trips).
func TestLockDelayKeepsTheOneSetAndOneEval(t *testing.T) {
	t.Parallel()
	e := setup(t)
	mon := e.srv.Monitor()
	if r := e.run("--lock-delay", "1s", "--no-record", "x", "true"); r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	var sent []string
	var sets [][]string
	for _, c := range mon.Commands() {
		if c.Client == "lua" {
			continue
		}
		sent = append(sent, c.Args[0])
		if c.Args[0] == "set" {
			sets = append(sets, c.Args)
		}
	}
	if !slices.Equal(sent, []string{"hello", "hset", "set", "set", "info", "eval"}) || len(sets) != 2 {
		t.Fatalf("sent %q, want hello, hset, set, set (the lease mark), info and eval", sent)
	}
	if want := []string{"set", "lock:x", sets[0][2], "ex", "30", "nx"}; !slices.Equal(sets[0], want) {
		t.Errorf("the lock's SET is %q, want %q", sets[0], want)
	}
	if want := []string{"set", "{lock:x}:lease", "1", "get"}; !slices.Equal(sets[1], want) {
		t.Errorf("the lease mark's SET is %q, want %q", sets[1], want)
	}
}

// --lock-delay is refused, exit 64, where no lease mark can tell an expiry
// from a release, and where the wait could not hold the lock.
func TestLockDelayRefusesWhatCannotKeepTheLeaseMark(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--slots", "2", "x"}, "--lock-delay and --slots do not go together"},
		{[]string{"--redis", e.srv.URL(), "--redis", e.srv.URL(), "--redis", e.srv.URL(), "x"}, "--lock-delay needs one Redis deployment"},
		{[]string{"--no-renew", "x"}, "it does not go with --no-renew"},
		{[]string{"a}b"}, "has '}' but no hash tag"},
		{[]string{"--lock-delay", "-1s", "x"}, "is negative"},
	} {
		marker, ran := marker(t)
		args := append(append([]string{"--lock-delay", "1s"}, tc.args...), marker...)
		r := e.run(args...)
		if r.Code != 64 || !strings.Contains(r.Stderr, tc.want) || ran() {
			t.Errorf("with-lock %q: exit %d, command ran %v, stderr %q; want 64 and %q", tc.args, r.Code, ran(), r.Stderr, tc.want)
		}
	}
}

// A holder whose with-lock is stopped (SIGSTOP) past its TTL leaves its job
// running while the next run takes the lock: without --lock-delay the two
// jobs overlap until the holder is resumed and stops its own. With a
// --lock-delay that covers the stop, the next run's command starts only
// after the resumed holder stopped its job: no overlap.
func TestLockDelayKeepsAStoppedHoldersJobFromOverlapping(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		delay   string // "": no --lock-delay
		overlap bool
	}{
		{"without lock-delay", "", true},
		{"with lock-delay", "4s", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := setup(t)
			env := redisEnv(e.srv)
			probe := e.path("probe") // exists while a job runs; a second mkdir fails
			var delay []string
			if tc.delay != "" {
				delay = []string{"--lock-delay", tc.delay}
			}
			// The holder's job runs until it is stopped; on SIGTERM it
			// leaves the probe.
			holder := clitest.Start(t, env, append(append([]string{"--ttl", "1s"}, delay...), "x", "sh", "-c",
				`mkdir "$0" || exit 99; trap 'rmdir "$0"; exit 143' TERM; while :; do sleep 0.05; done`, probe)...)
			holder.WaitFile(probe)
			holder.Signal(syscall.SIGSTOP)
			t.Cleanup(func() { _ = holder.Cmd.Process.Signal(syscall.SIGCONT) })
			stopped := time.Now()
			// The next run waits for the lock, which the holder's lease
			// gives up a TTL after its last renewal at most.
			next := clitest.Start(t, env, append(append([]string{"--ttl", "1s", "-w", "20s"}, delay...), "x", "sh", "-c",
				`mkdir "$0" || exit 99; rmdir "$0"`, probe)...)
			if tc.overlap {
				// Its command finds the stopped holder's job still running.
				r := next.Wait(clitest.WaitTimeout)
				t.Logf("the next run ended %s after the holder stopped: exit %d", time.Since(stopped).Round(time.Millisecond), r.Code)
				if r.Code != 99 {
					t.Errorf("the next run exited %d, want 99: its command did not overlap the stopped holder's job; stderr:\n%s", r.Code, r.Stderr)
				}
			} else {
				next.WaitStderr("(--lock-delay) before the command starts")
			}
			resumed := time.Now()
			holder.Signal(syscall.SIGCONT)
			h := holder.Wait(clitest.WaitTimeout)
			gone := probeGone(t, probe)
			t.Logf("stopped for %s; the holder's job was stopped %s after SIGCONT", resumed.Sub(stopped).Round(time.Millisecond), gone.Sub(resumed).Round(time.Millisecond))
			if h.Code != 125 {
				t.Errorf("the resumed holder exited %d, want 125 (lost); stderr:\n%s", h.Code, h.Stderr)
			}
			if tc.overlap {
				return
			}
			r := next.Wait(clitest.WaitTimeout)
			if r.Code != 0 {
				t.Errorf("the next run exited %d, want 0: its command overlapped the holder's job; stderr:\n%s", r.Code, r.Stderr)
			}
		})
	}
}

// probeGone waits until the probe directory is gone and returns when it
// was seen gone.
func probeGone(t *testing.T, probe string) time.Time {
	t.Helper()
	clitest.Eventually(t, clitest.WaitTimeout, "the holder's job leaves "+filepath.Base(probe), func() bool {
		_, err := os.Stat(probe)
		return os.IsNotExist(err)
	})
	return time.Now()
}
