package main_test

// The reliability table: every fault in every mode, against a fenced
// resource.

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

// expiry is when the key expires on servers[i]: its PEXPIRETIME, the
// absolute time on the server's clock, which is this host's. Unlike now
// plus its PTTL, it does not move earlier when the test is slow to send
// the command, as it is on a loaded host.
func (tr *rlTrial) expiry(i int) time.Time {
	tr.t.Helper()
	at, err := tr.servers[i].Client().PExpireTime(tr.t.Context(), "lock:"+tr.name).Result()
	if err != nil || at <= 0 {
		tr.t.Fatalf("lock key's PEXPIRETIME %v (%v), want it held with a TTL", at, err)
	}
	return time.UnixMilli(at.Milliseconds())
}

// Not parallel: it holds a bound in time, kept clear of the parallel
// tests' load.
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

// The faults of the reliability table, one row each. A trial returns its
// detection latency: from the moment named in the row's latency field to
// the death of the old holder's command, as the resource saw its socket
// close.
var rlRows = []rlRow{
	{
		fault:  "holder paused (with-lock SIGSTOPped past its TTL, command runs on)",
		test:   "PausedHolderOverlapsUntilResumedAndTheFenceRefusesItsWrites",
		window: rlWhilePaused, bound: time.Second, latency: "with-lock's SIGCONT",
		trial: func(tr *rlTrial) time.Duration {
			a, old := tr.holder()
			a.Signal(syscall.SIGSTOP)
			b, next := tr.holder("-w", "10s") // once the TTL has run out
			tr.res.waitFor(5*time.Second, "the paused holder's command refused after the new holder wrote", func() bool {
				return next.Accepted > 0 && old.Refused > 0
			})
			return tr.resume(a, old, b)
		},
	},
	{
		fault:  "whole host paused (with-lock and command SIGSTOPped past the TTL)",
		test:   "PausedHostOverlapsUntilResumedAndTheFenceRefusesTheWakingCommand",
		window: rlWhilePaused, bound: time.Second, latency: "with-lock's SIGCONT, after the command's first write on waking",
		trial: func(tr *rlTrial) time.Duration {
			a, old := tr.holder()
			frStopped(tr.t, old.Pid, syscall.SIGSTOP)
			a.Signal(syscall.SIGSTOP)
			b, next := tr.holder("-w", "10s")
			tr.wrote(next)
			// The command wakes first, so it surely writes before with-lock
			// can stop it: the case the fence is for.
			if err := syscall.Kill(old.Pid, syscall.SIGCONT); err != nil {
				tr.t.Fatal(err)
			}
			tr.res.waitFor(5*time.Second, "the woken command's write refused", func() bool { return old.Refused > 0 })
			return tr.resume(a, old, b)
		},
	},
	{
		fault:  "Redis restarted empty (kill -9, no persistence)",
		test:   "RedisRestartedEmptyOverlapsAtMostOneIntervalAndTheFenceStillIncreases",
		window: rlInterval + 700*time.Millisecond, bound: rlInterval + 700*time.Millisecond,
		latency: "Redis back up, a renewal interval before the next renewal",
		trial: func(tr *rlTrial) time.Duration {
			return tr.overtaken(tr.servers[0].Restart, "-w", "5s")
		},
	},
	{
		fault: "Redis stalled (redis-server SIGSTOPped for 1.5×TTL)",
		test:  "StalledRedisStopsCommandBeforeTheKeyCanExpireSoNoOverlap",
		bound: rlTTL, latency: "redis-server's SIGSTOP; each trial also checks it came before the key's expiry",
		trial: func(tr *rlTrial) time.Duration {
			a, old := tr.holder("--redis-timeout", "5s")
			expiry := tr.expiry(0)
			tr.servers[0].Signal(syscall.SIGSTOP)
			paused := time.Now()
			resumed := false
			defer func() {
				if !resumed {
					tr.servers[0].Signal(syscall.SIGCONT)
				}
			}()
			end := tr.res.waitEnd(old, 3*rlTTL)
			tr.t.Logf("the command ended %s before the key could expire", expiry.Sub(end).Round(time.Millisecond))
			if !end.Before(expiry) {
				tr.t.Errorf("command ran until %s after the key could expire", end.Sub(expiry))
			}
			time.Sleep(time.Until(paused.Add(rlTTL * 3 / 2))) // the fault's length, not a wait for an event
			tr.servers[0].Signal(syscall.SIGCONT)
			resumed = true
			tr.lost(a)
			b, next := tr.holder("-w", "5s")
			tr.wrote(next)
			tr.stop(b)
			return end.Sub(paused)
		},
	},
	{
		fault:  "takeover (another client deletes the key, the next with-lock acquires)",
		test:   "TakeoverOverlapsAtMostOneIntervalAndTheFenceRefusesTheOldHolder",
		window: rlInterval + 700*time.Millisecond, bound: rlInterval + 700*time.Millisecond,
		latency: "the DEL, a renewal interval before the next renewal",
		trial: func(tr *rlTrial) time.Duration {
			return tr.overtaken(func() {
				if err := tr.servers[0].Client().Del(tr.t.Context(), "lock:"+tr.name).Err(); err != nil {
					tr.t.Fatal(err)
				}
			})
		},
	},
	{
		fault: "with-lock killed (kill -9)",
		test:  "KilledHolderTakesItsCommandAlongSoNoOverlap",
		bound: 250 * time.Millisecond, latency: "the SIGKILL",
		trial: func(tr *rlTrial) time.Duration {
			a, old := tr.holder()
			a.Signal(syscall.SIGKILL)
			killed := time.Now()
			end := tr.res.waitEnd(old, 5*time.Second)
			b, next := tr.holder("-w", "5s") // once the TTL has run out
			tr.wrote(next)
			tr.stop(b)
			return end.Sub(killed)
		},
	},
	{
		fault: "one quorum master down (of 3), then back empty with a foreign key on it",
		test:  "QuorumKeepsItsLockWithOneMasterDownAndRepairsItOnceTheForeignKeyExpires",
		// The holder learns of the foreign key only from the renewal that
		// reaches the restarted master, and go-redis redials a server that
		// refused connections about once a second: the key is back by the
		// first renewal after both.
		quorum: true, bound: rlTTL + rlTTL/3,
		latency: "the foreign key's expiry on the restarted master to the holder's key back there (a repair at the first renewal that reaches it, not a detection)",
		trial: func(tr *rlTrial) time.Duration {
			a, old := tr.holder()
			tr.servers[0].Kill()
			// A contender waits more than a TTL: renewal on the other two
			// must keep the lock ours throughout.
			c := tr.start("-w", (rlTTL * 3 / 2).String())
			if res := c.Wait(10 * time.Second); res.Code != 75 {
				tr.t.Errorf("contender exited %d, want 75 (busy); stderr %q", res.Code, res.Stderr)
			}
			// Back empty, with a key someone else left there: the holder
			// cannot repair this master until that key expires.
			key, token := "lock:"+tr.name, lookAt(tr.servers[1].Client(), "lock:"+tr.name).val
			tr.servers[0].Restart()
			restarted := tr.servers[0].Client()
			const foreignTTL = 200 * time.Millisecond
			if err := restarted.Set(tr.t.Context(), key, foreign, foreignTTL).Err(); err != nil {
				tr.t.Fatal(err)
			}
			expired := time.Now().Add(foreignTTL)
			clitest.Eventually(tr.t, 2*rlTTL, "the holder's key back on the restarted master", func() bool {
				return restarted.Get(tr.t.Context(), key).Val() == token
			})
			repaired := time.Now()
			if !tr.res.running(old) {
				tr.t.Error("the holder's command was stopped: the lock was lost with one master of three down")
			}
			tr.stop(a)
			return repaired.Sub(expired)
		},
	},
	{
		fault:  "two quorum masters down (of 3)",
		test:   "QuorumStopsCommandBeforeTheKeyCanExpireWithTwoMastersDown",
		quorum: true, bound: rlTTL, latency: "the second master's kill -9; each trial also checks it came before the key's expiry",
		trial: func(tr *rlTrial) time.Duration {
			a, old := tr.holder()
			expiry := tr.expiry(0)
			tr.servers[1].Kill()
			tr.servers[2].Kill()
			down := time.Now()
			end := tr.res.waitEnd(old, 3*rlTTL)
			tr.t.Logf("the command ended %s before the key could expire", expiry.Sub(end).Round(time.Millisecond))
			if !end.Before(expiry) {
				tr.t.Errorf("command ran until %s after the key could expire on the surviving master", end.Sub(expiry))
			}
			tr.lost(a)
			tr.servers[1].Restart() // empty, as is the next one
			tr.servers[2].Restart()
			b, next := tr.holder("-w", "5s")
			tr.wrote(next)
			tr.stop(b)
			return end.Sub(down)
		},
	},
}

// overtaken is a trial in which the lock goes away under a running holder
// just after a renewal (fault) and a second with-lock, started with args,
// takes it. It returns the time from the fault to the end of the first
// holder's command.
func (tr *rlTrial) overtaken(fault func(), args ...string) time.Duration {
	a, old := tr.holder()
	tr.afterRenewal()
	fault()
	at := time.Now()
	b, _ := tr.holder(args...)
	end := tr.res.waitEnd(old, 5*time.Second)
	tr.lost(a)
	tr.stop(b)
	return end.Sub(at)
}

// resume ends a trial whose first holder a (running command old) was paused
// while b took the lock: it resumes a and returns the time from then until
// old's end.
func (tr *rlTrial) resume(a *clitest.Proc, old *frHolder, b *clitest.Proc) time.Duration {
	resumed := time.Now()
	a.Signal(syscall.SIGCONT)
	end := tr.res.waitEnd(old, 5*time.Second)
	tr.lost(a)
	tr.stop(b)
	return end.Sub(resumed)
}
