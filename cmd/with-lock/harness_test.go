package main_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// Helpers of the renewal and fault tests. Their names start with "rn" to
// stay clear of the other CLI tests in this package.

// rnEnv points with-lock at srv.
func rnEnv(srv *redistest.Server) []string {
	return []string{"WITH_LOCK_REDIS=" + srv.URL()}
}

// rnTree is a command whose process tree is a shell and its background
// child; it writes both pids to pidfile, then waits. It stands for a job
// that runs other programs.
func rnTree(pidfile string) []string {
	return []string{"sh", "-c", `sleep 100 & printf '%s\n%s\n' $$ $! > "$0.tmp" && mv "$0.tmp" "$0"; wait`, pidfile}
}

// rnStartTree starts with-lock with flags on lock name running rnTree, and
// returns it with the tree's two pids once they run.
func rnStartTree(t *testing.T, srv *redistest.Server, name string, flags ...string) (*clitest.Proc, []int) {
	t.Helper()
	pidfile := filepath.Join(t.TempDir(), "pids")
	args := append(append(flags, name), rnTree(pidfile)...)
	p := clitest.Start(t, rnEnv(srv), args...)
	select {
	case <-p.Done():
		t.Fatalf("with-lock exited early: %+v", p.Wait(time.Second))
	default:
	}
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

// rnKeyState is one look at a lock key: its value and remaining time.
type rnKeyState struct {
	val  string
	pttl time.Duration
	err  error
}

func rnKey(rdb *redis.Client, key string) rnKeyState {
	ctx := context.Background()
	var get *redis.StringCmd
	var pttl *redis.DurationCmd
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		get, pttl = p.Get(ctx, key), p.PTTL(ctx, key)
		return nil
	})
	return rnKeyState{val: get.Val(), pttl: pttl.Val(), err: err}
}

// rnUntouched checks that the new owner's key, set with a one-minute TTL,
// still holds val and most of that minute.
func rnUntouched(t *testing.T, rdb *redis.Client, key, val string) {
	t.Helper()
	st := rnKey(rdb, key)
	if st.err != nil || st.val != val || st.pttl < 50*time.Second {
		t.Errorf("new owner's key %s = %q with TTL %s (%v); want %q untouched", key, st.val, st.pttl, st.err, val)
	}
}

// rnHasLine reports whether stderr has a line containing all of parts.
func rnHasLine(stderr string, parts ...string) bool {
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

func rnTouch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func rnRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// rnHostPid is how a token names the process pid of this host.
func rnHostPid(t *testing.T, pid int) (host, pidStr string) {
	t.Helper()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	return host, strconv.Itoa(pid)
}
