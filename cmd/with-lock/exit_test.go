package main_test

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// notRun checks that the command, which would create marker, did not run.
func (e *env) notRun(marker string) {
	e.t.Helper()
	if e.exists(marker) {
		e.t.Errorf("the command ran")
	}
}

func TestUsageErrors(t *testing.T) {
	e := setup(t)
	touch := []string{"touch", e.path("ran")}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no arguments", nil, "missing lock name"},
		{"name only", []string{"x"}, "missing command"},
		{"name and --", []string{"x", "--"}, "missing command"},
		{"empty name", append([]string{""}, touch...), "lock name is empty"},
		{"control character", append([]string{"a\nb"}, touch...), "control characters"},
		{"bad --ttl", append([]string{"--ttl", "soon", "x"}, touch...), "soon"},
		{"zero --ttl", append([]string{"--ttl", "0s", "x"}, touch...), "below 1ms"},
		{"unknown flag", append([]string{"--bogus", "x"}, touch...), "bogus"},
		{"-E 256", append([]string{"-E", "256", "x"}, touch...), "outside 0-255"},
		{"-E -1", append([]string{"-E", "-1", "x"}, touch...), "outside 0-255"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := clitest.Run(t, nil, append([]string{"--redis", e.srv.URL()}, tc.args...)...)
			if r.Code != 64 {
				t.Errorf("exit %d, want 64", r.Code)
			}
			// The error, then where to read more.
			lines := strings.Split(strings.TrimSuffix(r.Stderr, "\n"), "\n")
			if len(lines) != 2 || !strings.HasPrefix(lines[0], "with-lock: ") || !strings.Contains(lines[0], tc.want) ||
				lines[1] != "Try 'with-lock --help' for more information." {
				t.Errorf("stderr %q: want one error line mentioning %q and the --help hint", r.Stderr, tc.want)
			}
			if r.Stdout != "" {
				t.Errorf("stdout %q, want nothing", r.Stdout)
			}
			e.notRun("ran")
		})
	}
	if n := e.rdb.DBSize(context.Background()).Val(); n != 0 {
		t.Errorf("usage errors left %d keys in Redis", n)
	}
}

func TestHelpAndVersion(t *testing.T) {
	for _, flag := range []string{"-h", "--help"} {
		r := clitest.Run(t, nil, flag)
		if r.Code != 0 || !strings.HasPrefix(r.Stdout, "Usage: with-lock") || !strings.Contains(r.Stdout, "Examples:") || r.Stderr != "" {
			t.Errorf("with-lock %s = %d, stdout %q, stderr %q; want 0 and the usage on stdout", flag, r.Code, r.Stdout, r.Stderr)
		}
	}
	r := clitest.Run(t, nil, "--version")
	if r.Code != 0 || !regexp.MustCompile(`^with-lock \S+\n$`).MatchString(r.Stdout) || r.Stderr != "" {
		t.Errorf("with-lock --version = %d, %q, %q; want 0 and one line", r.Code, r.Stdout, r.Stderr)
	}
}

func TestRedisUnavailable(t *testing.T) {
	t.Run("nothing listening", func(t *testing.T) {
		e := &env{t: t, dir: t.TempDir()}
		url := "redis://127.0.0.1:" + strconv.Itoa(redistest.FreePort(t)) + "/0"
		r := clitest.Run(t, nil, "--redis", url, "--redis-timeout", "1s", "x", "touch", e.path("ran"))
		if r.Code != 69 {
			t.Errorf("exit %d, want 69", r.Code)
		}
		oneLine(t, r, "command not run")
		e.notRun("ran")
	})
	t.Run("server paused", func(t *testing.T) {
		e := setup(t)
		e.srv.Signal(syscall.SIGSTOP)
		const timeout = time.Second
		r := e.run("--redis-timeout", timeout.String(), "x", "touch", e.path("ran"))
		e.srv.Signal(syscall.SIGCONT)
		if r.Code != 69 {
			t.Errorf("exit %d, want 69", r.Code)
		}
		oneLine(t, r, "command not run")
		e.notRun("ran")
		if r.Duration > 10*timeout {
			t.Errorf("gave up after %v with --redis-timeout %v", r.Duration, timeout)
		}
		if n := e.rdb.Exists(context.Background(), "lock:x").Val(); n != 0 {
			t.Error("lock:x exists once the server resumed")
		}
	})
	t.Run("loading", func(t *testing.T) {
		// A real LOADING state: DEBUG RELOAD saves and reloads the data set,
		// slowed to about 1ms a key, answering other clients in between.
		e := setup(t, "enable-debug-command", "yes", "key-load-delay", "1000",
			"loading-process-events-interval-bytes", "1024")
		ctx := context.Background()
		if err := e.rdb.Do(ctx, "DEBUG", "POPULATE", "3000", "filler", "100").Err(); err != nil {
			t.Fatal(err)
		}
		reload := e.srv.Client()
		go func() { _ = reload.Do(context.Background(), "DEBUG", "RELOAD").Err() }()
		clitest.Eventually(t, 10*time.Second, "the server never reported LOADING", func() bool {
			err := e.rdb.Ping(ctx).Err()
			return err != nil && strings.HasPrefix(err.Error(), "LOADING")
		})
		r := e.run("x", "touch", e.path("ran"))
		if r.Code != 69 {
			t.Errorf("exit %d, want 69", r.Code)
		}
		oneLine(t, r, "LOADING")
		e.notRun("ran")
	})
}

func TestRedisRefusesCredentials(t *testing.T) {
	const password, wrong, userPassword = "s3cret-pw-xyz", "wrong-pw-123", "limited-pw-456"
	e := setup(t, "requirepass", password)
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: e.srv.Addr(), Password: password, DisableIdentity: true})
	defer admin.Close()
	// A user who may do anything but SET.
	if err := admin.Do(ctx, "ACL", "SETUSER", "limited", "on", ">"+userPassword, "~*", "&*", "+@all", "-set").Err(); err != nil {
		t.Fatal(err)
	}
	addr := e.srv.Addr()
	tests := []struct {
		name, url, want string
		code            int
	}{
		{"no password", "redis://" + addr + "/0", "NOAUTH", 77},
		{"wrong password", "redis://:" + wrong + "@" + addr + "/0", "WRONGPASS", 77},
		{"no permission", "redis://limited:" + userPassword + "@" + addr + "/0", "NOPERM", 77},
		{"right password", "redis://:" + password + "@" + addr + "/0", "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := clitest.Run(t, []string{"WITH_LOCK_REDIS=" + tc.url}, "x", "touch", e.path(tc.name))
			if r.Code != tc.code {
				t.Errorf("exit %d, want %d; stderr %q", r.Code, tc.code, r.Stderr)
			}
			if tc.code == 0 {
				if !e.exists(tc.name) {
					t.Error("the command did not run")
				}
				return
			}
			oneLine(t, r, tc.want)
			e.notRun(tc.name)
			for _, secret := range []string{password, wrong, userPassword} {
				if strings.Contains(r.Stderr, secret) {
					t.Errorf("stderr %q shows a password", r.Stderr)
				}
			}
		})
	}
}

func TestBadConfiguration(t *testing.T) {
	e := &env{t: t, dir: t.TempDir()}
	const secret = "hunter2-pw"
	for _, tc := range []struct {
		flag, env string
	}{
		{flag: "foo://x"},
		{flag: "redis://[bad"},
		{flag: "redis://:" + secret + "@[bad"},
		{flag: "redis://u:" + secret + "@host:port/0"},
		{env: "foo://:" + secret + "@x"},
	} {
		var args, environ []string
		if tc.flag != "" {
			args = []string{"--redis", tc.flag}
		} else {
			environ = []string{"WITH_LOCK_REDIS=" + tc.env}
		}
		r := clitest.Run(t, environ, append(args, "x", "touch", e.path("ran"))...)
		if r.Code != 78 {
			t.Errorf("URL %q: exit %d, want 78", tc.flag+tc.env, r.Code)
		}
		oneLine(t, r, "URL")
		if strings.Contains(r.Stderr, secret) {
			t.Errorf("stderr %q shows the password", r.Stderr)
		}
		e.notRun("ran")
	}
}

func TestCommandNotStartable(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	write := func(name, content string, mode os.FileMode) string {
		p := e.path(name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name    string
		command string
		code    int
		locked  bool // found and locked first, failed to start after
	}{
		{"missing", "no-such-command-with-lock-test", 127, false},
		{"missing path", e.path("nowhere/cmd"), 127, false},
		{"not executable", write("plain", "#!/bin/sh\ntouch "+e.path("ran")+"\n", 0o644), 126, false},
		{"directory", e.dir, 126, false},
		{"bad format", write("garbage", "\x00\x01\x02 not a program\n", 0o755), 126, true},
		{"missing interpreter", write("orphan", "#!/nonexistent/interpreter\n", 0o755), 127, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mon := e.srv.Monitor()
			r := e.run("x", tc.command)
			if r.Code != tc.code {
				t.Errorf("exit %d, want %d", r.Code, tc.code)
			}
			oneLine(t, r, tc.command)
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
	e := setup(t)
	ctx := context.Background()
	h := e.startHeld([]string{"--prefix", "jobs/"}, "x", 0)
	if h.key != "jobs/x" || e.get("jobs/x") != h.token {
		t.Errorf("with --prefix jobs/: WITH_LOCK_KEY %q, jobs/x holds %q; want jobs/x with our token", h.key, e.get("jobs/x"))
	}
	if n := e.rdb.Exists(ctx, "lock:x").Val(); n != 0 {
		t.Error("lock:x exists with --prefix jobs/")
	}
	if r := h.finish(t); r.Code != 0 {
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
