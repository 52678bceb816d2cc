package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// clockJumpTTL is the holders' --ttl: 3s, or CLOCK_JUMP_TTL to
// measure another (docs/reliability.md gives the default's figures).
func clockJumpTTL(t *testing.T) time.Duration {
	if v := os.Getenv("CLOCK_JUMP_TTL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("CLOCK_JUMP_TTL: %v", err)
		}
		return d
	}
	return 3 * time.Second
}

// A step forward of the Redis server's clock expires every lock at once:
// each holder finds its key gone at its next renewal, within a renewal
// interval (a third of the TTL), stops its job (exit 125), and says in one
// line that Redis's clock jumped. Before the step none says it.
func TestServerClockStepForwardStopsEveryHolderAndIsSaid(t *testing.T) {
	t.Parallel()
	srv, clock := redistest.StartSteppedClock(t)
	mon := srv.Monitor()
	ttl := clockJumpTTL(t)
	const holders, step = 3, time.Hour
	dir := t.TempDir()
	var procs []*clitest.Proc
	var probes []string
	for i := range holders {
		probe := filepath.Join(dir, fmt.Sprint("probe", i))
		probes = append(probes, probe)
		procs = append(procs, clitest.Start(t, redisEnv(srv), "--ttl", ttl.String(), fmt.Sprint("job", i), "sh", "-c",
			`mkdir "$0"; trap 'rmdir "$0"; exit 143' TERM; while :; do sleep 0.05; done`, probe))
	}
	for i, p := range procs {
		p.WaitFile(probes[i])
	}
	// Every holder has renewed twice (its first renewal reads the server's
	// clock, the second compares): two extend scripts on each key.
	renewals := map[string]int{}
	clitest.Eventually(t, 4*ttl+clitest.WaitTimeout, "every holder renews twice", func() bool {
		for _, c := range mon.Commands() { // those since the last call
			if len(c.Args) > 3 && c.Args[0] == "eval" {
				renewals[c.Args[3]]++ // EVAL script numkeys key...
			}
		}
		for i := range holders {
			if renewals[fmt.Sprint("lock:job", i)] < 2 {
				return false
			}
		}
		return true
	})
	for i, p := range procs {
		if strings.Contains(p.Stderr(), "Redis's clock") {
			t.Errorf("holder %d spoke of the clock before it moved: %s", i, p.Stderr())
		}
	}
	jumped := time.Now()
	clock.Step(step)
	stopped := make([]time.Duration, holders)
	clitest.Eventually(t, ttl+clitest.WaitTimeout, "every holder's job is stopped", func() bool {
		left := 0
		for i, probe := range probes {
			if stopped[i] > 0 {
				continue
			}
			if _, err := os.Stat(probe); os.IsNotExist(err) {
				stopped[i] = time.Since(jumped)
				continue
			}
			left++
		}
		return left == 0
	})
	interval := ttl / 3
	for i, p := range procs {
		r := p.Wait(clitest.WaitTimeout)
		t.Logf("holder %d (--ttl %s): job stopped %s after the step; %s", i, ttl, stopped[i].Round(time.Millisecond), lastLine(r.Stderr))
		if r.Code != 125 {
			t.Errorf("holder %d exited %d, want 125 (lost); stderr:\n%s", i, r.Code, r.Stderr)
		}
		if !hasLine(r.Stderr, "Redis's clock jumped 1h0m", "ahead of this host's between two renewals of lock:job"+strconv.Itoa(i)) ||
			!hasLine(r.Stderr, "lost: the key expired", "Redis's clock jumped 1h0m") {
			t.Errorf("holder %d did not say that Redis's clock jumped, and that it lost the lock to it; stderr:\n%s", i, r.Stderr)
		}
		// Its next renewal finds the key gone: within an interval, and a
		// loaded machine's lateness, which a TTL more covers.
		if stopped[i] > interval+ttl {
			t.Errorf("holder %d's job ran %s after the step, want within the renewal interval %s", i, stopped[i], interval)
		}
	}
}

// lastLine is the last line of s.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndex(s, "\n")+1:]
}
