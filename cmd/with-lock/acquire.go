package main

import (
	"context"
	"errors"
	"syscall"

	withlock "github.com/with-lock/with-lock"
)

// acquire takes the lock, or returns nil and the exit code to leave with.
func (r *runner) acquire() (*withlock.Lock, int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var lock *withlock.Lock
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		if r.cfg.Wait > 0 {
			wctx, wcancel := context.WithTimeout(ctx, r.cfg.Wait)
			defer wcancel()
			lock, err = r.locker.Acquire(wctx, r.cfg.Name, r.cfg.TTL, r.lockOptions())
			return
		}
		lock, err = r.locker.TryAcquire(ctx, r.cfg.Name, r.cfg.TTL, r.lockOptions())
	}()
	select {
	case <-done:
	case sig := <-r.sigs:
		cancel()
		<-done
		if lock != nil {
			r.release(lock)
		}
		warn("%v while acquiring %s; command not run", sig, r.locker.Key(r.cfg.Name))
		return nil, 128 + int(sig.(syscall.Signal))
	}
	switch {
	case err == nil:
		return lock, 0
	case errors.Is(err, withlock.ErrNotObtained):
		if !r.cfg.Quiet && r.cfg.ConflictExit != 0 {
			warn("%v; command not run", err)
		}
		return nil, r.cfg.ConflictExit
	default:
		code := redisExit(err)
		warn("%v; command not run%s", err, hint(code, err))
		return nil, code
	}
}

// lockOptions are the per-acquisition options of this run; nil when there
// are none, which keeps the acquisition a single SET.
func (r *runner) lockOptions() *withlock.LockOptions {
	if r.cfg.MinReplicas == 0 && !r.cfg.Fence && r.cfg.MinHold == 0 {
		return nil
	}
	return &withlock.LockOptions{
		Fence:       r.cfg.Fence,   // --fence
		MinHold:     r.cfg.MinHold, // --min-hold
		MinReplicas: r.cfg.MinReplicas,
		// WAIT must answer well within the client's read timeout.
		ReplicaTimeout: r.cfg.RedisTimeout / 2,
	}
}
