package withlock

// The lease mark (internal/lapse, for the command's --lock-delay): did the
// lease before this one end by a release, or lapse?

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/keys"
	"github.com/with-lock/with-lock/internal/lapse"
)

// A lease's end leaves a trace only if it was a release: the acquisition
// sets the lease mark "<base>:lease" (keys.Lease) with SET … GET in its
// SET's round trip, every release deletes it (release.lua), and an
// expiry leaves it. So the mark's old value, read by that same SET, says
// whether the lease before this one was released (no mark) or lapsed (a
// mark). A try that finds the lock held sets the mark too: a lease is out
// then, whoever holds it, and its holder's release clears it.
//
// A waiter handed the lock by the fair line sent no SET of its own: it
// marks the lease once it has the lock (markLease), one round trip more,
// and reads the mark's old value otherwise. A release's hand-over has
// deleted the mark, or, from a Client with waiters of its own, left it as
// the holder had it ("1"), which costs that frequent hand-over no
// command; the line's check handing on a key that expired, and a break
// handing on a key whose holder may still run, turn a mark left into
// leaseLapsed.

// What the lease mark holds: leaseOut from an acquisition, leaseLapsed
// once the fair line handed on a key that expired under it.
const (
	leaseOut    = "1"
	leaseLapsed = "2"
)

func init() {
	lapse.Implement(lapse.Backend{
		Detect: func(opts any) { opts.(*LockOptions).detectLapse = true },
		Lapsed: func(lock any) bool { return lock.(*Lock).lapsed },
	})
}

// leaseRefused is the error of an acquisition that marks its lease (internal/lapse) where the
// lock cannot keep a lease mark, or nil.
func (l *Lock) leaseRefused(b backend) error {
	if !l.lapse {
		return nil
	}
	_, semaphore := b.(slotted)
	_, single := b.(*single)
	switch {
	case semaphore:
		return unsupported(fmt.Sprintf("acquire %s: a semaphore keeps no lease mark (--lock-delay)", l.key))
	case !single:
		return unsupported(fmt.Sprintf("acquire %s: no lease mark on a quorum of independent masters (--lock-delay)", l.key))
	case !keys.HasLine(l.key):
		return unsupported(fmt.Sprintf("acquire %s: a name with '}' and no hash tag has no room for a lease mark (--lock-delay)", l.key))
	}
	return nil
}

// queueLease queues, in p after l's acquiring command, the SET … GET of
// l's lease mark; nil when l does not detect a lapse.
func queueLease(ctx context.Context, p redis.Pipeliner, l *Lock) *redis.StatusCmd {
	if !l.lapse {
		return nil
	}
	key, _ := keys.Lease(l.key)
	return p.SetArgs(ctx, key, leaseOut, redis.SetArgs{Get: true})
}

// leaseRead notes in l what the SET … GET of its lease mark answered:
// after its own SET, any mark is a lapse; after a hand-over (handed), only
// leaseLapsed is. An answer that is no answer (the mark's key refused by
// an ACL, say) reads as a lapse: nothing says the last lease was released.
func (l *Lock) leaseRead(cmd *redis.StatusCmd, handed bool) {
	if cmd == nil {
		return
	}
	l.leaseSent = true
	old, err := cmd.Result()
	switch {
	case errors.Is(err, redis.Nil):
		l.lapsed = false
	case err == nil && handed:
		l.lapsed = old == leaseLapsed
	default:
		l.lapsed = true
	}
}

// markLease sets l's lease mark after l was handed over without a SET of
// its own (the fair line), and notes whether the last lease lapsed.
func (s *single) markLease(ctx context.Context, l *Lock) {
	var cmd *redis.StatusCmd
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		cmd = queueLease(ctx, p, l)
		return nil
	})
	l.leaseRead(cmd, true)
}

// leaseAfterHandOver marks the lease of l, which an Acquire got, when its
// SET did not (a hand-over by the fair line).
func (c *Client) leaseAfterHandOver(ctx context.Context, l *Lock) {
	if l == nil || !l.lapse || l.leaseSent {
		return
	}
	if s, ok := c.b.(*single); ok {
		s.markLease(ctx, l)
	}
}
