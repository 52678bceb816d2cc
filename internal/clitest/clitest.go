// Package clitest builds the with-lock binary once per test process and runs
// it as a real subprocess, for end-to-end tests.
package clitest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
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
	Code     int
	Stdout   string
	Stderr   string
	Duration time.Duration
}

// Command returns an *exec.Cmd for the binary with args and the environment
// plus env ("K=V"). WITH_LOCK_REDIS is removed from the inherited
// environment so tests say which Redis they mean.
func Command(t testing.TB, env []string, args ...string) *exec.Cmd {
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
	ctx, cancel := context.WithTimeout(context.Background(), RunTimeout)
	defer cancel()
	cmd := Command(t, env, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Start()
	if err != nil {
		t.Fatalf("start with-lock: %v", err)
	}
	waitDone := make(chan error, 1)
	go func() { waitDone <- cmd.Wait() }()
	select {
	case err = <-waitDone:
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-waitDone
		t.Fatalf("with-lock %q did not finish within %s", args, RunTimeout)
	}
	res := Result{Stdout: stdout.String(), Stderr: stderr.String(), Duration: time.Since(start)}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		res.Code = exit.ExitCode()
	default:
		t.Fatalf("run with-lock: %v", err)
	}
	return res
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
