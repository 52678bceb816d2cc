package main_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// An empty --prefix is refused (64 on the command line, 78 in the config
// file), as --print-config would otherwise show "" while the key gets
// "lock:". An empty WITH_LOCK_PREFIX is unset, as every empty variable.
func TestEmptyPrefixIsRefused(t *testing.T) {
	e := setup(t)
	conf := e.conf("with-lock.conf", "prefix = \"\"\n")
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		code int
		want string
	}{
		{"flag", nil, []string{"--prefix", "", "x", "true"}, 64, "--prefix is empty: a lock's key needs a prefix (the default is lock:)"},
		{"flag, --print-config", nil, []string{"--prefix=", "--print-config"}, 64, "--prefix is empty"},
		{"config file", nil, []string{"--config", conf, "x", "true"}, 78, conf + ":1: prefix is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := clitest.Run(t, tc.env, append([]string{"--redis", e.srv.URL()}, tc.args...)...)
			if r.Code != tc.code {
				t.Errorf("exit %d, want %d", r.Code, tc.code)
			}
			oneLine(t, r, tc.want)
		})
	}
	t.Run("empty variable", func(t *testing.T) {
		r := clitest.Run(t, []string{"WITH_LOCK_PREFIX="}, "--redis", e.srv.URL(), "--print-config")
		if r.Code != 0 || !strings.Contains(r.Stdout, `prefix = "lock:"`) {
			t.Errorf("exit %d, stdout %q: want prefix lock:", r.Code, r.Stdout)
		}
	})
	if n := e.rdb.DBSize(t.Context()).Val(); n != 0 {
		t.Errorf("%d keys written", n)
	}
}

// A command that is one of with-lock's flags was most likely meant for
// with-lock: the message says where flags go. A command that is not a
// flag of ours is said as before.
func TestFlagAfterTheNameSaysWhereFlagsGo(t *testing.T) {
	e := setup(t)
	for _, tc := range []struct {
		cmd  string
		hint bool
	}{{"-q", true}, {"--ttl=5s", true}, {"-w5m", true}, {"--no-such-flag", false}, {"no-such-command", false}} {
		t.Run(tc.cmd, func(t *testing.T) {
			r := e.run("x", tc.cmd, "true")
			if r.Code != 127 {
				t.Errorf("exit %d, want 127", r.Code)
			}
			oneLine(t, r, tc.cmd+": ")
			if got := strings.Contains(r.Stderr, "(flags go before the lock name)"); got != tc.hint {
				t.Errorf("stderr %q: says where flags go %v, want %v", r.Stderr, got, tc.hint)
			}
		})
	}
}

// Every JSON error line carries the exit code with-lock leaves with: a
// Redis that cannot be reached (69) as a command not found (127).
func TestJSONErrorsCarryTheExitCode(t *testing.T) {
	down := "redis://127.0.0.1:" + strconv.Itoa(redistest.FreePort(t)) + "/0"
	paused := redistest.Start(t)
	paused.Signal(syscall.SIGSTOP)
	t.Cleanup(func() { paused.Signal(syscall.SIGCONT) })
	srv := redistest.Start(t)
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"Redis down", []string{"--redis", down, "x", "true"}, 69},
		{"Redis paused", []string{"--redis", paused.URL(), "--redis-timeout", "1s", "x", "true"}, 69},
		{"command not found", []string{"--redis", srv.URL(), "x", "/nonexistent/cmd"}, 127},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := clitest.Run(t, nil, append([]string{"--log-format", "json"}, tc.args...)...)
			if r.Code != tc.code {
				t.Errorf("exit %d, want %d", r.Code, tc.code)
			}
			var errors int
			for _, line := range strings.Split(strings.TrimSuffix(r.Stderr, "\n"), "\n") {
				var l logLine
				if err := json.Unmarshal([]byte(line), &l); err != nil {
					t.Fatalf("stderr line %q is not JSON: %v", line, err)
				}
				if l.Level == "error" {
					errors++
					if l.Code == nil || *l.Code != tc.code {
						t.Errorf("error line %q: want code %d", line, tc.code)
					}
				}
			}
			if errors != 1 {
				t.Errorf("stderr %q: %d error lines, want 1", r.Stderr, errors)
			}
		})
	}
}

// --list with nothing held tells a person at a terminal so, and gives a
// pipe nothing, as a script counting rows expects.
func TestListWithNothingHeld(t *testing.T) {
	e := setup(t)
	t.Run("pipe", func(t *testing.T) {
		for _, args := range [][]string{{"--list"}, {"--list", "--all"}, {"--list", "--json"}} {
			r := e.run(args...)
			if r.Code != 0 || r.Stdout != "" || r.Stderr != "" {
				t.Errorf("%v: exit %d, stdout %q, stderr %q: want 0 and nothing", args, r.Code, r.Stdout, r.Stderr)
			}
		}
	})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--list"}, "no locks held under lock:"},
		{[]string{"--list", "--all"}, "no locks held and no last runs under lock:"},
	} {
		t.Run("terminal "+strings.Join(tc.args, " "), func(t *testing.T) {
			pty := clitest.OpenPTY(t)
			p := clitest.Spec{Env: redisEnv(e.srv), Terminal: pty, Args: tc.args}.Start(t)
			r := p.Wait(clitest.RunTimeout)
			if r.Code != 0 {
				t.Errorf("exit %d, want 0", r.Code)
			}
			clitest.Eventually(t, 10*time.Second, "the terminal never showed "+tc.want, func() bool {
				return strings.Contains(p.Stdout(), tc.want)
			})
		})
	}
}
