package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/redistest"
)

// The fair line at fleet size: N waiters, each with its own Client (its
// own go-redis client and connections, as N hosts would have), loop on one
// lock: acquire, hold holdFor, release, queue again. Only the steady state
// is measured: all N queue behind a holder, which releases; after a first
// turn of every waiter (which learns the line's pace, opens its second
// connection and sends its first release by EVAL), laps×N hand-overs, and
// at least scaleMinWindow. A fair line serves every waiter laps times in
// that window (once more or less at its ends); fairness is the fewest
// turns of one waiter over the most. Locks are taken with the CLI's default TTL,
// 30s: a waiter that waited more than an eighth of its TTL renews the lock
// once before its Acquire returns (wait_fair.go), which with 1,000 waiters
// the bench's usual 10s would make every turn do.

// waitersRun is one N's measurement.
type waitersRun struct {
	n         int
	idle      int             // idle connections beside the waiters
	window    time.Duration   // the measured steady state
	acquired  int             // acquisitions in the window
	latencies []time.Duration // release started → next acquire returned
	perWaiter []int           // acquisitions in the window, per waiter
	overlaps  int             // acquisitions while another held the lock
	errors    int             // failed Acquire or Release calls
	server    serverStats     // what redis-server did in the window
	clientCPU time.Duration   // this process's CPU time in the window
	// Redis memory per queued waiter, in bytes: in all, and the part that
	// is its connections (a Client's pool connection and its subscription).
	memPerWaiter, connPerWaiter float64
	linePerWaiter               float64 // the line's own keys (MEMORY USAGE), per waiter
}

// scaleName is the lock the scale runs take.
const scaleName = "scale"

// scaleTTL is the TTL of the scale runs' locks: the CLI's default.
const scaleTTL = 30 * time.Second

// scaleMinWindow is the shortest measured window of a waiters run.
const scaleMinWindow = 3 * time.Second

// lineOf is the fair line's list for a lock key without a hash tag
// (docs/waiting.md, "Fair waiting").
func lineOf(key string) string { return "{" + key + "}:q" }

// runWaiters measures n waiters on a redis-server of its own.
// With idle, as many more connections stay open beside the waiters, doing
// nothing: what Redis spends on every connection it holds, whoever holds it.
func runWaiters(n, laps, idle int) (waitersRun, error) {
	r := waitersRun{n: n, idle: idle, perWaiter: make([]int, n)}
	srv, stop, err := redistest.StartMain("maxclients", "20000")
	if err != nil {
		return r, err
	}
	defer stop()
	adm := newGoRedis(srv.Addr())
	defer adm.Close()
	ctx := context.Background()
	for range idle {
		conn := newGoRedis(srv.Addr()).Conn()
		defer conn.Close()
		if err := conn.Ping(ctx).Err(); err != nil {
			return r, err
		}
	}
	used0, conns0 := memory(adm)

	clients := make([]*withlock.Client, n)
	for i := range clients {
		rdb := newGoRedis(srv.Addr())
		defer rdb.Close()
		clients[i] = withlock.New(rdb, nil)
	}
	holderRDB := newGoRedis(srv.Addr())
	defer holderRDB.Close()
	holder, err := withlock.New(holderRDB, nil).TryAcquire(ctx, scaleName, scaleTTL, nil)
	if err != nil {
		return r, err
	}
	key := holder.Key()

	var (
		holders, overlaps, errs atomic.Int32
		released                atomic.Int64 // when the last release started, unix ns; 0 once taken
		acquired                atomic.Int64 // acquisitions since the holder's release
		started, ended          atomic.Bool  // the window has begun, is over
		warm, windowEnd         = make(chan struct{}), make(chan struct{})
		mu                      sync.Mutex // guards the end of the window
		windowFrom              time.Time
		inWindow                int64
		latencies               = make([][]time.Duration, n)
		wg                      sync.WaitGroup
	)
	total := int64(laps * n) // hand-overs in the window
	wctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	for g, c := range clients {
		wg.Go(func() {
			for {
				l, err := c.Acquire(wctx, scaleName, scaleTTL, nil)
				now := time.Now()
				if err != nil {
					errs.Add(1)
					if wctx.Err() != nil {
						return
					}
					continue
				}
				if holders.Add(1) > 1 {
					overlaps.Add(1)
				}
				at := released.Swap(0)
				if acquired.Add(1) == int64(n) {
					close(warm) // every waiter's first turn: the window begins
				}
				last := ended.Load()
				if started.Load() && !last {
					latencies[g] = append(latencies[g], now.Sub(time.Unix(0, at)))
					r.perWaiter[g]++
					mu.Lock()
					inWindow++
					if inWindow >= total && time.Since(windowFrom) >= scaleMinWindow && !ended.Load() {
						ended.Store(true)
						close(windowEnd)
					}
					mu.Unlock()
				}
				time.Sleep(holdFor)
				holders.Add(-1)
				released.Store(time.Now().UnixNano())
				if err := l.Release(wctx); err != nil {
					errs.Add(1)
				}
				if last || ended.Load() {
					return
				}
			}
		})
	}
	// Everyone queued behind the holder: the steady state's start.
	deadline := time.Now().Add(time.Minute + time.Duration(n)*20*time.Millisecond)
	for adm.LLen(ctx, lineOf(key)).Val() < int64(n) {
		if time.Now().After(deadline) {
			return r, fmt.Errorf("%d waiters: only %d queued after %s", n, adm.LLen(ctx, lineOf(key)).Val(), time.Minute)
		}
		time.Sleep(10 * time.Millisecond)
	}
	used, conns := memory(adm)
	r.memPerWaiter = float64(used-used0) / float64(n)
	r.connPerWaiter = float64(conns-conns0) / float64(n)
	r.linePerWaiter = float64(lineMemory(adm, key)) / float64(n)

	released.Store(time.Now().UnixNano())
	if err := holder.Release(ctx); err != nil {
		return r, err
	}
	select {
	case <-warm:
	case <-wctx.Done():
		return r, fmt.Errorf("%d waiters: %d of the first %d hand-overs", n, acquired.Load(), n)
	}
	before, cpu := readStats(adm), processCPU()
	mu.Lock()
	windowFrom = time.Now()
	mu.Unlock()
	started.Store(true)
	select {
	case <-windowEnd:
	case <-wctx.Done():
		return r, fmt.Errorf("%d waiters: %d hand-overs of %d", n, inWindow, total)
	}
	r.server = readStats(adm).since(before)
	r.clientCPU = processCPU() - cpu
	mu.Lock()
	r.window = time.Since(windowFrom)
	r.acquired = int(inWindow)
	mu.Unlock()
	wg.Wait() // the line drains: each waiter leaves at its next turn
	r.overlaps, r.errors = int(overlaps.Load()), int(errs.Load())
	for _, l := range latencies {
		r.latencies = append(r.latencies, l...)
	}
	return r, nil
}

// perHandOver is x per acquisition in the window.
func (r waitersRun) perHandOver(x float64) float64 { return x / float64(r.acquired) }

// fairness is the fewest acquisitions of one waiter over the most.
func (r waitersRun) fairness() (lo, hi int, ratio float64) {
	lo, hi = minMax(r.perWaiter)
	if hi == 0 {
		return lo, hi, 0
	}
	return lo, hi, float64(lo) / float64(hi)
}

// String is the line the run prints as it goes.
func (r waitersRun) String() string {
	lo, hi, fair := r.fairness()
	return fmt.Sprintf("%5d waiters (+%d idle connections): %6d hand-overs in %s, fairness %d–%d (%.2f), %.2f cmds, %.1f µs Redis CPU per hand-over, p50 %s, p99 %s, %.1f KB per waiter (%.1f KB its connections), client CPU %.0f µs per hand-over, %d overlaps, %d errors",
		r.n, r.idle, r.acquired, r.window.Round(time.Millisecond), lo, hi, fair,
		r.perHandOver(float64(r.server.total())), r.perHandOver(float64(r.server.cpu.Microseconds())),
		fmtMS(percentile(r.latencies, 50)), fmtMS(percentile(r.latencies, 99)), r.memPerWaiter/1024, r.connPerWaiter/1024,
		r.perHandOver(float64(r.clientCPU.Microseconds())), r.overlaps, r.errors) +
		"\n        per hand-over: " + r.breakdown()
}

// breakdown is the commands per hand-over by name, the most first, each
// with Redis's time in one call.
func (r waitersRun) breakdown() string {
	cmds := slices.Collect(maps.Keys(r.server.calls))
	slices.SortFunc(cmds, func(a, b string) int { return cmp.Compare(r.server.calls[b], r.server.calls[a]) })
	var parts []string
	for _, c := range cmds {
		n := r.server.calls[c]
		parts = append(parts, fmt.Sprintf("%s %.2f (%.1f µs)", strings.ToUpper(c), r.perHandOver(float64(n)), float64(r.server.usec[c])/float64(n)))
	}
	return strings.Join(parts, ", ")
}

// lineMemory is what the fair line of key holds in Redis: its list, the
// waiting mark and the waiters' liveness and far keys (MEMORY USAGE).
func lineMemory(rdb *redis.Client, key string) int64 {
	ctx := context.Background()
	var n int64
	iter := rdb.Scan(ctx, 0, "{"+key+"}:*", 1000).Iterator()
	for iter.Next(ctx) {
		n += rdb.MemoryUsage(ctx, iter.Val()).Val()
	}
	return n
}

// waitersRuns are the rounds of one size of the fair line, run in turn
// with the other sizes (scale.go). The tables and targets read their
// medians, their worst fairness and their most commands per hand-over.
type waitersRuns []waitersRun

// median is the median over the rounds of f.
func (rs waitersRuns) median(f func(waitersRun) float64) float64 {
	v := rs.values(f)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// values are f over the rounds, sorted.
func (rs waitersRuns) values(f func(waitersRun) float64) []float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	slices.Sort(v)
	return v
}

// medianRound is the round at the median of f (the later of two).
func (rs waitersRuns) medianRound(f func(waitersRun) float64) waitersRun {
	sorted := slices.Clone(rs)
	slices.SortStableFunc(sorted, func(a, b waitersRun) int { return cmp.Compare(f(a), f(b)) })
	return sorted[len(sorted)/2]
}

// worstFairness is the round with the lowest fairness.
func (rs waitersRuns) worstFairness() waitersRun {
	return slices.MinFunc(rs, func(a, b waitersRun) int {
		_, _, fa := a.fairness()
		_, _, fb := b.fairness()
		return cmp.Compare(fa, fb)
	})
}

// What the rounds are compared by.
func cpuPerHandOver(r waitersRun) float64   { return r.perHandOver(float64(r.server.cpu.Microseconds())) }
func readsPerHandOver(r waitersRun) float64 { return r.perHandOver(float64(r.server.reads)) }
func cmdsPerHandOver(r waitersRun) float64  { return r.perHandOver(float64(r.server.total())) }
func p50(r waitersRun) float64              { return float64(percentile(r.latencies, 50)) }
func p99(r waitersRun) float64              { return float64(percentile(r.latencies, 99)) }
