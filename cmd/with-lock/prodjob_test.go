package main_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
)

// prodJobScript is the command of a prodJob: it records its token and that
// it started, then waits until the test lets it finish, and exits 3.
const prodJobScript = `echo "$WITH_LOCK_TOKEN" > "$1/token"; touch "$1/started"
while [ ! -e "$1/go" ]; do sleep 0.02; done; exit 3`

// prodJob is with-lock running a command that the test lets finish.
type prodJob struct {
	t              *testing.T
	dir            string
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	exited         chan struct{} // closed once with-lock has exited
	err            error         // cmd.Wait's, valid after exited
}

// startProdJob runs with-lock with args (flags and the lock's name) and the
// job's command.
func startProdJob(t *testing.T, env []string, args ...string) *prodJob {
	t.Helper()
	j := &prodJob{t: t, dir: t.TempDir(), exited: make(chan struct{})}
	args = append(args, "sh", "-c", prodJobScript, "sh", j.dir)
	j.cmd = clitest.Command(t, env, args...)
	j.cmd.Stdout, j.cmd.Stderr = &j.stdout, &j.stderr
	if err := j.cmd.Start(); err != nil {
		t.Fatalf("start with-lock: %v", err)
	}
	go func() {
		j.err = j.cmd.Wait()
		close(j.exited)
	}()
	t.Cleanup(func() {
		_ = j.cmd.Process.Kill() // harmless once it has exited and been reaped
		<-j.exited
	})
	return j
}

// Started reports whether the command has started.
func (j *prodJob) Started() bool {
	_, err := os.Stat(filepath.Join(j.dir, "started"))
	return err == nil
}

// WaitStarted waits until the command runs and returns its token.
func (j *prodJob) WaitStarted() string {
	j.t.Helper()
	clitest.Eventually(j.t, 30*time.Second, "the command started", func() bool {
		select {
		case <-j.exited:
			j.t.Fatalf("with-lock exited before the command started: %s", j.stderr.String())
		default:
		}
		return j.Started()
	})
	b, err := os.ReadFile(filepath.Join(j.dir, "token"))
	if err != nil {
		j.t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// Finish lets the command exit and returns with-lock's exit code and stderr.
func (j *prodJob) Finish() (int, string) {
	j.t.Helper()
	if err := os.WriteFile(filepath.Join(j.dir, "go"), nil, 0o600); err != nil {
		j.t.Fatal(err)
	}
	return j.Wait()
}

// Wait waits for with-lock to exit and returns its code and stderr.
func (j *prodJob) Wait() (int, string) {
	j.t.Helper()
	select {
	case <-j.exited:
		var exit *exec.ExitError
		if j.err != nil && !errors.As(j.err, &exit) {
			j.t.Fatalf("wait for with-lock: %v", j.err)
		}
		return j.cmd.ProcessState.ExitCode(), j.stderr.String()
	case <-time.After(clitest.RunTimeout):
		j.t.Fatalf("with-lock did not exit within %s", clitest.RunTimeout)
		return 0, ""
	}
}

// prodMarker returns a command that creates a file when it runs, and the
// function that tells whether it ran.
func prodMarker(t *testing.T) ([]string, func() bool) {
	path := filepath.Join(t.TempDir(), "ran")
	return []string{"touch", path}, func() bool {
		_, err := os.Stat(path)
		return err == nil
	}
}
