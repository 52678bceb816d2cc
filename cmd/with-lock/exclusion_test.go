package main_test

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// probe is a critical section that fails with 99 if it is not alone:
// mkdir is atomic, so a second holder finds the directory there. It holds
// for hold seconds and cleans up when stopped by a lost lock too.
func probe(dir, hold string) []string {
	return []string{"sh", "-c",
		`mkdir "$0" 2>/dev/null || exit 99
trap 'rmdir "$0"; exit 143' TERM
sleep "$1" & wait $!
rmdir "$0"`, filepath.Join(dir, "probe"), hold}
}

// churn runs workers goroutines, each running with-lock trials times in
// a row on one lock, and counts the exit codes.
func churn(t *testing.T, srv *redistest.Server, workers, trials int, args ...string) map[int]int {
	t.Helper()
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range trials {
				res := clitest.Run(t, redisEnv(srv), args...)
				mu.Lock()
				codes[res.Code]++
				mu.Unlock()
				if res.Code != 0 && res.Code != 125 {
					t.Logf("exit %d: %s", res.Code, res.Stderr)
				}
			}
		})
	}
	wg.Wait()
	return codes
}

// Mutual exclusion under churn: many processes, many trials, critical
// sections longer than the TTL so only renewal keeps them exclusive: no
// overlap.
func TestNoOverlapUnderChurn(t *testing.T) {
	t.Parallel() // load-tolerant: runs beside the other parallel tests, after the timing-critical ones
	srv := redistest.Start(t)
	dir := t.TempDir()
	const workers, trials = 5, 3
	// Each section holds 350ms on a 300ms TTL: renewed three times.
	args := append([]string{"-w", "30s", "--ttl", "300ms", "churn"}, probe(dir, "0.35")...)
	start := time.Now()
	codes := churn(t, srv, workers, trials, args...)
	t.Logf("%d processes × %d trials, 350ms sections on a 300ms TTL, in %s: exit codes %v (0 ran alone, 99 overlap, 125 lock presumed lost and job stopped)",
		workers, trials, time.Since(start).Round(time.Millisecond), codes)
	if codes[99] != 0 {
		t.Errorf("%d critical sections were not alone", codes[99])
	}
	if codes[0]+codes[125] != workers*trials {
		t.Errorf("exit codes %v: every trial should have run (0) or been stopped on a lost lock (125)", codes)
	}
	if codes[0] < workers*trials/2 {
		t.Errorf("only %d of %d trials kept their lock: renewal is not working", codes[0], workers*trials)
	}
}

// The probe can fail: without renewal the same sections overlap, because
// the TTL runs out under them.
func TestProbeSeesOverlapWithoutRenewal(t *testing.T) {
	t.Parallel() // load-tolerant: runs beside the other parallel tests, after the timing-critical ones
	srv := redistest.Start(t)
	dir := t.TempDir()
	args := append([]string{"--no-renew", "-w", "30s", "--ttl", "200ms", "churn"}, probe(dir, "0.6")...)
	codes := churn(t, srv, 2, 1, args...)
	t.Logf("2 processes, 600ms sections on a 200ms TTL with --no-renew: exit codes %v", codes)
	if codes[99] == 0 {
		t.Errorf("exit codes %v: the probe did not see the overlap that --no-renew allows", codes)
	}
}
