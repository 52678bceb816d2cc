package main_test

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// The reliability table: each fault a few times over, with a real command
// writing to a fenced resource (fenced_resource_test.go). Each row logs
// fault | trials | overlaps | stale fenced writes accepted | detection
// latency, and asserts what docs/reliability.md promises.

const (
	rlTTL      = time.Second
	rlInterval = rlTTL / 3
	rlTrials   = 3
	// rlWhilePaused: the two holders' commands overlap for as long as the
	// old holder is paused; the README says so and the fence covers it.
	rlWhilePaused time.Duration = -1
)

// rlRow is one fault of the table.
type rlRow struct {
	fault   string        // as the table names it
	test    string        // the subtest: the behaviour pinned
	quorum  bool          // three masters, no --fence
	window  time.Duration // longest overlap admitted; 0 none, rlWhilePaused
	bound   time.Duration // detection latency bound; 0 nothing to detect
	latency string        // what the latency measures
	trial   func(tr *rlTrial) time.Duration
}

// rlTrial is one run of a row's fault, with its own lock name and resource.
type rlTrial struct {
	t       *testing.T
	res     *frResource
	servers []*redistest.Server // one, or three for a quorum
	env     []string
	flags   []string
	name    string
}

// start runs with-lock with the trial's flags and extra on the worker.
func (tr *rlTrial) start(extra ...string) *clitest.Proc {
	tr.t.Helper()
	args := slices.Concat(tr.flags, extra, []string{tr.name}, frCommand(tr.t))
	return clitest.Start(tr.t, tr.env, args...)
}

// holder starts with-lock and waits until its command reaches the resource.
func (tr *rlTrial) holder(extra ...string) (*clitest.Proc, *frHolder) {
	tr.t.Helper()
	p := tr.start(extra...)
	return p, tr.res.next(10 * time.Second)
}

// lost waits for with-lock to exit 125, the lock lost.
func (tr *rlTrial) lost(p *clitest.Proc) {
	tr.t.Helper()
	if res := p.Wait(10 * time.Second); res.Code != 125 {
		tr.t.Errorf("with-lock exited %d, want 125 (lock lost); stderr %q", res.Code, res.Stderr)
	}
}

// stop ends a holder that kept its lock: SIGTERM, passed on to the command.
func (tr *rlTrial) stop(p *clitest.Proc) {
	tr.t.Helper()
	p.Signal(syscall.SIGTERM)
	if res := p.Wait(10 * time.Second); res.Code != 128+int(syscall.SIGTERM) {
		tr.t.Errorf("with-lock exited %d after SIGTERM, want 143; stderr %q", res.Code, res.Stderr)
	}
}

// wrote waits until h has had a write accepted.
func (tr *rlTrial) wrote(h *frHolder) {
	tr.t.Helper()
	tr.res.waitFor(5*time.Second, "the new holder's command wrote", func() bool { return h.Accepted > 0 })
}

// afterRenewal waits until the key's TTL was just set back to rlTTL, so
// a fault lands a whole renewal interval before the next renewal.
func (tr *rlTrial) afterRenewal() {
	tr.t.Helper()
	rdb := tr.servers[0].Client()
	clitest.Eventually(tr.t, 2*rlTTL, "a renewal of the lock", func() bool {
		st := lookAt(rdb, "lock:"+tr.name)
		return st.err == nil && st.pttl > rlTTL-80*time.Millisecond
	})
}

// expiry is the earliest the key can expire on servers[i], as far as the
// test can tell: now plus its PTTL, read after now.
func (tr *rlTrial) expiry(i int) time.Time {
	tr.t.Helper()
	before := time.Now()
	st := lookAt(tr.servers[i].Client(), "lock:"+tr.name)
	if st.err != nil || st.pttl <= 0 {
		tr.t.Fatalf("lock key %+v, want it held with a TTL", st)
	}
	return before.Add(st.pttl)
}

func TestReliability(t *testing.T) {
	var table []string
	for i, row := range rlRows {
		t.Run(row.test, func(t *testing.T) {
			table = append(table, rlRun(t, i, row))
		})
	}
	t.Logf("fault | trials | overlaps | stale fenced writes accepted | detection latency (median, measured from)\n%s",
		strings.Join(table, "\n"))
}

// rlRun runs row's trials, asserts what the README promises and returns
// its line of the table.
func rlRun(t *testing.T, i int, row rlRow) string {
	n := 1
	if row.quorum {
		n = 3
	}
	var servers []*redistest.Server
	flags := []string{"--ttl", rlTTL.String(), "--redis-timeout", "2s"}
	for range n {
		s := redistest.Start(t)
		servers = append(servers, s)
		flags = append(flags, "--redis", s.URL())
	}
	if !row.quorum {
		flags = append(flags, "--fence")
	}
	var latencies []time.Duration
	overlaps, stale, refused := 0, 0, 0
	var longest time.Duration
	for trial := range rlTrials {
		tr := &rlTrial{t: t, res: frStart(t), servers: servers, flags: flags,
			name: fmt.Sprintf("rl-%d-%d", i, trial)}
		tr.env = []string{tr.res.env()}
		latency := row.trial(tr)
		tally := tr.res.tally()
		t.Logf("trial %d: latency %s, overlap %s, stale writes accepted %d, writes refused %d",
			trial, latency.Round(time.Millisecond), max(tally.overlap, 0).Round(time.Millisecond), tally.stale, tally.refused)
		latencies = append(latencies, latency)
		if tally.overlap > 0 {
			overlaps++
			longest = max(longest, tally.overlap)
		}
		stale += tally.stale
		refused += tally.refused
		switch {
		case row.window == 0 && tally.overlap > 0:
			t.Errorf("trial %d: two commands ran at once for %s; this fault must not let them", trial, tally.overlap)
		case row.window > 0 && tally.overlap > row.window:
			t.Errorf("trial %d: two commands ran at once for %s, want at most %s", trial, tally.overlap, row.window)
		case row.window == rlWhilePaused && (tally.overlap <= 0 || tally.refused == 0):
			t.Errorf("trial %d: overlap %s, %d writes refused; want the paused holder's command still running and refused",
				trial, tally.overlap, tally.refused)
		}
		if row.bound > 0 && latency > row.bound {
			t.Errorf("trial %d: latency %s (from %s), want within %s", trial, latency, row.latency, row.bound)
		}
	}
	if !row.quorum && stale != 0 {
		t.Errorf("%d stale fenced writes accepted, want 0", stale)
	}
	staleCol := fmt.Sprintf("%d (%d refused)", stale, refused)
	if row.quorum {
		staleCol = "n/a (no --fence on a quorum)"
	}
	overlapCol := fmt.Sprintf("%d", overlaps)
	if overlaps > 0 {
		overlapCol = fmt.Sprintf("%d (longest %s)", overlaps, longest.Round(time.Millisecond))
	}
	latCol := "none: the lock is never lost"
	if row.bound > 0 {
		slices.Sort(latencies)
		latCol = fmt.Sprintf("%s (bound %s), from %s", latencies[len(latencies)/2].Round(time.Millisecond), row.bound.Round(time.Millisecond), row.latency)
	}
	line := fmt.Sprintf("%s | %d | %s | %s | %s", row.fault, rlTrials, overlapCol, staleCol, latCol)
	t.Log(line)
	return line
}
