// Package clitest builds the with-lock binary once per test process and runs
// it as a real subprocess, for end-to-end tests.
package clitest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RunTimeout bounds one run of the binary in Run; a hang fails the test.
const RunTimeout = 60 * time.Second

var build struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// Binary returns the path of a with-lock binary built from this checkout,
// building it on first use (once per test binary).
func Binary(t testing.TB) string {
	t.Helper()
	build.once.Do(func() {
		dir, err := os.MkdirTemp("", "with-lock-bin-")
		if err != nil {
			build.err = err
			return
		}
		_ = os.Chmod(dir, 0o755) // for tests that run it as another user
		build.path = filepath.Join(dir, "with-lock")
		cmd := exec.Command("go", "build", "-o", build.path, "./cmd/with-lock")
		cmd.Dir = moduleRoot()
		build.out, build.err = cmd.CombinedOutput()
	})
	if build.err != nil {
		t.Fatalf("build with-lock: %v\n%s", build.err, build.out)
	}
	return build.path
}

// moduleRoot is the directory holding go.mod, found from this source file.
func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Result is a finished run.
type Result struct {
	Code     int            // the exit code; 128+N, as a shell says it, if signal N killed with-lock
	Signal   syscall.Signal // the signal that killed with-lock, if one did
	Stdout   string
	Stderr   string
	Duration time.Duration
}

// command returns an *exec.Cmd for the binary with args and the environment
// plus env ("K=V"). WITH_LOCK_REDIS is removed from the inherited
// environment so tests say which Redis they mean.
func command(t testing.TB, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(Binary(t), args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "WITH_LOCK_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// Run runs the binary to completion (at most RunTimeout) and returns its
// exit code and output.
func Run(t testing.TB, env []string, args ...string) Result {
	t.Helper()
	return Start(t, env, args...).Wait(RunTimeout)
}

// Eventually polls cond every few milliseconds until it holds or timeout
// passes, then fails the test with msg.
func Eventually(t testing.TB, timeout time.Duration, msg string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", timeout, msg)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
