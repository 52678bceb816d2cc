package main

import (
	"context"
	"fmt"
	"strings"

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
				r, err := runContended(lr.lib, nil, own, adm, m.goroutines, false, c.runFor)
				if err != nil {
					return err
				}
				lr.mode(m.key).add(r)
				printFair(round, m.key, lr.lib.name, r)
				if lr.lib.name != "with-lock" {
					continue
				}
				// The same Clients without the line, in the same round:
				// a name ending in '}' has no line (line.go), so they
				// wait as before it, woken together by every release.
				for g := range own {
					own[g] = unlined{own[g]}
				}
				r, err = runContended(lr.lib, nil, own, adm, m.goroutines, false, c.runFor)
				if err != nil {
					return err
				}
				res.unlined.mode(m.key).add(r)
				printFair(round, m.key, res.unlined.lib.name, r)
			}
		}
	}
	return nil
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
