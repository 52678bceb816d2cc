package main_test

// The lock covers the whole job: every process it starts, how it is
// followed, its limits and its cost.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// backgroundJob is a command that starts a background child, which writes
// its pid to "$0/pid" and runs until "$0/go" exists; the command exits 3
// once the pid is there.
const backgroundJob = `sh -c 'echo $$ > "$0/pid.tmp" && mv "$0/pid.tmp" "$0/pid"; while [ ! -e "$0/go" ]; do sleep 0.02; done' "$0" &
while [ ! -e "$0/pid" ]; do sleep 0.01; done; exit 3`

// A background child outlives the command: with-lock keeps the lock,
// renewed, until it exits, says so in one line, refuses a second run
// meanwhile, then releases and exits with the command's own code.
func TestBackgroundChildKeepsLockHeldUntilItExits(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	dir := t.TempDir()
	p := clitest.Start(t, redisEnv(srv), "--ttl", "1s", "bg", "sh", "-c", backgroundJob, dir)
	pid := clitest.ReadPids(t, 10*time.Second, filepath.Join(dir, "pid"), 1)[0]
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	p.WaitStderr("remaining process")
	time.Sleep(1500 * time.Millisecond) // past the TTL: the lock must be renewed, not just left to expire
	if p.Exited() {
		t.Fatalf("with-lock exited while the command's background child ran; stderr %q", p.Stderr())
	}
	if st := lookAt(rdb, "lock:bg"); st.err != nil || !tokenRE.MatchString(st.val) {
		t.Errorf("key %+v while the background child runs: want held by with-lock", st)
	}
	if second := clitest.Run(t, redisEnv(srv), "bg", "true"); second.Code != 75 {
		t.Errorf("a second with-lock bg exited %d while the first one's background child ran; want 75 (busy)", second.Code)
	}
	touch(t, filepath.Join(dir, "go"))
	res := p.Wait(10 * time.Second)
	t.Logf("exit %d; stderr %q", res.Code, res.Stderr)
	if res.Code != 3 {
		t.Errorf("exit %d, want the command's 3", res.Code)
	}
	if !hasLine(res.Stderr, "command exited 3; holding lock:bg until its ", "remaining process", strconv.Itoa(pid), "--leftovers kill would stop") {
		t.Errorf("stderr %q: want the line saying what holds the lock", res.Stderr)
	}
	if n := rdb.Exists(context.Background(), "lock:bg").Val(); n != 0 {
		t.Error("lock not released once the background child exited")
	}
}

// --leftovers kill stops what the command left when it exits, and
// with-lock exits with the command's code without waiting for it.
func TestLeftoversKillStopsBackgroundChildAtCommandExit(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	dir := t.TempDir()
	p := clitest.Start(t, redisEnv(srv), "--leftovers", "kill", "bg-kill", "sh", "-c", backgroundJob, dir)
	pid := clitest.ReadPids(t, 10*time.Second, filepath.Join(dir, "pid"), 1)[0]
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	res := p.Wait(10 * time.Second)
	clitest.WaitDead(t, 5*time.Second, pid)
	if res.Code != 3 || res.Stderr != "" {
		t.Errorf("exit %d, stderr %q; want the command's 3 and nothing", res.Code, res.Stderr)
	}
	if n := srv.Client().Exists(context.Background(), "lock:bg-kill").Val(); n != 0 {
		t.Error("lock not released")
	}
}

// Escapees leave the command's process group: a setsid child of the
// command, and a daemon double-forked through a shell that exits, which
// with-lock adopts. Each writes its pid to "$0"; the command itself then
// sleeps.
var escapees = []struct {
	name, script string
}{
	{"setsid child", `setsid sh -c 'echo $$ > "$0.tmp" && mv "$0.tmp" "$0"; exec sleep 100' "$0" & exec sleep 100`},
	{"double-forked daemon", `(setsid sh -c 'echo $$ > "$0.tmp" && mv "$0.tmp" "$0"; exec sleep 100' "$0" &); exec sleep 100`},
}

// startEscapee starts with-lock with flags on name running the escapee's
// script, and returns it with the escapee's pid once it runs.
func startEscapee(t *testing.T, srv *redistest.Server, script, name string, flags ...string) (*clitest.Proc, int) {
	t.Helper()
	pidfile := filepath.Join(t.TempDir(), "pid")
	p := clitest.Start(t, redisEnv(srv), append(flags, name, "sh", "-c", script, pidfile)...)
	pid := clitest.ReadPids(t, 10*time.Second, pidfile, 1)[0]
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if pg, err := syscall.Getpgid(pid); err != nil || pg != pid {
		t.Fatalf("escapee %d in group %d (%v): want a group of its own", pid, pg, err)
	}
	return p, pid
}

// A process that left the command's process group is stopped with the
// rest of the job: when the lock is lost (exit 125), on a signal passed on
// to the job, and when with-lock is killed with SIGKILL (by the guard,
// which learns of escapees every 100ms).
func TestEscapeesAreStoppedWithTheJob(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	stops := []struct {
		name  string
		stop  func(p *clitest.Proc, key string)
		code  int // with-lock's exit; -1 when it is killed
		bound time.Duration
	}{
		{"lost lock", func(_ *clitest.Proc, key string) {
			if err := rdb.Set(context.Background(), key, foreign, time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
		}, 125, 5 * time.Second},
		{"forwarded SIGTERM", func(p *clitest.Proc, _ string) { p.Signal(syscall.SIGTERM) }, 143, 5 * time.Second},
		{"with-lock killed -9", func(p *clitest.Proc, _ string) {
			time.Sleep(time.Second) // for the guard to have learnt of the escapee (every 100ms)
			p.Signal(syscall.SIGKILL)
		}, -1, time.Second},
	}
	for k, mode := range trackings {
		for i, stop := range stops {
			for j, esc := range escapees {
				t.Run(mode.name+"/"+stop.name+"/"+esc.name, func(t *testing.T) {
					name := "escapee-" + string(rune('a'+k)) + string(rune('a'+i)) + string(rune('a'+j))
					p, pid := startEscapee(t, srv, esc.script, name, append([]string{"--ttl", "900ms"}, mode.flags...)...)
					stop.stop(p, "lock:"+name)
					stoppedAt := time.Now()
					deadAt := clitest.WaitDead(t, 10*time.Second, pid)
					res := p.Wait(10 * time.Second)
					took := deadAt.Sub(stoppedAt)
					t.Logf("%s: escapee dead %s after the stop; exit %d; stderr %q", esc.name, took.Round(time.Millisecond), res.Code, res.Stderr)
					if took > stop.bound {
						t.Errorf("escapee dead %s after the stop, want within %s", took, stop.bound)
					}
					if stop.code >= 0 && res.Code != stop.code {
						t.Errorf("exit %d, want %d", res.Code, stop.code)
					}
				})
			}
		}
	}
}

// trackings are the two ways with-lock follows a job on Linux: in a cgroup
// of its own where the machine lets it make one (else it falls back to the
// subreaper alone), and the subreaper alone.
var trackings = []struct {
	name  string
	flags []string
}{
	{"cgroup where available", nil},
	{"subreaper", []string{"--no-cgroup"}},
}

// -v says what follows the job: a cgroup of its own where this machine
// offers a writable cgroup2 mount (as root here), the command then in it
// and the group removed at the end; the subreaper with --no-cgroup or
// without one, the command then in with-lock's own cgroup. --status
// --json's last run says it too.
func TestVerboseSaysWhatFollowsTheJob(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	own := cgroupOf(t, "self")
	for _, mode := range trackings {
		t.Run(mode.name, func(t *testing.T) {
			args := append(append([]string{"-v"}, mode.flags...), "tracking", "sh", "-c", "grep '^0::' /proc/self/cgroup")
			res := clitest.Run(t, redisEnv(srv), args...)
			in := strings.TrimPrefix(strings.TrimSpace(res.Stdout), "0::")
			t.Logf("exit %d; the command's cgroup %q, with-lock's %q; stderr %q", res.Code, in, own, res.Stderr)
			wantCgroup := mode.flags == nil && cgroupWritable()
			switch {
			case res.Code != 0:
				t.Errorf("exit %d", res.Code)
			case wantCgroup && !hasLine(res.Stderr, "its job followed by cgroup /", "/with-lock."):
				t.Errorf("stderr %q: want the job followed by a cgroup of its own (this machine offers a writable cgroup2 mount)", res.Stderr)
			case wantCgroup && !strings.Contains(in, "/with-lock."):
				t.Errorf("the command ran in cgroup %q, want one of its own", in)
			case !wantCgroup && (!hasLine(res.Stderr, "its job followed by subreaper") || in != own):
				t.Errorf("stderr %q, command's cgroup %q: want the subreaper alone and with-lock's own cgroup %q", res.Stderr, in, own)
			}
			want := map[bool]string{true: "cgroup", false: "subreaper"}[wantCgroup]
			var st struct {
				LastRun struct{ Tracking string } `json:"last_run"`
			}
			status := clitest.Run(t, redisEnv(srv), "--status", "--json", "tracking")
			if err := json.Unmarshal([]byte(status.Stdout), &st); err != nil || st.LastRun.Tracking != want {
				t.Errorf("--status --json says the last run's tracking was %q (%v), want %q:\n%s", st.LastRun.Tracking, err, want, status.Stdout)
			}
			if wantCgroup {
				dir := res.Stderr[strings.Index(res.Stderr, "cgroup /")+len("cgroup "):]
				dir = dir[:strings.IndexByte(dir, ')')]
				// Removed by with-lock or by its guard, which may do it
				// just after with-lock has exited.
				clitest.Eventually(t, 5*time.Second, "the job's cgroup "+dir+" removed", func() bool { return !exists(dir) })
			}
		})
	}
}

// cgroupOf is process pid's cgroup v2 path ("self" for the test's own).
func cgroupOf(t *testing.T, pid string) string {
	t.Helper()
	for _, line := range strings.Split(readFile(t, "/proc/"+pid+"/cgroup"), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p
		}
	}
	return ""
}

// cgroupWritable reports whether this machine lets with-lock make a cgroup:
// root, and a cgroup2 hierarchy mounted read-write.
func cgroupWritable() bool {
	_, rw := cgroup2Mount()
	return rw && os.Geteuid() == 0
}

// --max-run stops a job that runs too long, escapees included, exits 124
// as timeout(1) does, releases the lock and records the run as timed out.
func TestMaxRunStopsWholeJobAndExits124(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	p, pid := startEscapee(t, srv, escapees[0].script, "max-run", "--max-run", "1s", "--kill-after", "1s")
	res := p.Wait(10 * time.Second)
	clitest.WaitDead(t, time.Second, pid)
	t.Logf("exit %d after %s; stderr %q", res.Code, res.Duration.Round(time.Millisecond), res.Stderr)
	if res.Code != 124 || !hasLine(res.Stderr, "--max-run 1s", "exit 124") {
		t.Errorf("exit %d, stderr %q; want 124 and why", res.Code, res.Stderr)
	}
	if res.Duration < time.Second || res.Duration > 5*time.Second {
		t.Errorf("with-lock ran %s, want about --max-run's 1s", res.Duration)
	}
	ctx := context.Background()
	if n := rdb.Exists(ctx, "lock:max-run").Val(); n != 0 {
		t.Error("lock not released")
	}
	var rec struct {
		ExitCode int  `json:"exit_code"`
		TimedOut bool `json:"timed_out"`
	}
	raw := rdb.Get(ctx, "{lock:max-run}:last").Val()
	if err := json.Unmarshal([]byte(raw), &rec); err != nil || rec.ExitCode != 124 || !rec.TimedOut {
		t.Errorf("last-run record %q (%v): want exit_code 124 and timed_out", raw, err)
	}
	if strings.Contains(raw, `"lost":true`) {
		t.Errorf("last-run record %q says lost", raw)
	}
}

// The last-run record and the JSON log's released event carry what the
// job cost: CPU time of all its processes — here nearly all of it a
// background child's that the command left behind — and the largest
// resident set.
func TestRecordCarriesJobCPUAndMemory(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	// A child that counts (about 80ms of CPU), left running by the command.
	const burn = `i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done`
	res := clitest.Run(t, redisEnv(srv), "-v", "--log-format", "json", "cost", "sh", "-c", "("+burn+") & exit 0")
	if res.Code != 0 {
		t.Fatalf("exit %d, stderr %q", res.Code, res.Stderr)
	}
	var rec struct {
		CPUMs    int64 `json:"cpu_ms"`
		MaxRSSKB int64 `json:"max_rss_kb"`
	}
	raw := rdb.Get(context.Background(), "{lock:cost}:last").Val()
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		t.Fatalf("last-run record %q: %v", raw, err)
	}
	var rel struct {
		CPUMs    *int64 `json:"cpu_ms"`
		MaxRSSKB int64  `json:"max_rss_kb"`
	}
	for _, line := range strings.Split(res.Stderr, "\n") {
		if strings.Contains(line, `"event":"released"`) {
			if err := json.Unmarshal([]byte(line), &rel); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("record %s; released event %s", raw, hasCost(rel.CPUMs, rel.MaxRSSKB))
	if rec.CPUMs < 20 || rec.MaxRSSKB <= 0 {
		t.Errorf("record %q: want the background child's CPU (cpu_ms ≥ 20) and max_rss_kb", raw)
	}
	if rel.CPUMs == nil || *rel.CPUMs != rec.CPUMs || rel.MaxRSSKB != rec.MaxRSSKB {
		t.Errorf("released event %s; want the record's cpu_ms %d, max_rss_kb %d", hasCost(rel.CPUMs, rel.MaxRSSKB), rec.CPUMs, rec.MaxRSSKB)
	}
}

// hasCost says an event's cost fields.
func hasCost(cpu *int64, rss int64) string {
	if cpu == nil {
		return fmt.Sprintf("without cpu_ms, max_rss_kb %d", rss)
	}
	return fmt.Sprintf("cpu_ms %d, max_rss_kb %d", *cpu, rss)
}

// memoryControllerHere reports whether with-lock, run by the tests as
// root, can limit a job's memory: its cgroup2 hierarchy offers the memory
// controller (a hybrid host binds it to cgroup v1 instead).
func memoryControllerHere() bool {
	mount, rw := cgroup2Mount()
	b, _ := os.ReadFile(filepath.Join(mount, "cgroup.controllers"))
	return rw && os.Geteuid() == 0 && slices.Contains(strings.Fields(string(b)), "memory")
}

// --memory-max limits the whole job's memory where its cgroup has the
// memory controller: a job that takes more than the limit is killed by
// the kernel (137), and the record's max_rss_kb stays within the limit.
// Where the controller is not there, or the job has no cgroup of its own
// (--tracking subreaper contradicts the limit; a user who may make no
// group), the run is refused with the reason and the command never runs:
// a limit is not silently dropped.
func TestMemoryMaxLimitsTheJobOrIsRefusedWithTheReason(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	dir := sharedTempDir(t)
	ran := filepath.Join(dir, "ran")
	// dd's buffer is 200 MiB, filled as it reads: more than the limit.
	hog := []string{"sh", "-c", `touch "$0"; dd if=/dev/zero of=/dev/null bs=200M count=1 2>/dev/null`, ran}
	t.Run("this machine's cgroup", func(t *testing.T) {
		defer os.Remove(ran)
		res := clitest.Run(t, redisEnv(srv), append([]string{"--memory-max", "64M", "limited"}, hog...)...)
		if memoryControllerHere() {
			var rec struct {
				ExitCode int   `json:"exit_code"`
				MaxRSSKB int64 `json:"max_rss_kb"`
			}
			_ = json.Unmarshal([]byte(srv.Client().Get(t.Context(), "{lock:limited}:last").Val()), &rec)
			if res.Code != 137 || rec.ExitCode != 137 || rec.MaxRSSKB > 64*1024 {
				t.Errorf("exit %d, record %+v: want the job killed by the kernel (137) within 64 MiB; stderr %q", res.Code, rec, res.Stderr)
			}
			return
		}
		if res.Code != 78 || !hasLine(res.Stderr, "--memory-max", "no memory controller", "command not run") || exists(ran) {
			t.Errorf("exit %d, stderr %q, command ran: %v; want 78, the reason, and the command not run", res.Code, res.Stderr, exists(ran))
		}
		t.Logf("refused here: %s", res.Stderr)
	})
	t.Run("a user who may make no cgroup", func(t *testing.T) {
		defer os.Remove(ran)
		res := clitest.Spec{Env: redisEnv(srv), Args: append([]string{"--memory-max", "64M", "limited-nobody"}, hog...), Prefix: asNobody}.Start(t).Wait(clitest.RunTimeout)
		if res.Code != 78 || !hasLine(res.Stderr, "--memory-max", "cgroup of its own", "command not run") || exists(ran) {
			t.Errorf("exit %d, stderr %q, command ran: %v; want 78, the reason, and the command not run", res.Code, res.Stderr, exists(ran))
		}
	})
	t.Run("--tracking subreaper", func(t *testing.T) {
		res := clitest.Run(t, redisEnv(srv), append([]string{"--tracking", "subreaper", "--cpu-quota", "50%", "limited"}, hog...)...)
		if res.Code != 64 || !hasLine(res.Stderr, "--cpu-quota", "cgroup of its own") || exists(ran) {
			t.Errorf("exit %d, stderr %q: want 64 (the flags contradict each other)", res.Code, res.Stderr)
		}
	})
}
