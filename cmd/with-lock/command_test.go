package main_test

// What the command gets: its arguments, environment and lock variables, the
// signals with-lock forwards, a terminal.

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
	"golang.org/x/sys/unix"
)

// A signal to with-lock reaches the command; with-lock waits for it,
// releases the lock and exits as the command did.
func TestSignalReachesCommandAndExitFollowsIt(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT} {
		t.Run(unix.SignalName(sig), func(t *testing.T) {
			t.Run("default action", func(t *testing.T) {
				started := e.path("started-" + sig.String())
				// exec: the signal's default action ends the command itself.
				p := clitest.Start(t, nil, "--redis", e.srv.URL(), "x", "sh", "-c", `touch "$1"; exec sleep 30`, "sh", started)
				p.WaitFile(started)
				p.Signal(sig)
				r := p.Wait(30 * time.Second)
				if r.Code != 128+int(sig) || r.Stderr != "" {
					t.Errorf("exit %d, stderr %q; want %d, as the command died", r.Code, r.Stderr, 128+int(sig))
				}
				e.gone(t, "lock:x")
			})
			t.Run("trapped", func(t *testing.T) {
				started, got := e.path("started-trap-"+sig.String()), e.path("got-"+sig.String())
				script := fmt.Sprintf(`trap 'echo caught > "$2"; exit 7' %d; touch "$1"; while :; do sleep 0.05; done`, int(sig))
				p := clitest.Start(t, nil, "--redis", e.srv.URL(), "x", "sh", "-c", script, "sh", started, got)
				p.WaitFile(started)
				p.Signal(sig)
				r := p.Wait(30 * time.Second)
				if r.Code != 7 {
					t.Errorf("exit %d, want the command's own 7 after it handled %v; stderr %q", r.Code, sig, r.Stderr)
				}
				if b, err := os.ReadFile(got); err != nil || string(b) != "caught\n" {
					t.Errorf("the command's trap did not run: %q, %v", b, err)
				}
				e.gone(t, "lock:x")
			})
		})
	}
}

// A signal that arrives before the lock is taken
// ends with-lock without running the command. The "Redis" here accepts the
// connection and never answers, so with-lock is provably waiting for its
// first reply when the signal comes. with-lock still waits for that reply
// or its timeout, since a SET that landed must be released: so the exit
// is 143 for the signal, where the timeout alone would give 69.
func TestSignalWhileAcquiringSkipsCommand(t *testing.T) {
	t.Parallel() // it waits out the Redis timeout
	e := &env{t: t, dir: t.TempDir()}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := l.Accept(); err == nil {
			accepted <- c // keep it open and silent
		}
	}()
	p := clitest.Start(t, nil, "--redis", "redis://"+l.Addr().String()+"/0", "--redis-timeout", "4s", "x", "touch", e.path("ran"))
	select {
	case c := <-accepted:
		defer c.Close()
	case <-time.After(20 * time.Second):
		t.Fatal("with-lock never connected")
	}
	p.Signal(syscall.SIGTERM)
	r := p.Wait(30 * time.Second)
	if r.Code != 128+int(syscall.SIGTERM) {
		t.Errorf("exit %d, want 143", r.Code)
	}
	oneLine(t, r, "terminated while acquiring lock:x; command not run")
	e.notRun("ran")
}

// The command gets with-lock's environment plus WITH_LOCK_NAME, _KEY and
// _TOKEN, the token being the key's value.
func TestCommandGetsEnvironmentAndLockVariables(t *testing.T) {
	t.Parallel()
	e := setup(t)
	h := e.startJob(0, "--prefix", "env:", "nightly")
	if h.name != "nightly" || h.key != "env:nightly" || !tokenRE.MatchString(h.token) {
		t.Errorf("WITH_LOCK_NAME, _KEY, _TOKEN = %q, %q, %q", h.name, h.key, h.token)
	}
	if got := e.get("env:nightly"); got != h.token {
		t.Errorf("key holds %q, WITH_LOCK_TOKEN is %q", got, h.token)
	}
	h.finish()

	r := clitest.Run(t, []string{"WITH_LOCK_TEST_PASSED=through"}, "--redis", e.srv.URL(), "x", "sh", "-c", `echo "$WITH_LOCK_TEST_PASSED"`)
	if r.Code != 0 || r.Stdout != "through\n" {
		t.Errorf("inherited variable: exit %d, stdout %q; want \"through\"", r.Code, r.Stdout)
	}
}

// overlapProbe is the command of the contention tests: mkdir is atomic, so
// it fails (exit 99) if another copy is inside; "$3" logs each run; it
// stays inside until "$2" exists.
const overlapProbe = `mkdir "$1" || exit 99; echo run >> "$3"; while [ ! -e "$2" ]; do sleep 0.01; done; rmdir "$1"`

// Many copies of a job start at once; exactly one runs and
// the others are refused with 75. The one that runs stays inside until all
// others have exited, so a lock that let two in could not pass.
func TestConcurrentCopiesOneRunsOthersRefused75(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const copies = 12
	for round := range 3 {
		probe, gate, log := e.path(fmt.Sprint("probe", round)), e.path(fmt.Sprint("gate", round)), e.path(fmt.Sprint("log", round))
		procs := make(chan *clitest.Proc, copies)
		for range copies {
			p := clitest.Start(t, nil, "--redis", e.srv.URL(), "race", "sh", "-c", overlapProbe, "sh", probe, gate, log)
			go func() { <-p.Done(); procs <- p }()
		}
		count := map[int]int{}
		for i := range copies - 1 {
			select {
			case p := <-procs:
				r := p.Wait(0)
				count[r.Code]++
				if r.Code == 75 && !strings.Contains(r.Stderr, "lock:race is held by") {
					t.Errorf("refused copy said %q", r.Stderr)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("round %d: only %d of %d copies finished while one held the lock: %v", round, i, copies-1, count)
			}
		}
		touch(t, gate)
		count[(<-procs).Wait(0).Code]++
		if count[0] != 1 || count[75] != copies-1 {
			t.Errorf("round %d: exit codes %v, want one 0 and %d times 75", round, count, copies-1)
		}
		if b, _ := os.ReadFile(log); string(b) != "run\n" {
			t.Errorf("round %d: the job ran %d times, want once", round, strings.Count(string(b), "run"))
		}
		e.gone(t, "lock:race")
	}
}

// Copies that wait (-w) run one after the other,
// never two at once.
func TestWaitingCopiesRunOneAfterAnother(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const copies = 6
	probe, log := e.path("probe"), e.path("log")
	// Stay inside a moment, so that the copies queue up.
	const script = `mkdir "$1" || exit 99; echo run >> "$2"; sleep 0.05; rmdir "$1"`
	var procs []*clitest.Proc
	for range copies {
		procs = append(procs, clitest.Start(t, nil, "--redis", e.srv.URL(), "-w", "30s", "race", "sh", "-c", script, "sh", probe, log))
	}
	for _, p := range procs {
		if r := p.Wait(30 * time.Second); r.Code != 0 {
			t.Errorf("exit %d, stderr %q; want every copy to run alone (99: two overlapped)", r.Code, r.Stderr)
		}
	}
	if b, _ := os.ReadFile(log); strings.Count(string(b), "run") != copies {
		t.Errorf("the job ran %d times, want %d", strings.Count(string(b), "run"), copies)
	}
}

// The WITH_LOCK_* variables the
// command sees describe its own lock. Those inherited from the caller, or
// from an outer with-lock, are dropped first: a command whose lock has no
// --fence must not see another lock's fencing number.
func TestCommandSeesOnlyItsOwnLockVariables(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const show = `env | grep '^WITH_LOCK_' | sort`
	inner := []string{"--redis", e.srv.URL(), "inner", "sh", "-c", show}
	// vars parses the command's WITH_LOCK_* lines, one per name.
	vars := func(t *testing.T, out string) map[string]string {
		t.Helper()
		m := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			k, v, _ := strings.Cut(line, "=")
			if _, dup := m[k]; dup {
				t.Errorf("the command sees %s twice: %q", k, out)
			}
			m[k] = v
		}
		return m
	}
	check := func(t *testing.T, got map[string]string, notToken string) {
		t.Helper()
		if got["WITH_LOCK_NAME"] != "inner" || got["WITH_LOCK_KEY"] != "lock:inner" ||
			!tokenRE.MatchString(got["WITH_LOCK_TOKEN"]) || got["WITH_LOCK_TOKEN"] == notToken {
			t.Errorf("the command sees %q; want inner's name, key and token", got)
		}
		if f, ok := got["WITH_LOCK_FENCE"]; ok {
			t.Errorf("the command sees WITH_LOCK_FENCE=%s; its lock has no fence", f)
		}
	}

	t.Run("inherited from the caller", func(t *testing.T) {
		const token = "otherhost:1:0123456789abcdef0123456789abcdef"
		r := clitest.Run(t, []string{"WITH_LOCK_NAME=outer", "WITH_LOCK_KEY=lock:outer", "WITH_LOCK_TOKEN=" + token, "WITH_LOCK_FENCE=999"}, inner...)
		if r.Code != 0 {
			t.Fatalf("exit %d: %s", r.Code, r.Stderr)
		}
		check(t, vars(t, r.Stdout), token)
	})
	t.Run("from an outer with-lock --fence", func(t *testing.T) {
		outer := `echo "outer $WITH_LOCK_TOKEN $WITH_LOCK_FENCE"; exec "$@"`
		r := e.run(append([]string{"--fence", "outer", "sh", "-c", outer, "sh", clitest.Binary(t)}, inner...)...)
		first, rest, _ := strings.Cut(r.Stdout, "\n")
		fields := strings.Fields(first)
		if r.Code != 0 || len(fields) != 3 || fields[0] != "outer" || fields[2] == "" {
			t.Fatalf("exit %d, stdout %q, stderr %q; want the outer lock's token and fence, then the inner's variables", r.Code, r.Stdout, r.Stderr)
		}
		check(t, vars(t, rest), fields[1])
	})
}

// A signal passed on to the command that kills it kills with-lock too,
// once the lock is released: systemd then counts `systemctl stop` as a
// clean end (the unit ends inactive, not failed with status 143), and a
// shell reports 128+N as for the command itself. SIGQUIT, whose default action dumps core,
// is exited with 131 instead; a command that handles the signal and exits
// passes its own code on; and with-lock as PID 1 of a PID namespace, whom
// no signal can kill (a container's entrypoint), exits 128+N.
func TestForwardedSignalEndsWithLockAsItEndedTheCommand(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	for i, tc := range []struct {
		name    string
		sig     syscall.Signal
		prefix  []string
		command []string
		code    int            // with-lock's code, as a shell reports it
		diedOf  syscall.Signal // the signal that killed with-lock; 0 when it exited
	}{
		{"SIGTERM", syscall.SIGTERM, nil, []string{"sleep", "100"}, 143, syscall.SIGTERM},
		{"SIGINT", syscall.SIGINT, nil, []string{"sleep", "100"}, 130, syscall.SIGINT},
		{"SIGHUP", syscall.SIGHUP, nil, []string{"sleep", "100"}, 129, syscall.SIGHUP},
		{"SIGQUIT", syscall.SIGQUIT, nil, []string{"sleep", "100"}, 131, 0},
		{"handled by the command", syscall.SIGTERM, nil, []string{"sh", "-c", "trap 'exit 3' TERM; sleep 100 & wait"}, 3, 0},
		{"as PID 1", syscall.SIGTERM, []string{"unshare", "--pid", "--fork", "--mount-proc"}, []string{"sleep", "100"}, 143, 0},
	} {
		if signal.Ignored(tc.sig) {
			// Started with the signal ignored (nohup), with-lock cannot die
			// of it either: its default action is the ignoring it inherited.
			tc.diedOf = 0
		}
		t.Run(tc.name, func(t *testing.T) {
			name := "forwarded-" + strconv.Itoa(i)
			p := clitest.Spec{Env: redisEnv(srv), Args: append([]string{name}, tc.command...), Prefix: tc.prefix}.Start(t)
			clitest.Eventually(t, 10*time.Second, "lock:"+name+" taken", func() bool {
				return srv.Client().Exists(t.Context(), "lock:"+name).Val() == 1
			})
			time.Sleep(100 * time.Millisecond) // the command's trap set
			withLock := p.Pid()
			if tc.prefix != nil {
				withLock = childOf(p.Pid()) // unshare's child
			}
			signalPid(withLock, tc.sig)
			res := p.Wait(10 * time.Second)
			if tc.prefix != nil && res.Signal == 0 {
				// unshare exits as its child did, 128+N after signal N.
				res.Signal = map[bool]syscall.Signal{true: tc.diedOf}[res.Code == 128+int(tc.diedOf)]
			}
			if res.Code != tc.code || res.Signal != tc.diedOf {
				t.Errorf("with-lock ended %d (killed by %v), want %d (killed by %v); stderr %q", res.Code, res.Signal, tc.code, tc.diedOf, res.Stderr)
			}
			if srv.Client().Exists(t.Context(), "lock:"+name).Val() != 0 {
				t.Errorf("lock:%s still held: with-lock ended before releasing it", name)
			}
		})
	}
}

// Without --stop-timeout, a forwarded SIGTERM (systemctl stop) is not
// followed by SIGKILL, not even after --kill-after, which bounds only a
// command stopped for a lost lock: a command that ignores SIGTERM keeps
// with-lock waiting, with the lock held and renewed, until something kills
// with-lock; its process group dies with it. This is what
// docs/long-jobs.md and the man page's --stop-timeout say of the default
// (job_stop_test.go: with it).
func TestForwardedSignalIgnoredKeepsWithLockWaiting(t *testing.T) {
	t.Parallel()
	e := setup(t)
	pidfile := filepath.Join(t.TempDir(), "pids")
	const killAfter = 200 * time.Millisecond
	p := clitest.Start(t, redisEnv(e.srv), "--ttl", "2s", "--kill-after", killAfter.String(), "stubborn",
		"sh", "-c", `trap '' TERM; sleep 100 & printf '%s\n%s\n' $$ $! > "$0.tmp" && mv "$0.tmp" "$0"; wait`, pidfile)
	pids := clitest.ReadPids(t, 10*time.Second, pidfile, 2)
	t.Cleanup(func() {
		for _, pid := range pids {
			if clitest.Alive(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	p.Signal(syscall.SIGTERM)
	// Well past --kill-after and the 2s TTL: the lock is renewed, nothing
	// is killed, with-lock still waits. (What must not happen can only be
	// waited for.)
	time.Sleep(3 * time.Second)
	if p.Exited() {
		t.Fatalf("with-lock exited after a forwarded SIGTERM the command ignored; stderr %q", p.Stderr())
	}
	for _, pid := range pids {
		if !clitest.Alive(pid) {
			t.Errorf("pid %d was killed, though the lock was not lost", pid)
		}
	}
	if got := e.get("lock:stubborn"); got == "" {
		t.Error("the lock is not held while with-lock waits for the command")
	}
	p.Signal(syscall.SIGKILL) // systemd at TimeoutStopSec
	clitest.WaitDead(t, 10*time.Second, pids...)
	clitest.Eventually(t, 10*time.Second, "the lock never expired", func() bool {
		return e.rdb.Exists(context.Background(), "lock:stubborn").Val() == 0
	})
}

// In a terminal the command is in the foreground: it can read the
// terminal, and Ctrl-C reaches it. with-lock then exits 130 and releases.
func TestInteractiveCommandInTerminal(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	pty := clitest.OpenPTY(t)
	p := clitest.Spec{Env: redisEnv(srv), Terminal: pty, Args: []string{"--ttl", "2s", "tty",
		"sh", "-c", `printf 'name? '; read name; echo "got:$name"; exec sleep 100`}}.Start(t)
	p.WaitStdout("name? ")
	pty.Type([]byte("alice\n"))
	p.WaitStdout("got:alice")
	if rdb.Exists(context.Background(), "lock:tty").Val() != 1 {
		t.Fatal("lock not held while the command runs")
	}
	ctrlC := time.Now()
	pty.Type([]byte{0x03}) // Ctrl-C: SIGINT to the foreground group
	r := p.Wait(10 * time.Second)
	t.Logf("read %q from the terminal; Ctrl-C ended with-lock after %s with exit %d", "alice", time.Since(ctrlC).Round(time.Millisecond), r.Code)
	if r.Code != 130 || r.Signal != 0 {
		t.Errorf("exit %d (signal %v) after Ctrl-C, want 130; terminal output %q", r.Code, r.Signal, r.Stdout)
	}
	if rdb.Exists(context.Background(), "lock:tty").Val() != 0 {
		t.Error("lock not released after Ctrl-C")
	}
}
