package main

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// uncontended is one round of lock+unlock pairs on locks nobody else wants.
type uncontended struct {
	usPerPair     float64 // wall time per pair of one goroutine
	allocsPerPair float64
	cmdsPerPair   float64 // Redis commands per pair, Lua-internal included
	// CPU time per pair, in µs: this process's (user+system, GC and the
	// go-redis client included) and redis-server's (INFO cpu). On a
	// machine shared with other work they vary far less than wall time.
	clientCPU, serverCPU float64
	// scriptUs is the µs redis-server spent in one EVAL or EVALSHA, the
	// release script (INFO commandstats), or 0 when none ran.
	scriptUs float64
	// bytesPerPair is the process's heap allocation per pair
	// (runtime.MemStats.TotalAlloc): what drives how often the GC runs.
	bytesPerPair float64
}

// runUncontended does pairs lock+unlock pairs spread over goroutines, each
// goroutine on its own lock, and returns the wall time per pair as seen by
// one goroutine (its latency), the process's allocations per pair and the
// server's commands per pair (adm reads them; nil: not counted).
func runUncontended(l locker, adm *redis.Client, goroutines, pairs int) (uncontended, error) {
	ctx := context.Background()
	per := pairs / goroutines
	var cmds int64
	if adm != nil {
		cmds = commandsProcessed(adm)
	}
	var srvCPU time.Duration
	var scripts, scriptUsec int64
	if adm != nil {
		srvCPU = serverCPU(adm)
		scripts, scriptUsec = scriptTime(adm)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu := processCPU()
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
	cpu = processCPU() - cpu
	runtime.ReadMemStats(&after)
	if adm != nil {
		srvCPU = serverCPU(adm) - srvCPU
		calls, usec := scriptTime(adm)
		scripts, scriptUsec = calls-scripts, usec-scriptUsec
		cmds = commandsProcessed(adm) - cmds - 3 // the first INFO stats and both INFO cpu count one each
	}
	close(errs)
	if err := <-errs; err != nil {
		return uncontended{}, err
	}
	n := float64(per * goroutines)
	var scriptUs float64
	if scripts > 0 {
		scriptUs = float64(scriptUsec) / float64(scripts)
	}
	return uncontended{
		scriptUs:      scriptUs,
		bytesPerPair:  float64(after.TotalAlloc-before.TotalAlloc) / n,
		usPerPair:     float64(elapsed.Microseconds()) * float64(goroutines) / n,
		allocsPerPair: float64(after.Mallocs-before.Mallocs) / n,
		cmdsPerPair:   float64(cmds) / n,
		clientCPU:     float64(cpu.Microseconds()) / n,
		serverCPU:     float64(srvCPU.Microseconds()) / n,
	}, nil
}

// processCPU is this process's CPU time so far, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
