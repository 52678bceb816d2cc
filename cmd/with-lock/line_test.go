package main_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// Processes waiting with -w run in the order in which they started
// waiting.
func TestWaitersRunInArrivalOrder(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	holder := holdLock(t, srv, "fifo")
	order := filepath.Join(t.TempDir(), "order")
	var procs []*clitest.Proc
	for i := range 8 {
		// Each starts once the one before it is queued.
		procs = append(procs, startWaiting(t, srv, rdb, "lock:fifo",
			"-w", "1m", "fifo", "sh", "-c", fmt.Sprintf("echo %d >> %s", i, order)))
	}
	if err := holder.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Each hands the lock to the next in its release: quietly, as any
	// release that worked.
	for i, p := range procs {
		if r := p.Wait(waitFor); r.Code != 0 || r.Stderr != "" {
			t.Fatalf("waiter %d: exit %d, stderr %q; want 0 and silence", i, r.Code, r.Stderr)
		}
	}
	b, err := os.ReadFile(order)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Fields(string(b)), strings.Fields("0 1 2 3 4 5 6 7"); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("ran in order %v, want %v", got, want)
	}
}

// killedWaiterBound is the documented bound on how long a waiter killed
// with -9 can delay the next one: the life of its liveness key. Redis sees
// a killed process's connection close at once, and from then on releases
// skip it without delay; a turn that comes in the instant before hands it
// the lock, which then frees at its TTL, as a crashed holder's does.
const killedWaiterBound = 3 * time.Second

// A waiter killed with -9 while queued delays the one behind it by no more
// than the documented bound.
func TestKilledWaiterDelaysNextByAtMostBound(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	holder := holdLock(t, srv, "killed")
	dir := t.TempDir()
	killed := startWaiting(t, srv, rdb, "lock:killed", "-w", "1m", "killed", "touch", filepath.Join(dir, "killed-ran"))
	next := startWaiting(t, srv, rdb, "lock:killed", "-w", "1m", "killed", "touch", filepath.Join(dir, "next-ran"))
	killed.Signal(syscall.SIGKILL)
	clitest.WaitDead(t, waitFor, killed.Pid())
	// Redis reads the closed connection at once; until it has, the dead
	// waiter still counts as listening (see killedWaiterBound).
	clitest.Eventually(t, waitFor, "Redis never dropped the killed waiter's subscription", func() bool {
		return len(rdb.PubSubShardChannels(context.Background(), "{lock:killed}:w:*").Val()) == 1
	})
	released := time.Now()
	if err := holder.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	next.WaitFile(filepath.Join(dir, "next-ran"))
	delay := time.Since(released)
	t.Logf("the next waiter ran %s after the release", delay.Round(time.Millisecond))
	if delay > killedWaiterBound {
		t.Errorf("the next waiter ran %s after the release, want at most %s", delay, killedWaiterBound)
	}
	if r := next.Wait(waitFor); r.Code != 0 {
		t.Fatalf("next waiter: exit %d, stderr %s", r.Code, r.Stderr)
	}
	if exists(filepath.Join(dir, "killed-ran")) {
		t.Error("the killed waiter's command ran")
	}
	if n := lineLen(t, rdb, "lock:killed"); n != 0 {
		t.Errorf("%d entries left in the line", n)
	}
}
