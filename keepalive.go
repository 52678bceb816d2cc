package withlock

// KeepAlive: renewal of a held lock with a local deadline, and loss reporting.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// KeepAliveOptions tune a KeepAlive. A nil *KeepAliveOptions or zero fields
// mean the defaults.
type KeepAliveOptions struct {
	// Interval is the time between renewals; 0 means a third of the TTL, so
	// two renewals can fail before the lock is in danger. It is capped at
	// half of the TTL minus the margin.
	Interval time.Duration
	// Margin is how long before the key could expire the lock is presumed
	// lost when no renewal succeeded. It must cover clock-rate differences
	// between this host and Redis and the time the caller needs to stop its
	// work. 0 means a tenth of the TTL plus 100ms, at most a quarter of the
	// TTL. On a loaded host the deadline comes earlier still: by three times
	// how late the renewal timer fired lately, at most the margin again and
	// a quarter of what the margin leaves of the TTL (Deadline says when).
	Margin time.Duration
	// OnRenew, if not nil, is called after each renewal that got an answer
	// or failed, before the KeepAlive acts on it: took is the time from
	// sending it to its outcome, err nil on success, ErrLockNotHeld when the
	// lock turned out lost, or why the attempt failed (it is retried). It is
	// not called for a renewal still in flight when the lock is presumed
	// lost or renewal stops. It runs on the KeepAlive's goroutine and must
	// not block: it is for logging slow or failed renewals. A renewal that
	// took the lock again (Reacquire) is told to OnReacquire instead.
	OnRenew func(took time.Duration, err error)
	// OnReacquire, if not nil, is called, as OnRenew is, when Reacquire
	// took the lock again after its key vanished: took is the time from
	// sending the acquiring command to its answer. The lock is held again
	// under the same token, with a new fencing number (Lock.Fence) if it is
	// fenced; another owner may have held it in between.
	OnReacquire func(took time.Duration)
	// Reacquire, when a renewal finds the lock's key gone — not holding
	// another owner's token, and not removed by Client.Break — takes the
	// lock again at once under its own token, with the command a fresh
	// acquisition sends (SET NX PX, or with LockOptions.Fence the script
	// that draws a new, higher fencing number, which Lock.Fence then
	// returns). Only if that finds the key held by someone else is the lock
	// lost; a reacquisition whose answer does not come is retried as a
	// failed renewal is. It keeps work going through a Redis restart
	// without persistence or a failover to a replica that lacked the key.
	//
	// The price is a gap: between the key vanishing and its reacquisition,
	// another owner may have taken the lock, run, and released it; mutual
	// exclusion held only outside that gap. With fencing, the new number
	// tells a resource that another holder may have come between. The
	// reacquisition waits for no replica (LockOptions.MinReplicas).
	//
	// A lock of a quorum (NewQuorum), which already survives one member's
	// restart by putting its key back there, or a semaphore's slot
	// (NewSemaphore), whose number another holder may have taken, is never
	// reacquired: its loss is reported as without Reacquire.
	//
	// It is an option of KeepAlive, not a method of Lock, because only the
	// renewal that found the key gone can tell a vanished key from a taken
	// one, and only the KeepAlive knows the local deadline: a reacquisition
	// after it would take back a lock already reported lost.
	Reacquire bool
	// OnServerClock, if not nil, is called, as OnRenew is and before it,
	// when the Redis server's clock (its TIME, read in each renewal's
	// round trip) moved unlike this host's monotonic clock between two
	// renewals, by more than a second, or a tenth of the TTL when that is
	// less: moved is how far it ran ahead (negative: behind). Redis
	// expires keys by that clock, so a step forward expires every lock
	// early. A lock of a quorum or a semaphore does not read it.
	OnServerClock func(moved time.Duration)
	// Recheck, if not nil, brings clients of servers to read the lock on at
	// once, outside the renewal schedule: under Sentinel, of the replica a
	// failover is promoting, which the sentinels' +selected-slave,
	// +promoted-slave and +switch-master events name. Replication is
	// asynchronous, and a replica promoted right after the lock was taken
	// may lack its key; another owner can take the lock there at once,
	// while renewals would notice only at the next one, up to an interval
	// later. A server that holds
	// the lock's token changes nothing; one that holds another or none
	// loses the lock there and then, as a renewal finding that would
	// (LostError.Promoted is its address), unless Reacquire takes a
	// vanished key back at the next renewal; one that does not answer is
	// asked again every 50ms until the local deadline. Only a lock of one
	// Redis deployment (New) is read so. The caller closes the clients once
	// Stop has returned.
	Recheck <-chan redis.UniversalClient
}

// defaultMargin is the KeepAlive margin for a lock with the given TTL: a
// tenth of it for clock-rate differences plus 100ms to stop the work, but
// at most a quarter of the TTL.
func defaultMargin(ttl time.Duration) time.Duration {
	return min(ttl/10+100*time.Millisecond, ttl/4)
}

// KeepAlive renews a lock in the background and reports its loss. Create
// one with Lock.KeepAlive; its methods are safe for concurrent use.
type KeepAlive struct {
	lock        *Lock
	interval    time.Duration
	margin      time.Duration
	onRenew     func(time.Duration, error)
	onReacquire func(time.Duration)
	// onServerClock is KeepAliveOptions.OnServerClock; clockSeen, the
	// server's clock as the last renewal read it (keepalive_clocks.go), is
	// the loop's alone.
	onServerClock func(time.Duration)
	clockSeen     serverSample
	// reacquire is KeepAliveOptions.Reacquire.
	reacquire bool

	ctx    context.Context // cancelled with the loss as cause, or on Stop
	cancel context.CancelCauseFunc
	stop   context.CancelFunc // ends the loop without a loss
	lost   chan struct{}
	done   chan struct{} // closed when the loop and any renewal have ended

	mu       sync.Mutex
	err      error
	deadline time.Time // the local deadline, as Deadline returns it

	sched lateness // how late the renewal timer fires (keepalive_clocks.go)
	// rechecking is KeepAliveOptions.Recheck's goroutine (keepalive_loss.go).
	rechecking sync.WaitGroup
}

// KeepAlive keeps renewing the lock: every interval it renews it as Extend
// does once, with one token-checked PEXPIRE to its TTL, so the key never lives longer than the TTL past the
// last renewal and a crashed owner's lock is freed within the TTL. It also
// renews early when the lock's backend asks for it: a quorum lock (NewQuorum)
// does the moment another owner's key leaves a node that the lock lacks,
// which puts the key there while the lock still has its majority.
//
// It keeps a local deadline on the monotonic clock: the time the last
// successful acquiring or renewing command was sent, plus the TTL, minus
// the margin. The lock is lost when a renewal finds the key gone (unless
// KeepAliveOptions.Reacquire takes it back) or someone else's, or when that
// deadline passes without a successful renewal — a renewal stuck in a slow
// call does not delay this. On loss, Lost is
// closed, Err returns a *LostError, Context is cancelled with it as cause,
// and renewal stops; but a lock replaced by an Acquire with
// LockOptions.Replace (LostError.ReplacedBy) is renewed until Stop, so
// that the replacer waits for the Release after the work. Renewal also stops, without a loss, when ctx is done or
// Stop is called. Call Stop before Release.
func (l *Lock) KeepAlive(ctx context.Context, opts *KeepAliveOptions) *KeepAlive {
	k := &KeepAlive{
		lock:     l,
		interval: l.ttl / 3,
		margin:   defaultMargin(l.ttl),
		lost:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	if opts != nil && opts.Interval > 0 {
		k.interval = opts.Interval
	}
	if opts != nil && opts.Margin > 0 {
		k.margin = min(opts.Margin, l.ttl-time.Millisecond)
	}
	if opts != nil {
		k.onRenew, k.onReacquire, k.reacquire = opts.OnRenew, opts.OnReacquire, opts.Reacquire
		k.onServerClock = opts.OnServerClock
	}
	k.interval = max(min(k.interval, (l.ttl-k.margin)/2), time.Millisecond)
	k.deadline = l.acquired.Add(l.ttl - k.margin)
	k.ctx, k.cancel = context.WithCancelCause(ctx)
	// Not from k.ctx: a replaced lock is renewed after its loss is told.
	loopCtx, stop := context.WithCancel(ctx)
	k.stop = stop
	go k.run(loopCtx)
	if opts != nil && opts.Recheck != nil {
		k.rechecking.Add(1)
		go k.rechecks(loopCtx, opts.Recheck)
	}
	return k
}

// Deadline returns the local deadline: when the lock is presumed lost
// unless a renewal sent before it succeeds — the time the last successful
// acquiring or renewing command was sent, plus the TTL, minus the margin
// (KeepAliveOptions.Margin) and, on a loaded host, the slack for how late
// this process's timers fire. A caller that says how long a failing lock has
// left reads it here instead of redoing the arithmetic.
func (k *KeepAlive) Deadline() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.deadline
}

// setDeadline moves the local deadline to at, for Deadline.
func (k *KeepAlive) setDeadline(at time.Time) {
	k.mu.Lock()
	k.deadline = at
	k.mu.Unlock()
}

// Lost is closed when the lock is lost; it stays open when renewal stops
// for another reason.
func (k *KeepAlive) Lost() <-chan struct{} { return k.lost }

// Err returns the *LostError once the lock is lost, else nil.
func (k *KeepAlive) Err() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err
}

// Context returns a context derived from the one given to Lock.KeepAlive,
// cancelled when the lock is lost (context.Cause returns the *LostError) or
// when Stop is called. Work that must not outlive the lock runs under it.
func (k *KeepAlive) Context() context.Context { return k.ctx }

// Stop ends renewal and waits until no renewal is in flight, so none can
// land after a following Release. It does not release the lock. It is safe
// to call more than once and after a loss.
func (k *KeepAlive) Stop() {
	k.stop()
	<-k.done
	k.rechecking.Wait()
	k.cancel(context.Canceled)
}

// renewal is the outcome of one Extend, and of what followed it when it
// found the lock not ours (afterLoss).
type renewal struct {
	sent     time.Time
	took     time.Duration
	err      error
	brokenBy string // who broke the lock, when err matches ErrLockNotHeld
	// reacquired is true, with err nil, when the renewal found the key gone
	// and took the lock again (KeepAliveOptions.Reacquire).
	reacquired bool
}

func (k *KeepAlive) run(ctx context.Context) {
	l := k.lock
	// The buffer lets a renewal still in flight when the loop ends finish
	// without a reader; done waits for it.
	results := make(chan renewal, 1)
	var inflight sync.WaitGroup
	defer func() {
		inflight.Wait()
		close(k.done)
	}()

	lossAt := k.Deadline()
	base := l.acquired // when the last successful acquiring or renewing command was sent
	deadline := time.NewTimer(time.Until(lossAt))
	defer deadline.Stop()
	next := newLateTimer(k.nextRenewal(l.acquired))
	defer next.Stop()
	busy := false
	var lastErr error
	for {
		select {
		case <-ctx.Done():
			return
		case <-deadline.C:
			// Independent of any call in flight: a renewal stuck on a
			// paused or unreachable Redis cannot postpone this.
			switch {
			case busy && lastErr != nil:
				// An earlier renewal's answer (no quorum, a refused
				// command) says more about the loss than the silence.
				lastErr = fmt.Errorf("%w; then %w", lastErr, errNoAnswer)
			case busy:
				lastErr = errNoAnswer
			}
			k.lose(lastErr, "")
			return
		case <-next.C:
			if at := k.observeLateness(next, base); at.Before(lossAt) {
				lossAt = at
				deadline.Reset(time.Until(lossAt))
			}
			if busy {
				next.resetAt(time.Now().Add(k.retry()))
				continue
			}
			// After a pause of this process both timers may be due; never
			// renew a lock whose deadline has passed.
			if !time.Now().Before(lossAt) {
				k.lose(lastErr, "")
				return
			}
			busy = true
			inflight.Add(1)
			go func(lossAt time.Time) {
				defer inflight.Done()
				sent := time.Now() // before sending: the key lives at least until sent+TTL
				err := l.Extend(ctx, l.ttl)
				r := renewal{sent: sent, took: time.Since(sent), err: err}
				if errors.Is(err, ErrLockNotHeld) {
					r = k.afterLoss(ctx, r, lossAt)
				}
				results <- r
			}(lossAt)
		case r := <-results:
			busy = false
			if ctx.Err() == nil {
				k.serverClockMoved() // keepalive_clocks.go
			}
			// A replaced lock was renewed all the same: it stays ours,
			// renewed, until Release hands it to the replacer, so that the
			// replacer starts only once the work has stopped.
			by := replacedBy(r.err) // replace.go
			if by != "" {
				r.err = nil
			}
			if r.err == nil {
				// Before OnRenew, which may read Deadline.
				base = r.sent
				k.setDeadline(k.deadlineFrom(base))
			}
			switch {
			case ctx.Err() != nil:
			case r.reacquired && k.onReacquire != nil:
				k.onReacquire(r.took)
			case !r.reacquired && k.onRenew != nil:
				k.onRenew(r.took, r.err)
			}
			switch {
			case r.err == nil:
				// A successful compare-and-PEXPIRE proves the key held our
				// token all along: nobody but this loop (Reacquire)
				// recreates it with our token.
				lastErr = nil
				lossAt = k.Deadline()
				deadline.Reset(time.Until(lossAt))
				next.resetAt(k.nextRenewal(r.sent))
				if by != "" {
					k.loseTo(&LostError{Key: l.key, Err: ErrReplaced, ReplacedBy: by})
				}
			case errors.Is(r.err, ErrLockNotHeld):
				k.lose(ErrLockNotHeld, r.brokenBy)
				return
			case ctx.Err() != nil:
				return // stopped while the renewal ran
			default:
				// Unreachable, timed out, LOADING after a restart: try
				// again soon, until the deadline says otherwise.
				lastErr = r.err
				next.resetAt(time.Now().Add(k.retry()))
			}
		}
	}
}

// nextRenewal is when to renew after a success sent at sent: an interval
// later, or earlier when the backend asks for it (Lock.renewBy; a quorum
// lock can then put its key on a node that another owner's key has just
// left, before it can lose another).
func (k *KeepAlive) nextRenewal(sent time.Time) time.Time {
	at := sent.Add(k.interval)
	if due, ok := k.lock.renewalDue(); ok && due.Before(at) {
		return due
	}
	return at
}

// retry is the pause before trying again after a failed or slow renewal.
func (k *KeepAlive) retry() time.Duration { return max(k.interval/4, time.Millisecond) }

func (k *KeepAlive) lose(err error, brokenBy string) {
	k.loseTo(&LostError{Key: k.lock.key, Err: err, BrokenBy: brokenBy})
}

// loseTo reports the loss lerr, once: a replaced lock, still renewed, may
// be lost again.
func (k *KeepAlive) loseTo(lerr *LostError) {
	k.mu.Lock()
	if k.err != nil {
		k.mu.Unlock()
		return
	}
	k.err = lerr
	k.mu.Unlock()
	// Cancel before closing Lost: whoever Lost wakes must find Context
	// already done, with the loss as its cause.
	k.cancel(lerr)
	close(k.lost)
}
