package main_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/config"
	"github.com/with-lock/with-lock/internal/keys"
	"github.com/with-lock/with-lock/internal/redistest"
)

// The helpers every test of the CLI shares. with-lock runs only through
// clitest, Redis only through redistest.

func TestMain(m *testing.M) {
	if sock := os.Getenv(frWorkerEnv); sock != "" {
		frWorker(sock) // the reliability table's command: runs until with-lock stops it
		os.Exit(1)
	}
	before := jobCgroups()
	code := m.Run()
	if left := leftCgroups(before); code == 0 && len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: runs of with-lock left their jobs' cgroups behind: %s\n", strings.Join(left, " "))
		code = 1
	}
	os.Exit(code)
}

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

func (e *env) exists(name string) bool { return exists(e.path(name)) }

// notRun checks that the command, which would create marker, did not run.
func (e *env) notRun(marker string) {
	e.t.Helper()
	if e.exists(marker) {
		e.t.Errorf("the command ran")
	}
}

func (e *env) get(key string) string {
	e.t.Helper()
	v, err := e.rdb.Get(context.Background(), key).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		e.t.Fatalf("GET %s: %v", key, err)
	}
	return v
}

func (e *env) gone(t *testing.T, key string) {
	t.Helper()
	if n := e.rdb.Exists(context.Background(), key).Val(); n != 0 {
		t.Errorf("%s was left behind", key)
	}
}

// redisEnv points with-lock at srv.
func redisEnv(srv *redistest.Server) []string {
	return []string{"WITH_LOCK_REDIS=" + srv.URL()}
}

// foreign is a lock value another process would have written.
const (
	foreign       = "otherhost:4242:0123456789abcdef0123456789abcdef"
	foreignSecret = "0123456789abcdef0123456789abcdef"
)

var tokenRE = regexp.MustCompile(`^(.+):(\d+):([0-9a-z]+\.[0-9a-f]{32})$`)

// randomPart is the secret part of a token, which no message may show.
func randomPart(token string) string { return keys.Secret(token) }

// holderOf is how messages name a token's holder: its host:pid, never the
// random part.
func holderOf(token string) string { return keys.Holder(token) }

// fenceKey is the key of the fencing counter of the lock called name under
// the default prefix.
func fenceKey(name string) string { return keys.Fence(keys.Lock(config.DefaultPrefix, name)) }

// deadlineMargin is how long before the TTL runs out with-lock presumes a
// lock it cannot renew lost (docs/long-jobs.md's local deadline), asked of the
// library's KeepAlive on rdb rather than copied from it: the TTL minus the
// time from Lock.Acquired to KeepAlive.Deadline.
func deadlineMargin(t *testing.T, rdb redis.UniversalClient, ttl time.Duration) time.Duration {
	t.Helper()
	ctx := context.Background()
	l, err := withlock.New(rdb, &withlock.Options{Prefix: "margin-probe:"}).TryAcquire(ctx, t.Name(), ttl, nil)
	if err != nil {
		t.Fatalf("probe lock for the margin: %v", err)
	}
	ka := l.KeepAlive(ctx, nil)
	margin := ttl - ka.Deadline().Sub(l.Acquired())
	ka.Stop()
	if err := l.Release(ctx); err != nil {
		t.Fatalf("releasing the probe lock: %v", err)
	}
	return margin
}

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

// hasLine reports whether stderr has a line containing all of parts.
func hasLine(stderr string, parts ...string) bool {
	for _, line := range strings.Split(stderr, "\n") {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			return true
		}
	}
	return false
}

// jobScript is the command of a job: it records what it saw of
// WITH_LOCK_NAME, _KEY and _TOKEN, waits until the test lets it finish
// ("$1/go" exists) and exits "$2".
const jobScript = `printf '%s\n%s\n%s\n' "$WITH_LOCK_NAME" "$WITH_LOCK_KEY" "$WITH_LOCK_TOKEN" > "$1/info.tmp" && mv "$1/info.tmp" "$1/info"
while [ ! -e "$1/go" ]; do sleep 0.02; done; exit "$2"`

// job is with-lock running a command that holds the lock until the test
// lets it finish; name, key and token are what the command saw.
type job struct {
	*clitest.Proc
	t                *testing.T
	dir              string
	name, key, token string
}

// startJob runs with-lock with args (flags and the lock's name) on a
// command that exits with exitCode once finished, and returns once the
// command runs.
func startJob(t *testing.T, env []string, exitCode int, args ...string) *job {
	t.Helper()
	j := &job{t: t, dir: t.TempDir()}
	args = append(args, "sh", "-c", jobScript, "sh", j.dir, strconv.Itoa(exitCode))
	j.Proc = clitest.Start(t, env, args...)
	j.WaitFile(filepath.Join(j.dir, "info"))
	lines := strings.Split(strings.TrimSuffix(readFile(t, filepath.Join(j.dir, "info")), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("command saw WITH_LOCK_NAME, _KEY, _TOKEN = %q", lines)
	}
	j.name, j.key, j.token = lines[0], lines[1], lines[2]
	return j
}

// startJob runs a job against the test's Redis, named with --redis.
func (e *env) startJob(exitCode int, args ...string) *job {
	e.t.Helper()
	return startJob(e.t, nil, exitCode, append([]string{"--redis", e.srv.URL()}, args...)...)
}

// finish lets the command exit and returns how with-lock exited.
func (j *job) finish() clitest.Result {
	j.t.Helper()
	touch(j.t, filepath.Join(j.dir, "go"))
	return j.Wait(clitest.RunTimeout)
}

// marker returns a command that creates a file when it runs, and the
// function that tells whether it ran.
func marker(t *testing.T) ([]string, func() bool) {
	path := filepath.Join(t.TempDir(), "ran")
	return []string{"touch", path}, func() bool { return exists(path) }
}

// tree is a command whose process tree is a shell and its background
// child; it writes both pids to pidfile, then waits. It stands for a job
// that runs other programs.
func tree(pidfile string) []string {
	return []string{"sh", "-c", `sleep 100 & printf '%s\n%s\n' $$ $! > "$0.tmp" && mv "$0.tmp" "$0"; wait`, pidfile}
}

// startTree starts with-lock with flags on lock name running tree, and
// returns it with the tree's two pids once they run.
func startTree(t *testing.T, srv *redistest.Server, name string, flags ...string) (*clitest.Proc, []int) {
	t.Helper()
	pidfile := filepath.Join(t.TempDir(), "pids")
	p := clitest.Start(t, redisEnv(srv), append(append(flags, name), tree(pidfile)...)...)
	p.WaitFile(pidfile)
	pids := clitest.ReadPids(t, 10*time.Second, pidfile, 2)
	t.Cleanup(func() { // a failed test must not leave the tree behind
		for _, pid := range pids {
			if clitest.Alive(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	return p, pids
}

// keyState is one look at a lock key: its value and remaining time.
type keyState struct {
	val  string
	pttl time.Duration
	err  error
}

func lookAt(rdb *redis.Client, key string) keyState {
	ctx := context.Background()
	var get *redis.StringCmd
	var pttl *redis.DurationCmd
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		get, pttl = p.Get(ctx, key), p.PTTL(ctx, key)
		return nil
	})
	return keyState{val: get.Val(), pttl: pttl.Val(), err: err}
}

// untouched checks that the new owner's key, set with a one-minute TTL,
// still holds val and most of that minute.
func untouched(t *testing.T, rdb *redis.Client, key, val string) {
	t.Helper()
	st := lookAt(rdb, key)
	if st.err != nil || st.val != val || st.pttl < 50*time.Second {
		t.Errorf("new owner's key %s = %q with TTL %s (%v); want %q untouched", key, st.val, st.pttl, st.err, val)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func touch(t *testing.T, path string) {
	t.Helper()
	writeFile(t, path, nil, 0o644)
}

// writeFile writes data to path with perm, or fails the test, and returns
// path. An executable is written with forks held off (syscall.ForkLock):
// a child forked by a parallel test while the file is open for writing
// holds the descriptor until it execs, and running the file meanwhile
// fails with ETXTBSY, exit 126 (golang.org/issue/22315).
func writeFile(t *testing.T, path string, data []byte, perm os.FileMode) string {
	t.Helper()
	if perm&0o111 != 0 {
		syscall.ForkLock.Lock()
		defer syscall.ForkLock.Unlock()
	}
	if err := os.WriteFile(path, data, perm); err != nil {
		t.Fatal(err)
	}
	return path
}

// conf writes a config file into the test's directory and returns its path.
func (e *env) conf(name, text string) string {
	e.t.Helper()
	return writeFile(e.t, e.path(name), []byte(text), 0o644)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// hostPid is how a token names the process pid of this host.
func hostPid(t *testing.T, pid int) (host, pidStr string) {
	t.Helper()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	return host, strconv.Itoa(pid)
}
