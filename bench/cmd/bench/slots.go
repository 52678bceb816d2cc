package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
)

// slotsMode is the semaphore run: slotsWaiters goroutines, each with its
// own Client (NewSemaphore), contend for slotsN slots of one name.
const (
	slotsMode    = "slots3x16"
	slotsN       = 3
	slotsWaiters = 16
)

// runSlots runs the semaphore mode once: every goroutine loops acquire,
// hold 1 ms, release. The number of holders is counted on every
// acquisition; more than slotsN at once counts as an overlap.
func runSlots(addr string, adm *redis.Client, d time.Duration) (contended, error) {
	clients := make([]*withlock.Client, slotsWaiters)
	for g := range clients {
		rdb := newGoRedis(addr)
		defer rdb.Close()
		c, err := withlock.NewSemaphore(rdb, slotsN, nil)
		if err != nil {
			return contended{}, err
		}
		clients[g] = c
	}
	var (
		holders   atomic.Int32
		released  atomic.Int64 // when the last release started, unix ns; 0 once taken
		overlaps  atomic.Int32
		errs      atomic.Int32
		mu        sync.Mutex
		latencies []time.Duration
		counts    = make([]int, slotsWaiters)
	)
	ctx, cancel := context.WithTimeout(context.Background(), d+5*time.Second)
	defer cancel()
	cmds := commandsProcessed(adm)
	start := time.Now()
	stop := start.Add(d)
	var wg sync.WaitGroup
	for g, c := range clients {
		wg.Go(func() {
			for time.Now().Before(stop) {
				l, err := c.Acquire(ctx, "slots", lockTTL, nil)
				now := time.Now()
				if err != nil {
					errs.Add(1)
					if ctx.Err() != nil {
						return
					}
					continue
				}
				if holders.Add(1) > slotsN {
					overlaps.Add(1)
				}
				if at := released.Swap(0); at != 0 {
					mu.Lock()
					latencies = append(latencies, now.Sub(time.Unix(0, at)))
					mu.Unlock()
				}
				counts[g]++
				time.Sleep(holdFor)
				holders.Add(-1)
				released.Store(time.Now().UnixNano())
				if err := l.Release(ctx); err != nil {
					errs.Add(1)
				}
			}
		})
	}
	wg.Wait()
	r := contended{
		elapsed:   time.Since(start),
		commands:  commandsProcessed(adm) - cmds - 1,
		perWaiter: counts,
		overlaps:  int(overlaps.Load()),
		errors:    int(errs.Load()),
		latencies: latencies,
	}
	for _, n := range counts {
		r.acquired += n
	}
	if r.acquired == 0 {
		return r, fmt.Errorf("%s: no acquisition in %s", slotsMode, d)
	}
	return r, nil
}

// slotsTable reports the semaphore mode.
func (r *results) slotsTable() string {
	m := r.slots
	if len(m.perWaiter) == 0 {
		return ""
	}
	lo, hi, ratio := m.fairness()
	var b strings.Builder
	fmt.Fprintf(&b, "\n### Semaphore: %d slots, %d waiters each with its own Client, held %s\n\n", slotsN, slotsWaiters, holdFor)
	fmt.Fprintf(&b, "`NewSemaphore(rdb, %d, nil)` per goroutine, Acquire / hold / Release in a loop. Holders are counted on every acquisition; more than %d at once would be an overlap. Latency: a release started → some waiter's Acquire returned.\n\n", slotsN, slotsN)
	b.WriteString(mdTable([]string{"library", "fairness min–max", "cmds/acq", "p50", "p99", "acq/s", "more than 3 holders"},
		[][]string{{"with-lock --slots 3", fmt.Sprintf("%d–%d (%.2f)", lo, hi, ratio), fmt.Sprintf("%.1f", medianF(m.commands)),
			fmtMS(m.p(50)), fmtMS(m.p(99)), fmt.Sprintf("%.0f", medianF(m.rates)), fmt.Sprintf("%d in %d acquisitions", m.overlaps, sum(m.perWaiter))}}))
	return b.String()
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}
