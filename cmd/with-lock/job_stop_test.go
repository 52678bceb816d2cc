package main_test

// Stopping the job: the whole tree, --leftovers kill, --stop-timeout,
// --stop-signal, --max-run.

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/config"
	"github.com/with-lock/with-lock/internal/redistest"
)

// What stops the job stops all of it, whatever it does meanwhile.

// forkingJob keeps starting processes until it is killed: short-lived
// ones, and long-lived ones that run `sleep "$0"`, in the command's group
// and in sessions of their own. It ignores SIGTERM, as do its children,
// so that only the stop's SIGKILL ends it, while forks are in flight. It
// creates "$1" once it runs.
const forkingJob = `exec >/dev/null 2>&1; trap '' TERM; touch "$1"
while :; do setsid sleep "$0" & sleep "$0" & true & (true) & sleep 0.01; done`

// nestingJob runs forkingJob ("$5") under a with-lock of its own ("$2"
// --redis "$3" "$4"), whose cgroup is then nested in the job's, and keeps
// forking beside it; "$1" and "$1.inner" say each runs.
const nestingJob = `exec >/dev/null 2>&1; trap '' TERM
"$2" --redis "$3" "$4" sh -c "$5" "$0" "$1.inner" &
touch "$1"
while :; do setsid sleep "$0" & sleep "$0" & true & (true) & sleep 0.01; done`

// With cgroup tracking, a job that keeps forking is stopped whole — when
// the lock is lost, at --max-run, and when with-lock is killed — by the
// cgroup's kill, which takes every process of the group and of the groups
// nested in it at once, forks in flight included: a walk of the job's
// processes misses those forked behind it and those of a with-lock run
// inside the job (its own cgroup, nested). A signal passed on to the job
// (SIGHUP here, which it does not ignore) ends all of it too: the nested
// with-lock passes it on in turn. Nothing of the job is left once
// with-lock has exited (or, killed, once its guard has acted), and its
// cgroup is gone.
func TestForkingJobIsStoppedWholeWithItsCgroup(t *testing.T) {
	t.Parallel()
	if !cgroupWritable() {
		t.Skip("needs a cgroup with-lock can make: root and a read-write cgroup2 mount")
	}
	srv := redistest.Start(t)
	rdb := srv.Client()
	stops := []struct {
		name  string
		flags []string
		stop  func(p *clitest.Proc, key string)
		code  int // with-lock's exit; -1 when it is killed
	}{
		{"lost lock", nil, func(_ *clitest.Proc, key string) {
			if err := rdb.Set(context.Background(), key, foreign, time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
		}, 125},
		{"--max-run", []string{"--max-run", "1500ms"}, func(*clitest.Proc, string) {}, 124},
		{"with-lock killed", nil, func(p *clitest.Proc, _ string) { p.Signal(syscall.SIGKILL) }, -1},
		{"forwarded SIGHUP", nil, func(p *clitest.Proc, _ string) { p.Signal(syscall.SIGHUP) }, 128 + int(syscall.SIGHUP)},
	}
	for i, stop := range stops {
		t.Run(stop.name, func(t *testing.T) {
			sl := newSleepers(t)
			t.Cleanup(sl.kill)
			name := "forking-" + strconv.Itoa(i)
			ready := filepath.Join(t.TempDir(), "ready")
			args := append(append([]string{"--ttl", "900ms", "--kill-after", "200ms"}, stop.flags...), name, "sh", "-c", nestingJob,
				sl.arg, ready, clitest.Binary(t), srv.URL(), name+"-inner", forkingJob)
			p := clitest.Start(t, redisEnv(srv), args...)
			p.WaitFile(ready)
			p.WaitFile(ready + ".inner")
			dir := jobCgroupOf(p.Pid())
			time.Sleep(200 * time.Millisecond) // forks in full swing
			stop.stop(p, "lock:"+name)
			res := p.Wait(10 * time.Second)
			if stop.code < 0 {
				clitest.Eventually(t, 2*time.Second, "the job's cgroup removed by its guard", func() bool { return !exists(dir) })
			}
			left := sl.pids()
			t.Logf("exit %d after %s; %d of the job's processes left; cgroup %s there: %v", res.Code, res.Duration.Round(time.Millisecond), len(left), dir, exists(dir))
			if stop.code >= 0 && res.Code != stop.code {
				t.Errorf("exit %d, want %d; stderr %q", res.Code, stop.code, res.Stderr)
			}
			if len(left) > 0 {
				t.Errorf("processes %v of the job still run after it was stopped", left)
			}
			if dir == "" || exists(dir) {
				t.Errorf("the job's cgroup %q: want one, removed once the job was stopped", dir)
			}
		})
	}
}

// subreaperOnly are the ways with-lock ends up following a job by the
// subreaper alone: asked to (--no-cgroup), run by a user who may make no
// cgroup, and with the cgroup2 mount read-only (as in many containers),
// here in a mount namespace of its own.
func subreaperOnly() []struct {
	name   string
	prefix []string
	flags  []string
} {
	mount, _ := cgroup2Mount()
	return []struct {
		name   string
		prefix []string
		flags  []string
	}{
		{"--no-cgroup", nil, []string{"--no-cgroup"}},
		{"as nobody", asNobody, nil},
		{"read-only cgroup2 mount", []string{"unshare", "--mount", "sh", "-c", `mount -o remount,bind,ro "$0" && exec "$@"`, mount}, nil},
	}
}

// Where no cgroup can be made, the subreaper alone follows the job, and a
// background child that outlives the command still holds the lock until
// it ends: a second run is refused meanwhile, and with-lock exits with
// the command's code once the child has ended. With --leftovers kill the
// child is stopped when the command exits.
func TestSubreaperAloneHoldsTheLockForLeftoversAndLeftoversKillStopsThem(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	for i, mode := range subreaperOnly() {
		t.Run(mode.name+"/--leftovers wait", func(t *testing.T) {
			dir := sharedTempDir(t)
			name := "subreaper-wait-" + strconv.Itoa(i)
			args := append(append([]string{"-v"}, mode.flags...), name, "sh", "-c", backgroundJob, dir)
			p := clitest.Spec{Env: redisEnv(srv), Args: args, Prefix: mode.prefix}.Start(t)
			pid := clitest.ReadPids(t, 10*time.Second, filepath.Join(dir, "pid"), 1)[0]
			t.Cleanup(func() { signalPid(pid, syscall.SIGKILL) })
			p.WaitStderr("remaining process")
			if !hasLine(p.Stderr(), "its job followed by subreaper") {
				t.Errorf("stderr %q: want the job followed by the subreaper alone", p.Stderr())
			}
			if st := lookAt(rdb, "lock:"+name); st.err != nil || !tokenRE.MatchString(st.val) {
				t.Errorf("key %+v while the command's background child runs: want held by with-lock", st)
			}
			if second := clitest.Run(t, redisEnv(srv), name, "true"); second.Code != 75 {
				t.Errorf("a second run exited %d while the first one's background child ran; want 75 (busy)", second.Code)
			}
			if p.Exited() {
				t.Fatalf("with-lock exited while the command's background child ran: %q", p.Stderr())
			}
			touch(t, filepath.Join(dir, "go"))
			res := p.Wait(10 * time.Second)
			if res.Code != 3 || rdb.Exists(context.Background(), "lock:"+name).Val() != 0 {
				t.Errorf("exit %d, key there: %d; want the command's 3 and the lock released once the child ended",
					res.Code, rdb.Exists(context.Background(), "lock:"+name).Val())
			}
		})
		t.Run(mode.name+"/--leftovers kill", func(t *testing.T) {
			dir := sharedTempDir(t)
			name := "subreaper-kill-" + strconv.Itoa(i)
			args := append(append([]string{"-v", "--leftovers", "kill", "--kill-after", "30s"}, mode.flags...), name, "sh", "-c", backgroundJob, dir)
			p := clitest.Spec{Env: redisEnv(srv), Args: args, Prefix: mode.prefix}.Start(t)
			pid := clitest.ReadPids(t, 10*time.Second, filepath.Join(dir, "pid"), 1)[0]
			t.Cleanup(func() { signalPid(pid, syscall.SIGKILL) })
			res := p.Wait(10 * time.Second)
			clitest.WaitDead(t, 2*time.Second, pid)
			if res.Code != 3 || !hasLine(res.Stderr, "its job followed by subreaper") || !hasLine(res.Stderr, "stopping its ", " remaining process") {
				t.Errorf("exit %d, stderr %q: want the command's 3, its child stopped, the job followed by the subreaper", res.Code, res.Stderr)
			}
			if rdb.Exists(context.Background(), "lock:"+name).Val() != 0 {
				t.Error("lock not released")
			}
		})
	}
}

// leftoversJob starts three processes that outlive it, each running
// `sleep "$0"`: a background child in its group, a child in a session of
// its own (setsid), and a daemon double-forked through a shell that
// exits; it exits 3 once the three have started (each touches a file in
// "$1").
const leftoversJob = `exec >/dev/null 2>&1
sh -c 'touch "$1/bg"; exec sleep "$0"' "$0" "$1" &
setsid sh -c 'touch "$1/setsid"; exec sleep "$0"' "$0" "$1" &
(setsid sh -c 'touch "$1/daemon"; exec sleep "$0"' "$0" "$1" &)
while [ ! -e "$1/bg" ] || [ ! -e "$1/setsid" ] || [ ! -e "$1/daemon" ]; do sleep 0.01; done; exit 3`

// --leftovers kill stops every process the command left, not only those
// of its process group: a setsid child and a double-forked daemon too,
// with the SIGTERM (well before --kill-after's SIGKILL), whether the
// job has a cgroup or the subreaper alone follows it.
func TestLeftoversKillStopsEveryLeftover(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	for i, mode := range trackings {
		t.Run(mode.name, func(t *testing.T) {
			sl := newSleepers(t)
			t.Cleanup(sl.kill)
			dir := t.TempDir()
			args := append(append([]string{"-v", "--leftovers", "kill", "--kill-after", "5s"}, mode.flags...),
				"every-leftover-"+strconv.Itoa(i), "sh", "-c", leftoversJob, sl.arg, dir)
			res := clitest.Run(t, redisEnv(srv), args...)
			left := sl.pids()
			t.Logf("exit %d after %s; left running: %v; stderr %q", res.Code, res.Duration.Round(time.Millisecond), left, res.Stderr)
			// The three, and maybe the shell of the double fork on its way out.
			stopped := 0
			if m := regexp.MustCompile(`stopping its (\d+) remaining processes`).FindStringSubmatch(res.Stderr); m != nil {
				stopped, _ = strconv.Atoi(m[1])
			}
			if res.Code != 3 || stopped < 3 {
				t.Errorf("exit %d, %d leftovers stopped: want the command's 3, and the 3 processes it left stopped", res.Code, stopped)
			}
			if len(left) > 0 {
				t.Errorf("leftovers %v still run after --leftovers kill", left)
			}
			if res.Duration > 4*time.Second {
				t.Errorf("with-lock took %s: the leftovers were not stopped by the SIGTERM", res.Duration)
			}
		})
	}
}

// --max-run counts from the command's start, not from with-lock's: a run
// that first waited for the lock (-w) still gives its command the whole
// --max-run before stopping it (exit 124).
func TestMaxRunCountsFromTheCommandsStartAfterAWait(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	const wait, maxRun = 1500 * time.Millisecond, time.Second
	beforeSet := time.Now()
	if err := srv.Client().Set(context.Background(), "lock:max-run-wait", foreign, wait).Err(); err != nil {
		t.Fatal(err)
	}
	started := filepath.Join(t.TempDir(), "started")
	p := clitest.Start(t, redisEnv(srv), "-w", "30s", "--max-run", maxRun.String(), "--kill-after", "100ms",
		"max-run-wait", "sh", "-c", `touch "$0"; exec sleep 100`, started)
	res := p.Wait(10 * time.Second)
	st, err := os.Stat(started)
	if err != nil {
		t.Fatalf("the command never ran: exit %d, stderr %q", res.Code, res.Stderr)
	}
	ran := p.Started.Add(res.Duration).Sub(st.ModTime())
	t.Logf("exit %d after %s; the command ran %s of --max-run %s", res.Code, res.Duration.Round(time.Millisecond), ran.Round(time.Millisecond), maxRun)
	if res.Code != 124 {
		t.Errorf("exit %d, stderr %q; want 124", res.Code, res.Stderr)
	}
	// The key lives wait from its SET, which Redis ran after beforeSet:
	// the command cannot start sooner, however late with-lock itself began
	// (less the kernel's coarse clock for file times, a tick at most).
	if waited := st.ModTime().Sub(beforeSet); waited < wait-10*time.Millisecond {
		t.Errorf("the command started %s after the foreign key was set: it did not wait %s for the lock", waited, wait)
	}
	if ran < maxRun-100*time.Millisecond || ran > maxRun+2*time.Second {
		t.Errorf("the command ran %s before it was stopped, want about --max-run's %s, counted from its start", ran, maxRun)
	}
}

// With --stop-timeout, a job that ignores the SIGTERM with-lock forwarded
// (systemctl stop) is killed whole with SIGKILL once the timeout has run,
// and the lock released at once, well before its TTL: the next run need
// not wait for the key to expire. A job that stops in time is not killed.
func TestStopTimeoutKillsAJobIgnoringSIGTERMAndReleasesTheLock(t *testing.T) {
	t.Parallel()
	const timeout = 500 * time.Millisecond
	tests := []struct {
		name   string
		trap   string // the shell's answer to SIGTERM
		code   int
		killed bool
	}{
		{"ignores SIGTERM", `trap '' TERM`, 128 + 9, true},
		{"stops on SIGTERM", `trap 'exit 3' TERM`, 3, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := setup(t)
			pidfile := filepath.Join(t.TempDir(), "pids")
			p := clitest.Start(t, redisEnv(e.srv), "--ttl", "30s", "--stop-timeout", timeout.String(), "stubborn",
				"sh", "-c", tt.trap+`; sleep 100 & printf '%s\n%s\n' $$ $! > "$0.tmp" && mv "$0.tmp" "$0"; wait`, pidfile)
			pids := clitest.ReadPids(t, 10*time.Second, pidfile, 2)
			t.Cleanup(func() {
				for _, pid := range pids {
					if clitest.Alive(pid) {
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			})
			sent := time.Now()
			p.Signal(syscall.SIGTERM)
			r := p.Wait(20 * time.Second)
			took := time.Since(sent)
			t.Logf("with-lock exited %s after the SIGTERM, with %d", took.Round(time.Millisecond), r.Code)
			if r.Code != tt.code {
				t.Errorf("exit %d, want %d; stderr %q", r.Code, tt.code, r.Stderr)
			}
			if tt.killed && took < timeout {
				t.Errorf("killed %s after the signal, before --stop-timeout %s", took, timeout)
			}
			warned := strings.Contains(r.Stderr, "--stop-timeout 500ms after SIGTERM; killing it (SIGKILL)")
			if warned != tt.killed {
				t.Errorf("stderr %q: want the kill said (%v) only when the job was killed", r.Stderr, tt.killed)
			}
			// At once: the 30s TTL would still run for half a minute.
			if n := e.rdb.Exists(context.Background(), "lock:stubborn").Val(); n != 0 {
				t.Error("the lock is still there once with-lock has exited: it was left to expire")
			}
			clitest.WaitDead(t, 5*time.Second, pids...)
		})
	}
}

// --stop-signal is what with-lock stops the job with when it decides to:
// at --max-run's end and when the lock is lost; the job's own handler for
// it runs, and the exit code is with-lock's (124, 125).
func TestStopSignalIsSentOnMaxRunAndALostLock(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const handler = `trap 'echo "$1" > "$0"; exit 0' USR1 INT; touch "$0.ran"; while :; do sleep 0.05; done`
	got := filepath.Join(e.dir, "max-run")
	r := e.run("--stop-signal", "USR1", "--max-run", "1s", "max-run-job", "sh", "-c", handler, got, "USR1")
	if r.Code != 124 || strings.TrimSpace(readFile(t, got)) != "USR1" {
		t.Errorf("--max-run: exit %d, stderr %q; want 124 and the handler of USR1 run", r.Code, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "stopping it (SIGUSR1, SIGKILL after") {
		t.Errorf("--max-run: stderr %q does not name the signal sent", r.Stderr)
	}

	got = filepath.Join(e.dir, "lost")
	p := clitest.Start(t, redisEnv(e.srv), "--ttl", "1s", "--stop-signal", "sigint", "lost-job", "sh", "-c", handler, got, "INT")
	p.WaitFile(got + ".ran")
	if res := e.run("--break", "lost-job"); res.Code != 0 {
		t.Fatalf("--break: exit %d, stderr %q", res.Code, res.Stderr)
	}
	r = p.Wait(20 * time.Second)
	if r.Code != 125 || !exists(got) || strings.TrimSpace(readFile(t, got)) != "INT" {
		t.Errorf("lost lock: exit %d, stderr %q; want 125 and the handler of INT run", r.Code, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "stopping the command (SIGINT, SIGKILL after") {
		t.Errorf("lost lock: stderr %q does not name the signal sent", r.Stderr)
	}
}

// The example systemd unit lets with-lock kill a job that will not stop
// and release the lock itself: its ExecStart's --stop-timeout comes well
// before TimeoutStopSec, when systemd would SIGKILL with-lock with the job
// and leave the lock to expire; and with KillMode=mixed systemctl stop's
// SIGTERM reaches with-lock alone, which forwards it.
func TestSystemdUnitStopsTheJobBeforeSystemdDoes(t *testing.T) {
	t.Parallel()
	unit := readFile(t, filepath.Join("..", "..", "packaging", "systemd", "with-lock-example.service"))
	var args []string
	var unitStop time.Duration
	mixed := false
	for _, line := range strings.Split(unit, "\n") {
		key, value, _ := strings.Cut(line, "=")
		switch key {
		case "ExecStart":
			if f := strings.Fields(value); len(f) > 1 && f[0] == "/usr/bin/with-lock" {
				args = f[1:]
			}
		case "TimeoutStopSec":
			d, err := time.ParseDuration(value)
			if err != nil {
				t.Fatalf("TimeoutStopSec=%s: %v", value, err)
			}
			unitStop = d
		case "KillMode":
			mixed = value == "mixed"
		}
	}
	c, err := config.Parse(args, func(string) string { return "" })
	if err != nil {
		t.Fatalf("ExecStart's with-lock %q: %v", args, err)
	}
	const room = 5 * time.Second // the SIGKILL, the job's end, the release
	if c.StopTimeout <= 0 || unitStop < c.StopTimeout+room || !mixed {
		t.Errorf("--stop-timeout %s, TimeoutStopSec=%s, KillMode=mixed %v: want a --stop-timeout at least %s below TimeoutStopSec, and mixed",
			c.StopTimeout, unitStop, mixed, room)
	}
}
