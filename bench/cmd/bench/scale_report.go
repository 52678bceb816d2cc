package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	wlconfig "github.com/with-lock/with-lock/internal/config"
)

// The scale section's tables and targets (scale.go).

// handOverCmds are the commands of one hand-over, per hand-over: the
// release's EVALSHA (EVAL the first time) and what its script runs, GET,
// LPOP, EXISTS, SPUBLISH and the SET that gives the lock on, counted as
// one per SPUBLISH. A check or a renewal that reads with GET or EXISTS
// counts here too, so this is an upper bound of the hand-over's own.
func (r waitersRun) handOverCmds() float64 {
	c := r.server.calls
	return r.perHandOver(float64(c["evalsha"] + c["eval"] + c["get"] + c["lpop"] + c["exists"] + 2*c["spublish"]))
}

func (r *results) scaleTables() string {
	s := r.scale
	if s == nil {
		return ""
	}
	var b strings.Builder
	if len(s.waiters) > 0 {
		runs := s.waiters
		if len(s.idle) > 0 {
			runs = append(slices.Clone(runs), s.idle)
		}
		b.WriteString(waitersTable(runs))
	}
	if len(s.herds) > 0 {
		b.WriteString(herdTable(s))
	}
	if s.cluster != nil {
		b.WriteString(s.cluster.table())
	}
	return b.String()
}

func waitersTable(sizes []waitersRuns) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n### Scale: the fair line with up to %d waiting Clients, one lock held %s\n\n", sizes[len(sizes)-1][0].n, holdFor)
	fmt.Fprintf(&b, "Every waiter has its own Client (go-redis client and connections), as a host would, and loops acquire, hold, release, queue again, with the CLI's TTL (%s); a redis-server of its own per run. Measured in the steady state: after each waiter's first turn, until every waiter has had its turns (and %s at least). Each size runs %d times, the sizes in turn, so that a minute's load on this machine falls on all alike: a row gives the medians over its runs (Redis CPU with its range), the least fair run's fairness and the most commands per hand-over of any run. The hand-over: the release's EVALSHA and what its script runs (GET, LPOP, EXISTS, SPUBLISH, SET; a check's or renewal's GET and EXISTS included). All: every command Redis ran in the window (INFO commandstats), the next waiter's RPUSH and the liveness key it writes when its wait passes a second included. Reads: socket reads Redis processed (requests, pipelines counted once). CPU: redis-server's user+system time (INFO cpu) over the window. Memory: used_memory with every waiter queued, less before any Client connected, per waiter; in brackets the part INFO counts as client connections (a pool connection and a subscription each) and the line's own keys (MEMORY USAGE).\n\n",
		scaleTTL, scaleMinWindow, len(sizes[0]))
	var rows [][]string
	for _, rs := range sizes {
		r := rs[0]
		lo, hi, fair := rs.worstFairness().fairness()
		who := fmt.Sprint(r.n)
		if r.idle > 0 {
			who = fmt.Sprintf("%d, beside %d idle connections", r.n, r.idle)
		}
		cpu := rs.values(cpuPerHandOver)
		rows = append(rows, []string{who, fmt.Sprintf("%.0f", rs.median(func(r waitersRun) float64 { return float64(r.acquired) })),
			fmt.Sprintf("%d–%d (%.2f)", lo, hi, fair),
			fmt.Sprintf("%.2f", slices.Max(rs.values(waitersRun.handOverCmds))), fmt.Sprintf("%.2f", rs.median(cmdsPerHandOver)),
			fmt.Sprintf("%.2f", rs.median(readsPerHandOver)),
			fmt.Sprintf("%.0f (%.0f–%.0f)", rs.median(cpuPerHandOver), cpu[0], cpu[len(cpu)-1]),
			fmtMS(time.Duration(rs.median(p50))), fmtMS(time.Duration(rs.median(p99))),
			fmt.Sprintf("%.1f KB (%.1f, %.2f)", rs.median(func(r waitersRun) float64 { return r.memPerWaiter })/1024,
				rs.median(func(r waitersRun) float64 { return r.connPerWaiter })/1024, rs.median(func(r waitersRun) float64 { return r.linePerWaiter })/1024),
			fmt.Sprintf("%.0f", rs.median(func(r waitersRun) float64 { return r.perHandOver(float64(r.clientCPU.Microseconds())) }))})
	}
	b.WriteString(mdTable([]string{"waiters", "hand-overs", "fairness min–max", "cmds/hand-over: the hand-over", "all", "reads", "Redis CPU µs (range)", "p50", "p99", "Redis memory/waiter (connections, line)", "bench process CPU µs"}, rows))
	b.WriteString("\nCommands per hand-over by name, with Redis's time in one call (INFO commandstats; a script's includes the commands it runs), in the run of median Redis CPU:\n\n")
	for _, rs := range sizes {
		if r := rs.medianRound(cpuPerHandOver); r.idle == 0 {
			fmt.Fprintf(&b, "- %d waiters: %s\n", r.n, r.breakdown())
		}
	}
	return b.String()
}

func herdTable(s *scaleResult) string {
	runs := s.herds
	var b strings.Builder
	b.WriteString("\n### Scale: the herd at the top of the minute, N runs of one name released together\n\n")
	fmt.Fprintf(&b, "Fresh Clients: N goroutines of the bench, each with a go-redis client set up from the CLI's own settings (internal/config) and so a new connection, released together by closing a channel, each one TryAcquire within the default --redis-timeout (%s): Redis and the protocol alone. Processes: N with-lock processes started by one launcher per core as fast as this machine starts them (the winner's command runs until all others have answered); `with-lock --version` is the same launches doing nothing but start and exit, this machine's start-up rate. Wall: from the first start to the last answer. Peak: the most TCP connections to Redis at once (ESTABLISHED in /proc/net/tcp, accepted or in the listen backlog). --once-per runs use the README's crontab form (`--once-per 1h -w 60s -q`): the losers wait in line, then find the window done and exit 0. TLS: rediss:// with a P-256 certificate, TLS 1.3.\n\n", wlconfig.DefaultRedisTimeout)
	var rows [][]string
	startup := map[int]time.Duration{}
	for _, r := range runs {
		if r.way.startup {
			startup[r.n] = r.wall
		}
	}
	for _, r := range runs {
		codes := make([]int, 0, len(r.codes))
		for c := range r.codes {
			codes = append(codes, c)
		}
		slices.Sort(codes)
		var cs []string
		for _, c := range codes {
			cs = append(cs, fmt.Sprintf("%d×%d", r.codes[c], c))
		}
		part := "—"
		if r.way.procs && !r.way.startup && startup[r.n] > 0 {
			part = fmtMS(max(r.wall-startup[r.n], 0))
		}
		ran := fmt.Sprint(r.ran)
		if r.way.startup {
			ran = "—"
		}
		rows = append(rows, []string{fmt.Sprint(r.n), r.way.name, fmtMS(r.wall), part, fmtMS(percentile(r.answers, 50)), fmtMS(percentile(r.answers, 99)),
			strings.Join(cs, ", "), ran, fmtMS(r.serverCPU), fmt.Sprint(r.peak)})
	}
	b.WriteString(mdTable([]string{"N", "way", "wall", "beyond start-up", "answer p50", "p99", "exit codes", "ran", "Redis CPU", "peak connections"}, rows))
	fmt.Fprintf(&b, "\nredis-server's CPU for one new connection (handshake, PING, close; 300 one after the other): %s plain, %s over TLS. Its one thread spends N times that on a herd of N hosts before any lock is taken: over TLS, %d hosts at once need %s of it.\n",
		fmtUS(s.connPlain), fmtUS(s.connTLS), 2000, fmtMS(2000*s.connTLS))
	for _, r := range runs {
		for _, e := range r.errs {
			fmt.Fprintf(&b, "\n- %d, %s: %s", r.n, r.way.name, strings.TrimSpace(e))
		}
	}
	b.WriteString("\n")
	return b.String()
}

// scaleTargets are issue 30's.
func (r *results) scaleTargets(add func(what string, met bool, format string, args ...any)) {
	s := r.scale
	if s == nil {
		return
	}
	for _, rs := range s.waiters {
		n := rs[0].n
		_, _, fair := rs.worstFairness().fairness()
		add(fmt.Sprintf("scale, %d waiting Clients: fairness ≥ 0.9", n), fair >= 0.9, "%.2f (the least fair of %d runs)", fair, len(rs))
		most := slices.Max(rs.values(waitersRun.handOverCmds))
		add(fmt.Sprintf("scale, %d waiting Clients: ≤ 6 Redis commands per hand-over", n), most <= 6.05, "%.2f (all: %.2f)", most, rs.median(cmdsPerHandOver))
		p := time.Duration(rs.median(p99))
		add(fmt.Sprintf("scale, %d waiting Clients: hand-over p99 ≤ 1 ms", n), p <= time.Millisecond, "%s (median of %d runs; %s)", fmtMS(p), len(rs), fmtValues(rs.values(p99)))
		var overlaps, errs int
		for _, r := range rs {
			overlaps, errs = overlaps+r.overlaps, errs+r.errors
		}
		add(fmt.Sprintf("scale, %d waiting Clients: no overlap, no failed call", n), overlaps == 0 && errs == 0, "%d overlaps, %d errors", overlaps, errs)
	}
	if len(s.waiters) > 1 {
		first, last := s.waiters[0], s.waiters[len(s.waiters)-1]
		c0, c1 := first.median(cpuPerHandOver), last.median(cpuPerHandOver)
		add(fmt.Sprintf("scale: Redis CPU per hand-over flat from %d to %d waiters (≤ 1.25×)", first[0].n, last[0].n), c1 <= 1.25*c0, "%.0f µs → %.0f µs (%.2f×; medians of %d runs each)", c0, c1, c1/c0, len(first))
		if len(s.idle) > 0 {
			i := s.idle
			ci := i.median(cpuPerHandOver)
			add(fmt.Sprintf("scale: Redis CPU per hand-over with %d waiters within 1.25× of %d waiters beside %d idle connections", last[0].n, i[0].n, i[0].idle), c1 <= 1.25*ci,
				"%.0f µs vs %.0f µs (%.2f×)", c1, ci, c1/ci)
		}
		r0, r1 := first.median(readsPerHandOver), last.median(readsPerHandOver)
		add(fmt.Sprintf("scale: Redis reads per hand-over flat from %d to %d waiters (≤ 1.25×)", first[0].n, last[0].n), r1 <= 1.25*r0, "%.2f → %.2f (%.2f×)", r0, r1, r1/r0)
	}
	for _, h := range s.herds {
		if h.way.startup {
			continue
		}
		want := 75
		if h.way.oncePer {
			want = 0
		}
		ok := h.ran == 1 && h.codes[69] == 0 &&
			(want == 0 && h.codes[0] == h.n || want == 75 && h.codes[0] == 1 && h.codes[75] == h.n-1)
		add(fmt.Sprintf("herd of %d, %s: one ran, the others %d, none 69", h.n, h.way.name, want), ok, "ran %d; %v", h.ran, h.codes)
	}
	if s.cluster != nil {
		s.cluster.targets(add)
	}
	for _, h := range s.herds {
		if h.way.jitter == 0 {
			continue
		}
		for _, base := range s.herds {
			if base.n == h.n && base.way.procs == h.way.procs && base.way.tls == h.way.tls && base.way.jitter == 0 && !base.way.oncePer && !base.way.startup {
				add(fmt.Sprintf("herd of %d, %s: --jitter %s lowers the peak of connections", h.n, base.way.name, h.way.jitter), h.peak < base.peak,
					"%d → %d", base.peak, h.peak)
			}
		}
	}
}

// fmtValues writes durations in ns as ms, "0.64, 0.71, 0.80 ms".
func fmtValues(ns []float64) string {
	parts := make([]string, len(ns))
	for i, v := range ns {
		parts[i] = fmt.Sprintf("%.2f", v/float64(time.Millisecond))
	}
	return strings.Join(parts, ", ") + " ms"
}

// scaleMeasured is the scale section's line in BENCHMARKS.md's list of
// what is measured, with the limits of this machine.
func (r *results) scaleMeasured() string {
	c := r.cfg.scale
	if len(c.waiters) == 0 && len(c.herd) == 0 && !c.cluster {
		return ""
	}
	return fmt.Sprintf("6. Scale: the fair line with %s waiting Clients (each served %d times in the measured window; %d runs of each size, the sizes in turn), and herds of %s runs of one name released together, as fresh Clients and as processes, plain and TLS, with and without --jitter, and with --once-per's waiting losers. All on this one %d-core machine: the bench process holds every Client and its goroutines, and shares the cores with redis-server and, for the herds, with every process it starts, so wall times and latencies there are this machine's; Redis's own CPU, commands, reads and memory per hand-over or per run are the figures that carry over to a fleet.\n",
		c.waiters.String(), c.laps, c.rounds, c.herd.String(), r.env.cores)
}

// fmtUS writes d in µs.
func fmtUS(d time.Duration) string {
	return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
}
