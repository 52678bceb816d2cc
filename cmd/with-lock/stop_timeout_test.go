package main_test

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/config"
)

// With --stop-timeout, a job that ignores the SIGTERM with-lock forwarded
// (systemctl stop) is killed whole with SIGKILL once the timeout has run,
// and the lock released at once, well before its TTL: the next run need
// not wait for the key to expire. A job that stops in time is not killed.
func TestStopTimeoutKillsAJobIgnoringSIGTERMAndReleasesTheLock(t *testing.T) {
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
	unit := readFile(t, filepath.Join("..", "..", "packaging", "systemd", "with-lock-example.service"))
	var args []string
	var stopSec time.Duration
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
			stopSec = d
		case "KillMode":
			mixed = value == "mixed"
		}
	}
	c, err := config.Parse(args, func(string) string { return "" })
	if err != nil {
		t.Fatalf("ExecStart's with-lock %q: %v", args, err)
	}
	const room = 5 * time.Second // the SIGKILL, the job's end, the release
	if c.StopTimeout <= 0 || stopSec < c.StopTimeout+room || !mixed {
		t.Errorf("--stop-timeout %s, TimeoutStopSec=%s, KillMode=mixed %v: want a --stop-timeout at least %s below TimeoutStopSec, and mixed",
			c.StopTimeout, stopSec, mixed, room)
	}
}
