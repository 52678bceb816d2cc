package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// holdFor is how long each contended acquisition keeps the lock.
const holdFor = time.Millisecond

// contended is one run of goroutines fighting over one lock.
type contended struct {
	latencies []time.Duration // release started → next acquire returned
	acquired  int
	elapsed   time.Duration
	commands  int64 // Redis commands during the run, Lua-internal included
	perWaiter []int // acquisitions by each goroutine
	overlaps  int   // acquisitions while another goroutine held the lock
	errors    int
}

// runContended runs goroutines that each loop: lock, hold 1 ms, unlock. In
// handoff mode a goroutine that released does not call lock again until
// another goroutine has acquired, so every handoff goes to a goroutine that
// is already waiting; otherwise the releaser competes at once (the plain
// loop). Mutual exclusion is checked on every acquisition: more than limit
// holders at once (1, or a semaphore's slots) is an overlap.
// With own, goroutine g uses own[g] instead of shared: a Client per
// waiter, as separate processes or machines would have.
func runContended(lb lib, shared locker, own []locker, adm *redis.Client, goroutines, limit int, handoff bool, d time.Duration) (contended, error) {
	var (
		holders   atomic.Int32
		released  atomic.Int64 // when the last release started, unix ns; 0 once taken
		overlaps  atomic.Int32
		errs      atomic.Int32
		mu        sync.Mutex
		nextAcq   = make(chan struct{}) // closed by the next acquisition
		latencies = make([][]time.Duration, goroutines)
		counts    = make([]int, goroutines)
	)
	// A lock call still blocked this long after the run counts as an error.
	ctx, cancel := context.WithTimeout(context.Background(), d+5*time.Second)
	defer cancel()

	cmds := commandsProcessed(adm)
	start := time.Now()
	stop := start.Add(d)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			l := shared
			if own != nil {
				l = own[g]
			}
			for time.Now().Before(stop) {
				unlock, err := l.lock(ctx, "contended")
				now := time.Now()
				if err != nil {
					errs.Add(1)
					if ctx.Err() != nil {
						return
					}
					continue
				}
				if holders.Add(1) > int32(limit) {
					overlaps.Add(1)
				}
				if at := released.Swap(0); at != 0 {
					latencies[g] = append(latencies[g], now.Sub(time.Unix(0, at)))
				}
				mu.Lock()
				close(nextAcq)
				nextAcq = make(chan struct{})
				mu.Unlock()
				counts[g]++

				time.Sleep(holdFor)

				mu.Lock()
				next := nextAcq
				mu.Unlock()
				holders.Add(-1)
				released.Store(time.Now().UnixNano())
				if err := unlock(ctx); err != nil {
					errs.Add(1)
				}
				if handoff && time.Now().Before(stop) {
					select {
					case <-next:
					case <-ctx.Done():
					}
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
	}
	for g := range goroutines {
		r.latencies = append(r.latencies, latencies[g]...)
		r.acquired += counts[g]
	}
	if r.acquired == 0 {
		return r, fmt.Errorf("%s: no acquisition in %s", lb.name, d)
	}
	return r, nil
}

// runRoundTrip measures the floor of any handoff: a holder that wakes from
// its 1 ms hold and sends, in one round trip, the release script and the
// next owner's SET NX PX (what with-lock's handoff sends), timed from just
// before sending to the reply. One goroutine, no contention.
func runRoundTrip(rdb *redis.Client, d time.Duration) (contended, error) {
	ctx := context.Background()
	r := contended{perWaiter: []int{0}}
	token := "floor-0"
	if err := rdb.SetNX(ctx, "roundtrip", token, lockTTL).Err(); err != nil {
		return r, err
	}
	start := time.Now()
	for i := 1; time.Since(start) < d; i++ {
		time.Sleep(holdFor)
		next := fmt.Sprintf("floor-%d", i)
		t := time.Now()
		cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Eval(ctx, rawRelease, []string{"roundtrip"}, token)
			p.SetNX(ctx, "roundtrip", next, lockTTL)
			return nil
		})
		if err != nil {
			return r, err
		}
		r.latencies = append(r.latencies, time.Since(t))
		if !cmds[1].(*redis.BoolCmd).Val() {
			return r, fmt.Errorf("round trip floor: the SET NX did not take the key")
		}
		token = next
		r.acquired++
		r.perWaiter[0]++
	}
	r.elapsed = time.Since(start)
	return r, rdb.Del(ctx, "roundtrip").Err()
}
