package main_test

// The exit code of a run that got as far as its command, or was refused the
// lock: the command's own code (after -- and --prefix too), 126 or 127 when
// it cannot start, 128+n when a signal killed it; 75 or --conflict-exit-code,
// quiet with -q, when the lock is busy.

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

func TestCommandNotStartable(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	write := func(name, content string, mode os.FileMode) string {
		return writeFile(t, e.path(name), []byte(content), mode)
	}
	tests := []struct {
		name    string
		command string
		code    int
		locked  bool   // found and locked first, failed to start after
		says    string // beside the command's name
	}{
		{"missing", "no-such-command-with-lock-test", 127, false, ""},
		{"missing path", e.path("nowhere/cmd"), 127, false, ""},
		{"not executable", write("plain", "#!/bin/sh\ntouch "+e.path("ran")+"\n", 0o644), 126, false, ""},
		{"directory", e.dir, 126, false, ""},
		{"bad format", write("garbage", "\x00\x01\x02 not a program\n", 0o755), 126, true, ""},
		{"missing interpreter", write("orphan", "#!/nonexistent/interpreter -e\n", 0o755), 127, false, "interpreter /nonexistent/interpreter not found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mon := e.srv.Monitor()
			r := e.run("x", tc.command)
			if r.Code != tc.code {
				t.Errorf("exit %d, want %d", r.Code, tc.code)
			}
			oneLine(t, r, tc.command)
			if !strings.Contains(r.Stderr, tc.says) {
				t.Errorf("stderr %q does not say %q", r.Stderr, tc.says)
			}
			if tc.name == "missing interpreter" {
				matchesDoc(t, r, "a script's interpreter is missing", "/opt/jobs/x.sh", tc.command, "/usr/local/bin/python3", "/nonexistent/interpreter")
			}
			e.notRun("ran")
			if n := e.rdb.Exists(ctx, "lock:x").Val(); n != 0 {
				t.Error("lock:x was left behind")
			}
			var set, eval int
			for _, c := range mon.Commands() {
				switch {
				case c.Client == "lua":
				case c.Args[0] == "set":
					set++
				case c.Args[0] == "eval":
					eval++
				}
			}
			if tc.locked && (set != 1 || eval != 1) {
				t.Errorf("%d SET and %d EVAL, want the lock taken and released once", set, eval)
			}
		})
	}
}

func TestDiedOfSignal(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for sig, code := range map[string]int{"TERM": 143, "KILL": 137, "INT": 130} {
		r := e.run("x", "sh", "-c", "kill -"+sig+" $$")
		if r.Code != code || r.Stderr != "" {
			t.Errorf("command killed by SIG%s: exit %d, stderr %q; want %d", sig, r.Code, r.Stderr, code)
		}
		if n := e.rdb.Exists(context.Background(), "lock:x").Val(); n != 0 {
			t.Errorf("lock:x left behind after SIG%s", sig)
		}
	}
}

func TestConflictExitAndQuiet(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.rdb.Set(context.Background(), "lock:x", foreign, time.Minute)
	for _, tc := range []struct {
		flags []string
		code  int
		quiet bool
	}{
		{nil, 75, false},
		{[]string{"-n"}, 75, false},
		{[]string{"-E", "42"}, 42, false},
		{[]string{"--conflict-exit-code=1"}, 1, false},
		{[]string{"-E", "0"}, 0, true}, // cron's quiet skip
		{[]string{"-q"}, 75, true},
		{[]string{"--quiet", "-E", "0"}, 0, true},
	} {
		r := e.run(append(tc.flags, "x", "touch", e.path("ran"))...)
		if r.Code != tc.code {
			t.Errorf("%q on a busy lock: exit %d, want %d", tc.flags, r.Code, tc.code)
		}
		if tc.quiet && (r.Stderr != "" || r.Stdout != "") {
			t.Errorf("%q: output %q %q, want none", tc.flags, r.Stdout, r.Stderr)
		}
		if !tc.quiet {
			oneLine(t, r, "lock:x is held by otherhost:4242")
		}
		e.notRun("ran")
	}
}

func TestPrefixAndDoubleDash(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	h := e.startJob(0, "--prefix", "jobs/", "x")
	if h.key != "jobs/x" || e.get("jobs/x") != h.token {
		t.Errorf("with --prefix jobs/: WITH_LOCK_KEY %q, jobs/x holds %q; want jobs/x with our token", h.key, e.get("jobs/x"))
	}
	if n := e.rdb.Exists(ctx, "lock:x").Val(); n != 0 {
		t.Error("lock:x exists with --prefix jobs/")
	}
	if r := h.finish(); r.Code != 0 {
		t.Errorf("exit %d: %s", r.Code, r.Stderr)
	}
	e.rdb.Set(ctx, "jobs/busy", foreign, time.Minute)
	if r := e.run("--prefix", "jobs/", "busy", "true"); r.Code != 75 || !strings.Contains(r.Stderr, "jobs/busy") {
		t.Errorf("busy jobs/busy: exit %d, stderr %q; want 75 naming jobs/busy", r.Code, r.Stderr)
	}

	for _, args := range [][]string{
		{"--", "x", "sh", "-c", "exit 3"},
		{"x", "--", "sh", "-c", "exit 3"},
		{"--ttl", "5s", "--", "x", "--", "sh", "-c", "exit 3"},
	} {
		if r := e.run(args...); r.Code != 3 || r.Stderr != "" {
			t.Errorf("with-lock %q: exit %d, stderr %q; want the command's 3", args, r.Code, r.Stderr)
		}
	}
	if r := e.run("--", "-dash", "true"); r.Code != 0 {
		t.Errorf("a name after -- that starts with a dash: exit %d, %s", r.Code, r.Stderr)
	}
}
