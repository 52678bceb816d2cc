package main_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// env is one test's Redis, a client on it and a scratch directory.
type env struct {
	t   *testing.T
	srv *redistest.Server
	rdb *redis.Client
	dir string
}

func setup(t *testing.T, redisConfig ...string) *env {
	t.Helper()
	srv := redistest.Start(t, redisConfig...)
	return &env{t: t, srv: srv, rdb: srv.Client(), dir: t.TempDir()}
}

// run runs with-lock against the test's Redis, named with --redis.
func (e *env) run(args ...string) clitest.Result {
	e.t.Helper()
	return clitest.Run(e.t, nil, append([]string{"--redis", e.srv.URL()}, args...)...)
}

func (e *env) path(name string) string { return filepath.Join(e.dir, name) }

func (e *env) exists(name string) bool {
	_, err := os.Stat(e.path(name))
	return err == nil
}

func (e *env) get(key string) string {
	e.t.Helper()
	v, err := e.rdb.Get(context.Background(), key).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		e.t.Fatalf("GET %s: %v", key, err)
	}
	return v
}

// foreign is a lock value another process would have written.
const (
	foreign       = "otherhost:4242:0123456789abcdef0123456789abcdef"
	foreignSecret = "0123456789abcdef0123456789abcdef"
)

// oneLine checks that with-lock said exactly one line on stderr, in its
// own name, and nothing on stdout.
func oneLine(t *testing.T, r clitest.Result, want string) {
	t.Helper()
	if !strings.HasPrefix(r.Stderr, "with-lock: ") || strings.Count(r.Stderr, "\n") != 1 || !strings.HasSuffix(r.Stderr, "\n") {
		t.Errorf("stderr %q: want exactly one line starting with \"with-lock: \"", r.Stderr)
	}
	if !strings.Contains(r.Stderr, want) {
		t.Errorf("stderr %q does not mention %q", r.Stderr, want)
	}
	if r.Stdout != "" {
		t.Errorf("stdout %q: want nothing", r.Stdout)
	}
}

var tokenRE = regexp.MustCompile(`^(.+):(\d+):([0-9a-f]{32})$`)

// held is a with-lock run whose command has started and waits for its
// stdin to close. The command wrote what it saw of WITH_LOCK_*.
type held struct {
	cmd              *exec.Cmd
	stdin            io.WriteCloser
	stdout, stderr   bytes.Buffer
	done             chan error
	name, key, token string
}

// startHeld runs `with-lock --redis URL flags... name <command>` where the
// command writes its WITH_LOCK_NAME, _KEY and _TOKEN to a file, waits for
// its stdin to reach EOF and exits with exitCode. It returns once the
// command runs.
func (e *env) startHeld(flags []string, name string, exitCode int) *held {
	e.t.Helper()
	info := e.path("info-" + strconv.FormatInt(time.Now().UnixNano(), 36))
	script := `printf '%s\n%s\n%s\n' "$WITH_LOCK_NAME" "$WITH_LOCK_KEY" "$WITH_LOCK_TOKEN" > "$1.tmp" && mv "$1.tmp" "$1"; read line; exit "$2"`
	args := append([]string{"--redis", e.srv.URL()}, flags...)
	args = append(args, name, "sh", "-c", script, "sh", info, strconv.Itoa(exitCode))
	h := &held{cmd: clitest.Command(e.t, nil, args...), done: make(chan error, 1)}
	h.cmd.Stdout, h.cmd.Stderr = &h.stdout, &h.stderr
	var err error
	if h.stdin, err = h.cmd.StdinPipe(); err != nil {
		e.t.Fatal(err)
	}
	if err := h.cmd.Start(); err != nil {
		e.t.Fatalf("start with-lock: %v", err)
	}
	e.t.Cleanup(func() { _ = h.cmd.Process.Kill() })
	go func() { h.done <- h.cmd.Wait() }()
	clitest.Eventually(e.t, 20*time.Second, "the command under with-lock never started", func() bool {
		select {
		case err := <-h.done:
			h.done <- err
			e.t.Fatalf("with-lock exited (%v) before the command started; stderr: %s", err, &h.stderr)
		default:
		}
		_, err := os.Stat(info)
		return err == nil
	})
	b, err := os.ReadFile(info)
	if err != nil {
		e.t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 3 {
		e.t.Fatalf("command saw WITH_LOCK_* = %q", lines)
	}
	h.name, h.key, h.token = lines[0], lines[1], lines[2]
	return h
}

// finish lets the command end and returns how with-lock exited.
func (h *held) finish(t *testing.T) clitest.Result {
	t.Helper()
	_ = h.stdin.Close()
	var err error
	select {
	case err = <-h.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("with-lock did not exit 30s after its command was told to")
	}
	r := clitest.Result{Stdout: h.stdout.String(), Stderr: h.stderr.String()}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		r.Code = exit.ExitCode()
	default:
		t.Fatalf("wait for with-lock: %v", err)
	}
	return r
}

// Seed 000, check 1: the binary builds and is executable.
func TestBinaryIsExecutable(t *testing.T) {
	fi, err := os.Stat(clitest.Binary(t))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&0o111 == 0 || !fi.Mode().IsRegular() {
		t.Errorf("%s has mode %v, want an executable file", fi.Name(), fi.Mode())
	}
}

// Seed 000, check 2: the command runs, and afterwards the lock is gone.
func TestRunsCommandAndReleases(t *testing.T) {
	e := setup(t)
	r := e.run("x", "touch", e.path("ran"))
	if r.Code != 0 || r.Stderr != "" || r.Stdout != "" {
		t.Errorf("with-lock x touch = %d, %q, %q; want 0 and silence", r.Code, r.Stdout, r.Stderr)
	}
	if !e.exists("ran") {
		t.Error("the command did not run")
	}
	if n := e.rdb.Exists(context.Background(), "lock:x").Val(); n != 0 {
		t.Error("lock:x still exists after the command")
	}
}

// Seed 000, check 3: the command's exit code passes through.
func TestExitCodePassesThrough(t *testing.T) {
	e := setup(t)
	for _, code := range []int{0, 1, 3, 42, 75, 255} {
		r := e.run("x", "sh", "-c", "exit "+strconv.Itoa(code))
		if r.Code != code || r.Stderr != "" {
			t.Errorf("command exiting %d: with-lock exited %d, stderr %q", code, r.Code, r.Stderr)
		}
	}
}

// Seed 000, check 4: during the run the key exists with a TTL of at most
// 30s, holding a token unique to the run; the command sees it.
func TestKeyDuringRun(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	host, _ := os.Hostname()
	var tokens []string
	for range 2 {
		h := e.startHeld(nil, "x", 0)
		if h.name != "x" || h.key != "lock:x" {
			t.Errorf("WITH_LOCK_NAME, WITH_LOCK_KEY = %q, %q; want x, lock:x", h.name, h.key)
		}
		if got := e.get("lock:x"); got != h.token {
			t.Errorf("lock:x holds %q while WITH_LOCK_TOKEN is %q", got, h.token)
		}
		if ttl := e.rdb.PTTL(ctx, "lock:x").Val(); ttl <= 0 || ttl > 30*time.Second {
			t.Errorf("PTTL of lock:x during the run = %v, want in (0, 30s]", ttl)
		}
		m := tokenRE.FindStringSubmatch(h.token)
		if m == nil || m[1] != host || m[2] != strconv.Itoa(h.cmd.Process.Pid) {
			t.Errorf("token %q: want %s:%d:<32 hex>, naming with-lock's host and pid", h.token, host, h.cmd.Process.Pid)
		}
		tokens = append(tokens, h.token)
		if r := h.finish(t); r.Code != 0 || r.Stderr != "" {
			t.Errorf("with-lock exited %d, stderr %q", r.Code, r.Stderr)
		}
	}
	if tokens[0] == tokens[1] {
		t.Errorf("two runs used the same token %q", tokens[0])
	}
}

// Seed 000, check 5: a busy lock makes with-lock exit 75 at once, without
// running the command, and leaves the lock alone.
func TestBusyRefusedFast(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.rdb.Set(ctx, "lock:x", foreign, 30*time.Second)
	const timeout = 20 * time.Second
	r := e.run("--redis-timeout", timeout.String(), "x", "touch", e.path("ran"))
	if r.Code != 75 {
		t.Errorf("busy lock: exit %d, want 75", r.Code)
	}
	oneLine(t, r, "lock:x is held by otherhost:4242")
	if strings.Contains(r.Stderr, foreignSecret) {
		t.Errorf("stderr %q shows the holder's token", r.Stderr)
	}
	if e.exists("ran") {
		t.Error("the command ran although the lock was busy")
	}
	if got := e.get("lock:x"); got != foreign {
		t.Errorf("lock:x became %q, want the holder's token", got)
	}
	// Fast: it does not wait for anything, in particular no timeout.
	if r.Duration >= timeout/2 {
		t.Errorf("refusal took %v, want well under the %v Redis timeout", r.Duration, timeout)
	}
}

// Seed 000, check 6: a lock taken over while the command ran survives our
// release; with-lock says so and still exits with the command's code.
func TestTakenOverLockSurvivesRelease(t *testing.T) {
	e := setup(t)
	h := e.startHeld(nil, "x", 3)
	e.rdb.Set(context.Background(), "lock:x", foreign, 30*time.Second)
	r := h.finish(t)
	if r.Code != 3 {
		t.Errorf("exit %d, want the command's 3", r.Code)
	}
	oneLine(t, r, "lock:x was no longer ours")
	if strings.Contains(r.Stderr, h.token) || strings.Contains(r.Stderr, randomPart(h.token)) {
		t.Errorf("stderr %q shows our token", r.Stderr)
	}
	if got := e.get("lock:x"); got != foreign {
		t.Errorf("lock:x became %q after our release, want the new owner's token", got)
	}
}

func randomPart(token string) string { return token[strings.LastIndexByte(token, ':')+1:] }

// Seed 000, check 7: on the wire, acquire is one SET NX EX and release is
// one EVAL of the compare-and-delete script; nothing else reaches Redis
// from with-lock but the connection's HELLO.
func TestWire(t *testing.T) {
	script, err := os.ReadFile("../../release.lua")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ttl        string
		unit, span string
	}{
		{"", "ex", "30"},
		{"1500ms", "px", "1500"},
	} {
		e := setup(t)
		mon := e.srv.Monitor()
		args := []string{"x", "true"}
		if tc.ttl != "" {
			args = append([]string{"--ttl", tc.ttl}, args...)
		}
		if r := e.run(args...); r.Code != 0 {
			t.Fatalf("with-lock %q: exit %d, %s", args, r.Code, r.Stderr)
		}
		var sent []string
		var set, eval []string
		for _, c := range mon.Commands() {
			if c.Client == "lua" {
				continue // what the script itself did
			}
			sent = append(sent, c.Args[0])
			switch c.Args[0] {
			case "set":
				set = c.Args
			case "eval":
				eval = c.Args
			}
		}
		if !slices.Equal(sent, []string{"hello", "set", "eval"}) {
			t.Errorf("with-lock %q sent %q, want exactly hello, set, eval", args, sent)
		}
		if len(set) != 6 || !tokenRE.MatchString(set[2]) {
			t.Fatalf("SET = %q, want set lock:x <token> %s %s nx", set, tc.unit, tc.span)
		}
		wantSet := []string{"set", "lock:x", set[2], tc.unit, tc.span, "nx"}
		if !slices.Equal(set, wantSet) {
			t.Errorf("SET = %q, want %q", set, wantSet)
		}
		wantEval := []string{"eval", string(script), "1", "lock:x", set[2], "0"}
		if !slices.Equal(eval, wantEval) {
			t.Errorf("EVAL = %q, want release.lua with key lock:x and the SET's token", eval)
		}
	}
}

// TestNeverThroughAShell: arguments reach the command as they are.
func TestNeverThroughAShell(t *testing.T) {
	e := setup(t)
	marker := e.path("marker")
	args := []string{"$(touch " + marker + ")", "`touch " + marker + "`", ";", "|", "&&", "*", "$HOME", "a b", "'q'", ""}
	r := e.run(append([]string{"x", "printf", `[%s]\n`}, args...)...)
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	var want strings.Builder
	for _, a := range args {
		fmt.Fprintf(&want, "[%s]\n", a)
	}
	if r.Stdout != want.String() {
		t.Errorf("command printed\n%s\nwant the arguments verbatim\n%s", r.Stdout, want.String())
	}
	if e.exists("marker") {
		t.Error("a shell ran the arguments: the marker exists")
	}
}
