package main_test

// The stop-before-expiry promise on a host that the jobs themselves load.

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// busyLoops is how many CPU-bound processes load the host: on the 2 cores
// of the machine the promise was found broken on, load 10.
const busyLoops = 8

// TestQuorumStopsCommandBeforeTheKeyCanExpireBesideBusyLoops runs the
// reliability table's two-masters-down fault beside busyLoops shell loops
// that never sleep: with-lock, its command and Redis get a share of the
// CPU and their timers fire late, yet the command must end before its key
// can expire on the surviving master.
//
// Not parallel: it loads the machine on purpose, and holds a bound in time.
func TestQuorumStopsCommandBeforeTheKeyCanExpireBesideBusyLoops(t *testing.T) {
	loadHost(t, busyLoops, 2*time.Minute)
	for i, row := range rlRows {
		if row.test == "QuorumStopsCommandBeforeTheKeyCanExpireWithTwoMastersDown" {
			rlRun(t, 100+i, row)
			return
		}
	}
	t.Fatal("the reliability table has no two-masters-down row")
}

// loadHost starts n busy loops (sh -c 'while :; do :; done'), killed when
// the test ends or after at most limit, whichever comes first.
func loadHost(t *testing.T, n int, limit time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	var loops []*exec.Cmd
	for range n {
		c := exec.CommandContext(ctx, "sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			cancel()
			t.Fatalf("start a busy loop: %v", err)
		}
		loops = append(loops, c)
	}
	t.Cleanup(func() {
		cancel() // kills them
		for _, c := range loops {
			_ = c.Wait()
		}
	})
}
