package main

import (
	"fmt"
	"strings"
	"time"
)

const oursName = "with-lock"

// report is what a run prints, also embedded in BENCHMARKS.md.
type report struct {
	text    string // the tables and the targets, in Markdown
	targets []target
}

type target struct {
	what, measured string
	met            bool
}

func (r *results) report() report {
	var b strings.Builder
	b.WriteString(r.uncontendedTable())
	b.WriteString("\n" + r.throughputRatios() + "\n" + r.pairedThroughput())
	b.WriteString(r.cpuTable())
	b.WriteString(r.contendedTable())
	b.WriteString(r.fairTable())
	b.WriteString(r.slotsTable())
	b.WriteString(r.cliTable())
	b.WriteString(r.trackingTable())
	b.WriteString(r.pipedTable())
	b.WriteString(r.listTable())
	b.WriteString(r.scaleTables())
	rep := report{targets: r.targets()}
	b.WriteString("\n### Targets, ratios from this run\n\n")
	for _, t := range rep.targets {
		mark := "met"
		if !t.met {
			mark = "MISSED"
		}
		fmt.Fprintf(&b, "- %s: %s — %s\n", t.what, t.measured, mark)
	}
	rep.text = b.String()
	return rep
}

// partial is the table of one part, for -only.
func (r *results) partial(part string) string {
	switch part {
	case "uncontended":
		r.targets()
		return r.uncontendedTable() + fmt.Sprintf("\nwith-lock / raw floor, median of per-round ratios: %.3f\n", r.pairedRatio) + r.throughputRatios() + r.pairedThroughput() + r.cpuTable()
	case "contended":
		return r.contendedTable()
	case "tracking":
		return r.trackingTable()
	case "fair":
		var b strings.Builder
		b.WriteString(r.fairTable() + r.slotsTable())
		r.fairTargets(func(what string, met bool, format string, args ...any) {
			fmt.Fprintf(&b, "- %s: %s — %v\n", what, fmt.Sprintf(format, args...), met)
		})
		return b.String()
	case "piped":
		var b strings.Builder
		b.WriteString(r.pipedTable() + "\n")
		r.pipedTargets(func(what string, met bool, format string, args ...any) {
			fmt.Fprintf(&b, "- %s: %s — %v\n", what, fmt.Sprintf(format, args...), met)
		})
		return b.String()
	case "list":
		var b strings.Builder
		b.WriteString(r.listTable() + "\n")
		r.listTargets(func(what string, met bool, format string, args ...any) {
			fmt.Fprintf(&b, "- %s: %s — %v\n", what, fmt.Sprintf(format, args...), met)
		})
		return b.String()
	case "scale":
		var b strings.Builder
		b.WriteString(r.scaleTables() + "\n")
		r.scaleTargets(func(what string, met bool, format string, args ...any) {
			fmt.Fprintf(&b, "- %s: %s — %v\n", what, fmt.Sprintf(format, args...), met)
		})
		return b.String()
	}
	var b strings.Builder
	b.WriteString(r.cliTable() + "\n")
	r.cliTargets(func(what string, met bool, format string, args ...any) {
		fmt.Fprintf(&b, "- %s: %s — %v\n", what, fmt.Sprintf(format, args...), met)
	})
	return b.String()
}

func (r *results) uncontendedTable() string {
	var b strings.Builder
	b.WriteString("### Uncontended: lock+unlock pairs, each goroutine on its own lock\n\n")
	var rows [][]string
	for _, l := range r.libs {
		if !l.lib.uncontended {
			continue
		}
		us1, us16 := medianF(l.us1), medianF(l.us16)
		rows = append(rows, []string{l.lib.name,
			fmt.Sprintf("%.0f", us1), fmt.Sprintf("%.0f", 1e6/us1), fmt.Sprintf("%.1f", medianF(l.allocs1)),
			fmt.Sprintf("%.0f", us16), fmt.Sprintf("%.0f", 16e6/us16), fmt.Sprintf("%.1f", medianF(l.allocs16)),
			fmt.Sprintf("%.1f", medianF(l.cmds))})
	}
	b.WriteString(mdTable([]string{"library", "1 goroutine: µs/pair", "pairs/s", "allocs/pair", "16 goroutines: µs/pair", "pairs/s", "allocs/pair", "Redis commands/pair"}, rows))
	return b.String()
}

// throughputRatios compares with-lock's uncontended pairs/s (medians) with
// each other contestant's, at 1 and 16 goroutines: ≥ 1 means with-lock is
// faster.
func (r *results) throughputRatios() string {
	var b strings.Builder
	o := r.byName(oursName)
	for _, l := range r.libs {
		if !l.lib.uncontended || l == o {
			continue
		}
		fmt.Fprintf(&b, "with-lock pairs/s over %s: %.3f (1 goroutine), %.3f (16)\n", l.lib.name,
			medianF(l.us1)/medianF(o.us1), medianF(l.us16)/medianF(o.us16))
	}
	return b.String()
}

// pairedThroughput compares with-lock's uncontended pairs/s with each
// other contestant's as the median over rounds of the ratio of the two
// measured in the same round, at 1 and 16 goroutines: a slow spell of the
// shared machine slows both sides of a ratio.
func (r *results) pairedThroughput() string {
	var b strings.Builder
	o := r.byName(oursName)
	for _, l := range r.libs {
		if !l.lib.uncontended || l == o {
			continue
		}
		fmt.Fprintf(&b, "with-lock pairs/s over %s, median of per-round ratios: %.3f (1 goroutine), %.3f (16)\n", l.lib.name,
			paired(o.us1, l.us1), paired(o.us16, l.us16))
	}
	return b.String()
}

// cpuTable is the CPU time per uncontended pair at 1 and at 16
// goroutines, medians over rounds: what a pair costs the two cores the
// bench process and redis-server share, whatever else runs on the machine.
func (r *results) cpuTable() string {
	var rows [][]string
	for _, l := range r.libs {
		if !l.lib.uncontended {
			continue
		}
		c1, s1 := medianF(l.clientCPU1), medianF(l.serverCPU1)
		c, s := medianF(l.clientCPU16), medianF(l.serverCPU16)
		rows = append(rows, []string{l.lib.name,
			fmt.Sprintf("%.1f", c1), fmt.Sprintf("%.1f", s1), fmt.Sprintf("%.2f", medianF(l.scriptUs1)),
			fmt.Sprintf("%.1f", c), fmt.Sprintf("%.1f", s), fmt.Sprintf("%.1f", c+s), fmt.Sprintf("%.2f", medianF(l.scriptUs16)), fmt.Sprintf("%.0f", medianF(l.bytes16))})
	}
	return "\nCPU per pair, µs (medians over rounds); \"release script\" is redis-server's time in one EVAL or EVALSHA (the commands it ran included), from INFO commandstats; the last column is the bench process's heap allocation per pair at 16 goroutines:\n\n" +
		mdTable([]string{"library", "1 goroutine: bench process", "redis-server", "release script", "16 goroutines: bench process", "redis-server", "sum", "release script", "bytes/pair"}, rows)
}

func (r *results) contendedTable() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n### Contended: goroutines on one lock, each holding it %s\n\n", holdFor)
	b.WriteString("Handoff: release started → next acquire returned, when the releaser waits until another goroutine has acquired (every handoff goes to a waiter). Plain loop: the releaser calls lock again at once. Commands: INFO total_commands_processed delta per acquisition, Lua-internal commands included. The floor row is no lock at all: one goroutine that, after each 1 ms hold, sends the release script and the next owner's SET NX PX in one pipelined round trip — the least any handoff can take, since the release has to reach Redis and the next owner has to hear back.\n\n")
	var rows [][]string
	overlaps, acquisitions := 0, 0
	var errs []string
	for _, l := range r.libs {
		if !l.lib.contended {
			continue
		}
		h, p, h16 := l.mode("handoff8"), l.mode("plain8"), l.mode("handoff16")
		lo, hi, ratio := h.fairness()
		plo, phi, pratio := p.fairness()
		rows = append(rows, []string{l.lib.name,
			fmtMS(h.p(50)), fmtMS(h.p(99)), fmt.Sprintf("%.0f", medianF(h.rates)), fmt.Sprintf("%.1f", medianF(h.commands)),
			fmt.Sprintf("%d–%d (%.2f)", lo, hi, ratio),
			fmtMS(p.p(50)), fmtMS(p.p(99)), fmt.Sprintf("%.0f", medianF(p.rates)), fmt.Sprintf("%.1f", medianF(p.commands)),
			fmt.Sprintf("%d–%d (%.2f)", plo, phi, pratio),
			fmtMS(h16.p(50)), fmt.Sprintf("%.1f", medianF(h16.commands))})
		for _, key := range []string{"handoff8", "plain8", "handoff16"} {
			if m := l.mode(key); m.errors > 0 {
				errs = append(errs, fmt.Sprintf("%s %d (%s)", l.lib.name, m.errors, key))
			}
		}
		for _, m := range l.modes {
			overlaps += m.overlaps
			for _, n := range m.perWaiter {
				acquisitions += n
			}
		}
	}
	if len(r.roundTrip.latencies) > 0 {
		rows = append(rows, []string{"floor: one round trip",
			fmtMS(r.roundTrip.p(50)), fmtMS(r.roundTrip.p(99)), "—", "5.0", "—", "—", "—", "—", "—", "—", "—", "—"})
	}
	b.WriteString(mdTable([]string{"library",
		"8 waiting: handoff p50", "p99", "acq/s", "cmds/acq", "fairness min–max",
		"8 plain loop: p50", "p99", "acq/s", "cmds/acq", "fairness min–max",
		"16 waiting: handoff p50", "cmds/acq"}, rows))
	fmt.Fprintf(&b, "\nMutual exclusion, checked on every acquisition: %d overlaps in %d acquisitions.", overlaps, acquisitions)
	if len(errs) == 0 {
		b.WriteString(" No lock call failed.\n")
	} else {
		fmt.Fprintf(&b, " Lock calls that failed or were still blocked %s after the run: %s.\n", "5s", strings.Join(errs, ", "))
	}
	return b.String()
}

func (r *results) cliTable() string {
	var b strings.Builder
	b.WriteString("\n### CLI: `with-lock x true` and the alternatives, wall time per run\n\n")
	b.WriteString("Ratios are of medians; in brackets the median of the ratios of two ways timed one right after the other in each round, which a slow spell of the shared machine slows both of.\n\n")
	var rows [][]string
	floor, guarded, goredis := r.cli[cliFloor], r.cli[cliGuardedFloor], r.cli[cliGoRedisFloor]
	ratio := func(t, base []time.Duration) string {
		return fmt.Sprintf("%.2f× (%.2f×)", float64(median(t))/float64(median(base)), pairedRatio(t, base))
	}
	for _, w := range r.cliWays {
		t := r.cli[w.name]
		rows = append(rows, []string{w.name, fmtMS(median(t)), fmtMS(percentile(t, 90)),
			ratio(t, floor), ratio(t, guarded), ratio(t, goredis), w.desc})
	}
	b.WriteString(mdTable([]string{"way", "median", "p90", "vs Go floor", "vs guarded floor", "vs go-redis guarded floor", "what"}, rows))
	if base := r.cli[cliOurs+" at "+*cliBaseline]; *cliBaseline != "" && len(base) > 0 {
		fmt.Fprintf(&b, "\n`%s` over the same at %s: %.3f× (median of paired ratios), medians %s vs %s\n",
			cliOurs, *cliBaseline, pairedRatio(r.cli[cliOurs], base), fmtMS(median(r.cli[cliOurs])), fmtMS(median(base)))
	}
	return b.String()
}

func (r *results) targets() []target {
	var ts []target
	add := func(what string, met bool, format string, args ...any) {
		ts = append(ts, target{what, fmt.Sprintf(format, args...), met})
	}
	o := r.byName(oursName)
	h := o.mode("handoff8")
	p50, p99 := h.p(50), h.p(99)
	add("waiter handoff p50 ≤ 0.3 ms (8 waiters)", p50 <= 300*time.Microsecond, "%s", fmtMS(p50))
	add("waiter handoff p99 ≤ 1 ms (8 waiters)", p99 <= time.Millisecond, "%s", fmtMS(p99))
	ru := r.byName("rueidislock").mode("handoff8").p(50)
	add("handoff p50 faster than rueidislock", p50 < ru, "%s vs %s (%.1f×)", fmtMS(p50), fmtMS(ru), float64(ru)/float64(p50))
	for _, peer := range []string{"bsm/redislock", "redsync"} {
		pp := r.byName(peer).mode("handoff8").p(50)
		add("handoff p50 ≥ 30× faster than "+peer, float64(pp) >= 30*float64(p50), "%.0f× (%s vs %s)", float64(pp)/float64(p50), fmtMS(pp), fmtMS(p50))
	}
	for _, key := range []string{"handoff8", "plain8", "handoff16"} {
		c := medianF(o.mode(key).commands)
		add("≤ 6 Redis commands per acquisition ("+key+")", c <= 6, "%.2f", c)
	}
	_, _, fair := h.fairness()
	_, _, pfair := o.mode("plain8").fairness()
	add("no waiter starved: min/max acquisitions ≥ 0.5", fair >= 0.5 && pfair >= 0.5, "%.2f handoff, %.2f plain loop", fair, pfair)

	floor := r.byName("raw go-redis floor")
	us, fl := medianF(o.us1), medianF(floor.us1)
	// Ratio of the two measured next to each other in each round, then the
	// median: slow drifts of a shared VM cancel out.
	var ratios []float64
	for i := range min(len(o.us1), len(floor.us1)) {
		ratios = append(ratios, o.us1[i]/floor.us1[i])
	}
	ratio := medianF(ratios)
	r.pairedRatio = ratio
	add("uncontended µs/pair ≤ 1.05× the raw floor", ratio <= 1.05, "%.3f× (median of per-round ratios; medians %.0f vs %.0f µs)", ratio, us, fl)
	below := true
	var peers []string
	for _, l := range r.libs {
		if l.lib.uncontended && l != o && !strings.HasPrefix(l.lib.name, "raw go-redis floor") {
			below = below && us < medianF(l.us1)
			peers = append(peers, fmt.Sprintf("%s %.0f", l.lib.name, medianF(l.us1)))
		}
	}
	add("uncontended µs/pair below every peer", below, "%.0f µs vs %s", us, strings.Join(peers, ", "))
	a, fa := medianF(o.allocs1), medianF(floor.allocs1)
	add("allocations per pair ≤ the floor's + 5", a <= fa+5, "%.1f vs %.1f", a, fa)
	r.throughputTargets(add)

	r.cliTargets(add)
	r.pipedTargets(add)
	r.fairTargets(add)
	r.listTargets(add)
	r.scaleTargets(add)
	return ts
}

// cliTargets are the CLI's targets, ratios of medians of ways timed
// interleaved.
func (r *results) cliTargets(add func(what string, met bool, format string, args ...any)) {
	cli, gofloor, bash := median(r.cli[cliOurs]), median(r.cli[cliFloor]), median(r.cli["bash + redis-cli"])
	add("CLI wall time ≤ 1.3× the Go floor", float64(cli) <= 1.3*float64(gofloor), "%.2f× (%s vs %s)", float64(cli)/float64(gofloor), fmtMS(cli), fmtMS(gofloor))
	guarded := median(r.cli[cliGuardedFloor])
	add("CLI wall time ≤ 1.25× the guarded Go floor", float64(cli) <= 1.25*float64(guarded), "%.2f× (%s vs %s; median of paired ratios %.2f×)",
		float64(cli)/float64(guarded), fmtMS(cli), fmtMS(guarded), pairedRatio(r.cli[cliOurs], r.cli[cliGuardedFloor]))
	goredis := median(r.cli[cliGoRedisFloor])
	add("CLI wall time ≤ 1.25× the guarded go-redis floor", float64(cli) <= 1.25*float64(goredis), "%.2f× (%s vs %s; median of paired ratios %.2f×)",
		float64(cli)/float64(goredis), fmtMS(cli), fmtMS(goredis), pairedRatio(r.cli[cliOurs], r.cli[cliGoRedisFloor]))
	add("CLI wall time ≤ 0.35× the bash way", float64(cli) <= 0.35*float64(bash), "%.2f× (%s vs %s)", float64(cli)/float64(bash), fmtMS(cli), fmtMS(bash))
}

// mdTable renders a Markdown table padded to line up in a terminal too.
func mdTable(header []string, rows [][]string) string {
	width := make([]int, len(header))
	for i, h := range header {
		width[i] = len([]rune(h))
	}
	for _, row := range rows {
		for i, c := range row {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	var b strings.Builder
	line := func(cells []string) {
		b.WriteString("|")
		for i, c := range cells {
			fmt.Fprintf(&b, " %s%s |", c, strings.Repeat(" ", width[i]-len([]rune(c))))
		}
		b.WriteString("\n")
	}
	line(header)
	sep := make([]string, len(header))
	for i := range sep {
		sep[i] = strings.Repeat("-", width[i])
	}
	line(sep)
	for _, row := range rows {
		line(row)
	}
	return b.String()
}

// throughputTargets are the uncontended targets in pairs/s: with-lock's at
// least 0.98× the raw EVAL floor's and the best peer's, at 1 and at 16
// goroutines, as ratios of medians (the median of per-round ratios in
// brackets).
func (r *results) throughputTargets(add func(what string, met bool, format string, args ...any)) {
	o, floor := r.byName(oursName), r.byName("raw go-redis floor")
	for _, n := range []struct {
		goroutines int
		us         func(*libResult) []float64
	}{{1, func(l *libResult) []float64 { return l.us1 }}, {16, func(l *libResult) []float64 { return l.us16 }}} {
		best := (*libResult)(nil)
		for _, l := range r.libs {
			if l.lib.uncontended && l != o && !strings.HasPrefix(l.lib.name, "raw go-redis floor") &&
				(best == nil || medianF(n.us(l)) < medianF(n.us(best))) {
				best = l
			}
		}
		for _, base := range []*libResult{floor, best} {
			if base == nil {
				continue
			}
			ratio := medianF(n.us(base)) / medianF(n.us(o))
			add(fmt.Sprintf("uncontended pairs/s ≥ 0.98× %s's, %d goroutine(s)", base.lib.name, n.goroutines), ratio >= 0.98,
				"%.3f× (paired %.3f×)", ratio, paired(n.us(o), n.us(base)))
		}
	}
	r.sharedTripTargets(add)
}

// sharedTripTargets are the targets of round trips shared between a
// Client's concurrent callers: at least the raw EVAL floor's pairs/s at 1
// and 16 goroutines and rueidislock's (which auto-pipelines) at 16, as
// medians of per-round ratios, at no more CPU per pair (bench process and
// redis-server) than rueidislock's at 16.
func (r *results) sharedTripTargets(add func(what string, met bool, format string, args ...any)) {
	o, floor, ru := r.byName(oursName), r.byName("raw go-redis floor"), r.byName("rueidislock")
	if o == nil || floor == nil || ru == nil {
		return
	}
	us := func(l *libResult, goroutines int) []float64 {
		if goroutines == 1 {
			return l.us1
		}
		return l.us16
	}
	for _, t := range []struct {
		base       *libResult
		goroutines int
	}{{floor, 1}, {floor, 16}, {ru, 16}} {
		p := paired(us(o, t.goroutines), us(t.base, t.goroutines))
		add(fmt.Sprintf("shared round trips: pairs/s ≥ 1.0× %s's, %d goroutine(s), median of per-round ratios", t.base.lib.name, t.goroutines), p >= 1,
			"%.3f×", p)
	}
	cpu, ruCPU := medianF(o.clientCPU16)+medianF(o.serverCPU16), medianF(ru.clientCPU16)+medianF(ru.serverCPU16)
	add("shared round trips: CPU per pair at 16 goroutines ≤ rueidislock's", cpu <= ruCPU,
		"%.1f vs %.1f µs (bench process + redis-server)", cpu, ruCPU)
}

// paired is the median over rounds of theirs/ours, each ratio of two
// figures measured in the same round: a slow spell of the shared machine
// slows both sides of it. With µs per pair, ≥ 1 means ours is faster.
func paired(ours, theirs []float64) float64 {
	var ratios []float64
	for i := range min(len(ours), len(theirs)) {
		ratios = append(ratios, theirs[i]/ours[i])
	}
	return medianF(ratios)
}
