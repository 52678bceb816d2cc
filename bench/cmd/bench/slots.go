package main

import (
	"fmt"
	"strings"
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
// hold 1 ms, release, each with its own Client. More than slotsN holders
// at once counts as an overlap.
func runSlots(addr string, adm *redis.Client, d time.Duration) (contended, error) {
	own := make([]locker, slotsWaiters)
	for g := range own {
		rdb := newGoRedis(addr)
		c, err := withlock.NewSemaphore(rdb, slotsN, nil)
		if err != nil {
			_ = rdb.Close()
			return contended{}, err
		}
		own[g] = &ours{rdb: rdb, c: c}
		defer own[g].close()
	}
	return runContended(lib{name: "with-lock --slots 3"}, nil, own, adm, slotsWaiters, slotsN, false, d)
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
