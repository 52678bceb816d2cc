package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// fairModes are the cross-Client runs: every goroutine has its own locker
// (its own go-redis client and connections), as separate processes or
// machines waiting with -w would, and loops lock, hold, unlock at once.
var fairModes = []struct {
	key        string
	goroutines int
}{
	{"clients8", 8},
	{"clients64", 64},
}

// runFair runs fairModes for every contended library but the one that
// opens a client per acquisition, in c.fairRounds interleaved rounds.
func runFair(c config, res *results, addr string, adm *redis.Client) error {
	if c.fairRounds == 0 {
		return nil
	}
	res.unlined = &libResult{lib: lib{name: "with-lock without the line (before it)"}, modes: map[string]*modeResult{}}
	fmt.Printf("fair line: %d rounds of %s per library and mode, a Client per waiter, hold %s\n", c.fairRounds, c.runFor, holdFor)
	floor := newGoRedis(addr)
	defer floor.Close()
	for round := range c.fairRounds {
		r, err := runRoundTrip(floor, c.runFor)
		if err != nil {
			return err
		}
		res.fairFloor.add(r)
		for _, m := range fairModes {
			for i := range res.libs {
				lr := res.libs[(i+round)%len(res.libs)]
				if !lr.lib.contended || lr.lib.name == "with-lock, a process per lock" {
					continue
				}
				own := make([]locker, m.goroutines)
				for g := range own {
					l, err := lr.lib.open(addr)
					if err != nil {
						return err
					}
					defer l.close()
					own[g] = l
				}
				r, err := runContended(lr.lib, nil, own, adm, m.goroutines, 1, false, c.runFor)
				if err != nil {
					return err
				}
				lr.mode(m.key).add(r)
				printFair(round, m.key, lr.lib.name, r)
				if lr.lib.name != "with-lock" {
					continue
				}
				// The same Clients without the line, in the same round:
				// a name ending in '}' has no line (wait_fair.go), so they
				// wait as before it, woken together by every release.
				for g := range own {
					own[g] = unlined{own[g]}
				}
				r, err = runContended(lr.lib, nil, own, adm, m.goroutines, 1, false, c.runFor)
				if err != nil {
					return err
				}
				res.unlined.mode(m.key).add(r)
				printFair(round, m.key, res.unlined.lib.name, r)
			}
		}
		r, err = runSlots(addr, adm, c.runFor)
		if err != nil {
			return err
		}
		res.slots.add(r)
		printFair(round, slotsMode, "with-lock --slots 3", r)
	}
	return nil
}

// fairTargets are issue 11's: fair, herd-free waiting across Clients,
// and semaphores that never exceed their slots.
func (r *results) fairTargets(add func(what string, met bool, format string, args ...any)) {
	if r.cfg.fairRounds == 0 {
		return
	}
	o := r.byName(oursName)
	for _, m := range fairModes {
		mr := o.mode(m.key)
		_, _, fair := mr.fairness()
		add(fmt.Sprintf("fair line, %d Clients: fairness ≥ 0.8", m.goroutines), fair >= 0.8, "%.2f", fair)
		c := medianF(mr.commands)
		add(fmt.Sprintf("fair line, %d Clients: ≤ 8 Redis commands per acquisition", m.goroutines), c <= 8, "%.1f", c)
		add(fmt.Sprintf("fair line, %d Clients: no overlap", m.goroutines), mr.overlaps == 0, "%d", mr.overlaps)
	}
	c8 := o.mode("clients8")
	add("fair line, 8 Clients: handoff p50 ≤ 0.3 ms", c8.p(50) <= 300*time.Microsecond, "%s", fmtMS(c8.p(50)))
	add("fair line, 8 Clients: handoff p99 ≤ 1 ms", c8.p(99) <= time.Millisecond, "%s", fmtMS(c8.p(99)))
	_, _, fair := r.slots.fairness()
	add("--slots 3, 16 Clients: fairness ≥ 0.8", fair >= 0.8, "%.2f", fair)
	add("--slots 3, 16 Clients: never more than 3 holders", r.slots.overlaps == 0, "%d times more in %d acquisitions", r.slots.overlaps, sum(r.slots.perWaiter))
}

func printFair(round int, mode, name string, r contended) {
	lo, hi := minMax(r.perWaiter)
	fmt.Printf("  round %d %-9s %-30s %5d acquisitions, min–max %d–%d, %.1f cmds/acq, p50 %s, p99 %s, %d overlaps, %d errors\n",
		round+1, mode, name, r.acquired, lo, hi, float64(r.commands)/float64(r.acquired),
		fmtMS(median(r.latencies)), fmtMS(percentile(r.latencies, 99)), r.overlaps, r.errors)
}

// unlined takes the lock called name+"}", a key that has no line.
type unlined struct{ locker }

func (u unlined) lock(ctx context.Context, name string) (unlockFunc, error) {
	return u.locker.lock(ctx, name+"}")
}

func minMax(xs []int) (lo, hi int) {
	lo, hi = xs[0], xs[0]
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}

// fairTable reports fairModes: fairness, commands per acquisition and
// handoff latency with 8 and 64 waiters, each with its own Client.
func (r *results) fairTable() string {
	if r.cfg.fairRounds == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n### Fair line: a Client per waiter (separate processes or machines), one lock held %s\n\n", holdFor)
	b.WriteString("Every goroutine has its own client and connections and loops lock, hold, unlock at once. Fairness: fewest acquisitions of one waiter over the most, summed over rounds. Commands: INFO total_commands_processed delta per acquisition, Lua-internal commands included, median over rounds. Handoff: release started → next acquire returned, pooled over rounds.\n\n")
	var rows [][]string
	overlaps, acquisitions := 0, 0
	for _, l := range append(r.libs, r.unlined) {
		if len(l.mode("clients8").perWaiter) == 0 {
			continue
		}
		row := []string{l.lib.name}
		for _, m := range fairModes {
			mr := l.mode(m.key)
			lo, hi, ratio := mr.fairness()
			row = append(row, fmt.Sprintf("%d–%d (%.2f)", lo, hi, ratio), fmt.Sprintf("%.1f", medianF(mr.commands)),
				fmtMS(mr.p(50)), fmtMS(mr.p(99)), fmt.Sprintf("%.0f", medianF(mr.rates)))
			overlaps += mr.overlaps
			for _, n := range mr.perWaiter {
				acquisitions += n
			}
		}
		rows = append(rows, row)
	}
	if f := &r.fairFloor; len(f.latencies) > 0 {
		rows = append(rows, []string{"floor: one round trip", "—", "5.0", fmtMS(f.p(50)), fmtMS(f.p(99)), "—", "—", "—", "—", "—", "—"})
	}
	b.WriteString(mdTable([]string{"library",
		"8 Clients: fairness min–max", "cmds/acq", "handoff p50", "p99", "acq/s",
		"64 Clients: fairness min–max", "cmds/acq", "handoff p50", "p99", "acq/s"}, rows))
	fmt.Fprintf(&b, "\nMutual exclusion, checked on every acquisition: %d overlaps in %d acquisitions.\n", overlaps, acquisitions)
	return b.String()
}
