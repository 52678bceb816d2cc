package main

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/config"
	"github.com/with-lock/with-lock/internal/supervise"
)

// groupPoll is how often hold checks whether the rest of a stopped
// command's process group is gone.
const groupPoll = 10 * time.Millisecond

// hold supervises the command while it holds lock: it renews the lock
// (unless --no-renew), passes on the signals with-lock receives, stops the
// command when the lock is lost (--on-lost term), and releases the lock at
// the end. It returns with-lock's exit code.
func (r *runner) hold(child *supervise.Child, lock *withlock.Lock) int {
	// The guard kills the command's whole process group if with-lock is
	// killed. Without it only the parent-death signal, on Linux, stops the
	// command, and not its children.
	if err := child.GuardErr(); err != nil {
		warn("%v; if with-lock is killed, the command's children may outlive it", err)
	}
	var ka *withlock.KeepAlive
	var lost <-chan struct{}
	if !r.cfg.NoRenew {
		ka = lock.KeepAlive(context.Background(), nil)
		lost = ka.Lost()
	}
	var killAt time.Time // set once the command is being stopped
	var kill <-chan time.Time
	for {
		select {
		case <-child.Done():
			code := child.Wait()
			if !killAt.IsZero() {
				r.drain(child, killAt)
				code = exitLockLost
			}
			if ka != nil {
				ka.Stop()
			}
			r.finish(lock, ka, code) // record.go: release, and record the run
			return code
		case sig := <-r.sigs:
			if err := child.Signal(sig.(syscall.Signal)); err != nil {
				warn("forward %v to the command: %v", sig, err)
			}
		case <-lost:
			lost = nil
			if r.cfg.OnLost == config.OnLostIgnore {
				warn("%s; --on-lost ignore: the command goes on without the lock", r.lostReason(lock, ka.Err()))
				continue
			}
			// Stop first, explain after: finding out who took the lock
			// costs a round trip the command must not run on for.
			killAt = time.Now().Add(r.cfg.KillAfter)
			if err := child.Signal(syscall.SIGTERM); err != nil {
				warn("stop the command: %v", err)
			}
			kill = time.After(r.cfg.KillAfter)
			warn("%s; stopping the command (SIGTERM, SIGKILL after %s), exit %d",
				r.lostReason(lock, ka.Err()), r.cfg.KillAfter, exitLockLost)
		case <-kill:
			kill = nil
			if err := child.Signal(syscall.SIGKILL); err != nil {
				warn("kill the command: %v", err)
			}
		}
	}
}

// drain waits, after a lost lock stopped the command's leader, until the
// rest of its process group is gone too: children that ignored SIGTERM get
// SIGKILL at killAt.
func (r *runner) drain(child *supervise.Child, killAt time.Time) {
	killed := false
	giveUp := killAt.Add(time.Second) // for the kernel to deliver SIGKILL
	for child.GroupAlive() && time.Now().Before(giveUp) {
		if !killed && !time.Now().Before(killAt) {
			_ = child.Signal(syscall.SIGKILL)
			killed = true
		}
		time.Sleep(groupPoll)
	}
}

// lostReason says in a few words why the lock was lost. When Redis said the
// lock is no longer ours it asks who holds it now.
func (r *runner) lostReason(lock *withlock.Lock, err error) string {
	if !errors.Is(err, withlock.ErrLockNotHeld) {
		return err.Error()
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.RedisTimeout)
	defer cancel()
	st, serr := r.locker.Status(ctx, lock.Name())
	switch {
	case serr != nil:
		return fmt.Sprintf("lock %s lost: it expired or was taken over", lock.Key())
	case st.Held:
		return fmt.Sprintf("lock %s lost: taken over by %s", lock.Key(), st.Holder)
	default:
		return fmt.Sprintf("lock %s lost: it expired", lock.Key())
	}
}

// releaseHeld releases the lock unless its loss already showed it is not
// ours. After a presumed loss (Redis silent until the deadline) it may
// still be ours, so it tries, quietly if it was not.
func (r *runner) releaseHeld(lock *withlock.Lock, ka *withlock.KeepAlive) {
	if ka == nil || ka.Err() == nil {
		r.release(lock)
		return
	}
	if errors.Is(ka.Err(), withlock.ErrLockNotHeld) {
		return
	}
	if err := lock.Release(context.Background()); err != nil && !errors.Is(err, withlock.ErrLockNotHeld) {
		warn("%v; the lock will expire by itself", err)
	}
}

// release gives the lock up. Failing to is worth a warning but does not
// change the exit code: the command did run, and the key expires anyway.
func (r *runner) release(lock *withlock.Lock) {
	err := lock.Release(context.Background())
	switch {
	case err == nil:
	case errors.Is(err, withlock.ErrLockNotHeld):
		warn("lock %s was no longer ours at release (it expired or was taken over); left it alone", lock.Key())
	default:
		warn("%v; the lock will expire by itself", err)
	}
}
