package main_test

import (
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
	"golang.org/x/sys/unix"
)

// A signal to with-lock reaches the command; with-lock waits for it,
// releases the lock and exits as the command did.
func TestSignalReachesCommandAndExitFollowsIt(t *testing.T) {
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
		if err := os.WriteFile(gate, nil, 0o644); err != nil {
			t.Fatal(err)
		}
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
