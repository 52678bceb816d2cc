package main_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// waitFor bounds how long a test waits for with-lock to reach a state; far
// more than any of these steps takes, even on a loaded machine.
const waitFor = 15 * time.Second

// holdLock takes the lock called name for a minute, as another run would.
func holdLock(t *testing.T, srv *redistest.Server, name string) *withlock.Lock {
	t.Helper()
	l, err := withlock.New(srv.Client(), nil).TryAcquire(context.Background(), name, time.Minute, nil)
	if err != nil {
		t.Fatalf("take %s: %v", name, err)
	}
	return l
}

// startWaiting starts with-lock -w on a held lock and returns once it
// listens for the lock's release.
func startWaiting(t *testing.T, srv *redistest.Server, rdb *redis.Client, key string, args ...string) (*exec.Cmd, *bytes.Buffer, <-chan int) {
	t.Helper()
	cmd := clitest.Command(t, []string{"WITH_LOCK_REDIS=" + srv.URL()}, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start with-lock: %v", err)
	}
	codes := make(chan int, 1)
	go func() {
		err := cmd.Wait()
		var exit *exec.ExitError
		switch {
		case err == nil:
			codes <- 0
		case errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signaled():
			codes <- -int(exit.Sys().(syscall.WaitStatus).Signal()) // killed: -N
		case errors.As(err, &exit):
			codes <- exit.ExitCode()
		default:
			codes <- -1
		}
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	clitest.Eventually(t, waitFor, "with-lock never subscribed to the lock's release messages", func() bool {
		n, err := rdb.PubSubNumSub(context.Background(), key).Result()
		return err == nil && n[key] == 1
	})
	return cmd, &stderr, codes
}

func exitCode(t *testing.T, codes <-chan int) int {
	t.Helper()
	select {
	case code := <-codes:
		return code
	case <-time.After(waitFor):
		t.Fatalf("with-lock did not exit within %s", waitFor)
		return 0
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func TestWaitTimesOutWith75(t *testing.T) {
	srv := redistest.Start(t)
	holder := holdLock(t, srv, "busy")
	marker := filepath.Join(t.TempDir(), "ran")
	res := clitest.Run(t, []string{"WITH_LOCK_REDIS=" + srv.URL()}, "-w", "300ms", "busy", "touch", marker)
	if res.Code != 75 {
		t.Fatalf("exit %d, want 75; stderr: %s", res.Code, res.Stderr)
	}
	if exists(marker) {
		t.Errorf("the command ran although the lock stayed busy")
	}
	if res.Duration < 300*time.Millisecond {
		t.Errorf("gave up after %s, before the 300ms wait", res.Duration)
	}
	if !strings.Contains(res.Stderr, "gave up waiting") || !strings.Contains(res.Stderr, holder.Token()[:strings.LastIndexByte(holder.Token(), ':')]) {
		t.Errorf("stderr %q does not say who held the lock and that we gave up", res.Stderr)
	}
	if strings.Contains(res.Stderr, holder.Token()) {
		t.Errorf("stderr shows the holder's token")
	}
	if v, _ := srv.Client().Get(context.Background(), "lock:busy").Result(); v != holder.Token() {
		t.Errorf("lock:busy holds %q after the timeout, want the holder's token", v)
	}
}

func TestWaitRunsAfterRelease(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	holder := holdLock(t, srv, "job")
	marker := filepath.Join(t.TempDir(), "ran")
	_, stderr, codes := startWaiting(t, srv, rdb, "lock:job", "-w", "1m", "job", "touch", marker)
	if exists(marker) {
		t.Fatalf("the command ran while the lock was held")
	}
	if err := holder.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, codes); code != 0 {
		t.Fatalf("exit %d after the release, want 0; stderr: %s", code, stderr)
	}
	if !exists(marker) {
		t.Errorf("the command did not run after the lock was released")
	}
	if n, _ := rdb.Exists(context.Background(), "lock:job").Result(); n != 0 {
		t.Errorf("lock:job left behind")
	}
}

func TestWaitInterruptedExits130(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	holder := holdLock(t, srv, "job")
	marker := filepath.Join(t.TempDir(), "ran")
	cmd, stderr, codes := startWaiting(t, srv, rdb, "lock:job", "-w", "1m", "job", "touch", marker)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, codes); code != 130 {
		t.Fatalf("exit %d on SIGINT while waiting, want 130; stderr: %s", code, stderr)
	}
	if exists(marker) {
		t.Errorf("the command ran although with-lock was interrupted while waiting")
	}
	if !strings.Contains(stderr.String(), "command not run") {
		t.Errorf("stderr %q does not say the command was not run", stderr)
	}
	if v, _ := rdb.Get(context.Background(), "lock:job").Result(); v != holder.Token() {
		t.Errorf("lock:job holds %q, want the holder's token untouched", v)
	}
	if n, _ := rdb.PubSubNumSub(context.Background(), "lock:job").Result(); n["lock:job"] != 0 {
		t.Errorf("still subscribed after with-lock exited")
	}
}

// A SIGINT that races the release may find with-lock waiting, trying the
// SET, or already holding the lock; whichever, nothing stays locked.
func TestWaitInterruptRacingReleaseLeavesNoLock(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	for i := range 20 {
		holder := holdLock(t, srv, "race")
		cmd, stderr, codes := startWaiting(t, srv, rdb, "lock:race", "-w", "1m", "race", "true")
		if err := holder.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(i) * 100 * time.Microsecond)
		_ = cmd.Process.Signal(syscall.SIGINT)
		// 130: interrupted while waiting (or the command was). 0: it
		// finished first. Killed by SIGINT: it came after with-lock had
		// released and stopped handling signals, on its way out.
		if code := exitCode(t, codes); code != 130 && code != 0 && code != -int(syscall.SIGINT) {
			t.Fatalf("iteration %d: exit %d, want 130 or 0; stderr: %s", i, code, stderr)
		}
		if n, _ := rdb.Exists(context.Background(), "lock:race").Result(); n != 0 {
			t.Fatalf("iteration %d: lock:race left behind after with-lock exited", i)
		}
	}
}
