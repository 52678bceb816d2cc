package main

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"
)

// uncontended is one round of lock+unlock pairs on locks nobody else wants.
type uncontended struct {
	usPerPair     float64 // wall time per pair of one goroutine
	allocsPerPair float64
}

// runUncontended does pairs lock+unlock pairs spread over goroutines, each
// goroutine on its own lock, and returns the wall time per pair as seen by
// one goroutine (its latency) and the process's allocations per pair.
func runUncontended(l locker, goroutines, pairs int) (uncontended, error) {
	ctx := context.Background()
	per := pairs / goroutines
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	errs := make(chan error, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			name := fmt.Sprintf("u%d", g)
			for range per {
				unlock, err := l.lock(ctx, name)
				if err != nil {
					errs <- err
					return
				}
				if err := unlock(ctx); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	close(errs)
	if err := <-errs; err != nil {
		return uncontended{}, err
	}
	n := float64(per * goroutines)
	return uncontended{
		usPerPair:     float64(elapsed.Microseconds()) * float64(goroutines) / n,
		allocsPerPair: float64(after.Mallocs-before.Mallocs) / n,
	}, nil
}
