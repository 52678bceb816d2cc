package main_test

import (
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
)

// --jitter waits a random time up to DUR before the first try, and a
// different one in each run: runs that cron starts in the same second
// reach Redis spread over DUR. Each run's -v lines show its delay, and its
// acquisition comes after it.
//
// Not parallel: it holds a bound in time, kept clear of the parallel
// tests' load.
func TestJitterDelaysEachRunsFirstTryByItsOwnRandomTime(t *testing.T) {
	e := setup(t)
	const runs, jitter = 8, 400 * time.Millisecond
	procs := make([]*clitest.Proc, runs)
	for i := range procs {
		procs[i] = clitest.Start(t, nil, "--redis", e.srv.URL(), "-v", "--jitter", jitter.String(), "job-"+string(rune('a'+i)), "true")
	}
	line := regexp.MustCompile(`(?m)^with-lock: (\S+) waiting (\S+) before the first try \(--jitter 400ms\)$`)
	acquired := regexp.MustCompile(`(?m)^with-lock: (\S+) acquired `)
	var delays []time.Duration
	for _, p := range procs {
		r := p.Wait(10 * time.Second)
		if r.Code != 0 {
			t.Fatalf("exit %d, want 0: %s", r.Code, r.Stderr)
		}
		m, a := line.FindStringSubmatch(r.Stderr), acquired.FindStringSubmatch(r.Stderr)
		if m == nil || a == nil {
			t.Fatalf("-v does not say how long the run waited before acquiring:\n%s", r.Stderr)
		}
		// A draw in [0, 400ms), which the log rounds to the millisecond: a
		// draw past 399.5ms reads "400ms" (one run in 800).
		d, err := time.ParseDuration(m[2])
		if err != nil || d < 0 || d > jitter {
			t.Fatalf("waited %q, want a time in [0, %s]", m[2], jitter)
		}
		waitedAt, err1 := time.Parse(time.RFC3339Nano, m[1])
		acquiredAt, err2 := time.Parse(time.RFC3339Nano, a[1])
		if err1 != nil || err2 != nil {
			t.Fatalf("timestamps %q, %q: %v %v", m[1], a[1], err1, err2)
		}
		// The log's times are in whole milliseconds.
		if got := acquiredAt.Sub(waitedAt); got < d-time.Millisecond {
			t.Errorf("acquired %s after announcing a jitter of %s: the run did not wait", got, d)
		}
		delays = append(delays, d)
	}
	// Eight draws in [0, 400ms) lie within 50ms of each other with a
	// probability of about 4 in a million.
	if spread := slices.Max(delays) - slices.Min(delays); spread < 50*time.Millisecond {
		t.Errorf("the runs waited %v: within %s of each other, not spread over --jitter", delays, spread)
	}
}

// A signal during --jitter ends the run at once, 128+N, the command not
// run, and nothing sent to Redis: the jitter comes before the first try.
func TestSignalDuringJitterEndsTheRunBeforeAnyCommandReachesRedis(t *testing.T) {
	t.Parallel()
	e := setup(t)
	mon := e.srv.Monitor()
	p := clitest.Start(t, nil, "--redis", e.srv.URL(), "-v", "--jitter", "1h", "job", "touch", e.path("ran"))
	p.WaitStderr("before the first try (--jitter 1h)")
	p.Signal(syscall.SIGTERM)
	r := p.Wait(5 * time.Second)
	if r.Code != 128+int(syscall.SIGTERM) {
		t.Errorf("exit %d, want %d", r.Code, 128+int(syscall.SIGTERM))
	}
	if !strings.Contains(r.Stderr, "terminated during --jitter, before trying lock:job; command not run") {
		t.Errorf("stderr does not say the run ended during --jitter: %s", r.Stderr)
	}
	e.notRun("ran")
	if cmds := mon.Commands(); len(cmds) > 0 {
		t.Errorf("Redis ran %v, want nothing from a run that ended during --jitter", cmds)
	}
}
