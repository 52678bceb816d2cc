package withlock

// The backend for a Redlock quorum of independent masters (NewQuorum).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Clock drift allowed between the nodes of a quorum, as in the Redlock
// algorithm: 1% of the TTL plus 2ms for the resolution of Redis's expiry.
const (
	driftFactor = 0.01
	driftFloor  = 2 * time.Millisecond
)

// NewQuorum returns a Client that takes each lock on a majority of nodes,
// independent Redis masters that do not replicate to each other (the
// Redlock algorithm; use an odd number of them, typically 3 or 5). The lock
// survives the loss of any minority of the nodes, including a restart
// without persistence. Its Locks have the same API as those of New:
//
//   - TryAcquire sets the key on all nodes at once and succeeds when a
//     majority set it within the validity time (TTL minus the time taken
//     minus clock drift); otherwise it releases what it got and fails with
//     a *NotObtainedError when others hold a majority, or ErrNoQuorum.
//   - Extend and Release act on all nodes and succeed when a majority
//     confirms. None of them waits for a node once a majority has
//     answered; a node that answers late is dealt with in the background
//     and keeps no key of a released Lock. Extend
//     also puts the key back on nodes that lost it while the lock kept its
//     majority, so further restarts are survived.
//   - TTL is the time until fewer than a majority of the keys remain.
//   - Client.Status, List and Break do not wait for a node either once
//     the answers of a majority settle who holds the lock;
//     Status.Unanswered names the nodes they did without.
//   - A node where another owner's key stood when the lock was taken or
//     renewed is repaired the moment that key expires: KeepAlive renews
//     early then, so the lock gains the node while it still has its
//     majority (Lock.Extend called by hand repairs only when it runs).
//   - Acquire waits for release messages from the first node only; a
//     Release hands the lock to a waiter of the same
//     Client through the ordinary wake-up, not in its own round trip.
//
// Fencing numbers (LockOptions.Fence) are refused with
// errors.ErrUnsupported: counters on independent nodes do not make one
// increasing sequence. Redlock's safety also assumes bounded clock drift
// and process pauses shorter than the TTL; see docs/production-redis.md.
//
// With one node, NewQuorum is New.
func NewQuorum(nodes []redis.UniversalClient, opts *Options) (*Client, error) {
	if len(nodes) == 0 {
		return nil, errors.New("withlock: NewQuorum needs at least one Redis node")
	}
	if len(nodes) == 1 {
		return New(nodes[0], opts), nil
	}
	return newClient(&quorum{nodes: slices.Clone(nodes), need: len(nodes)/2 + 1}, opts), nil
}

// quorum keeps each lock as one key on each of its nodes, independent
// masters, and counts it held when a majority of them hold our token.
type quorum struct {
	nodes []redis.UniversalClient
	need  int // a majority of nodes

	mu    sync.Mutex
	locks map[*Lock]*quorumState // Locks with claims still running (backend_quorum_race.go)
}

// nodeResult is one node's answer: a script's integer, or an error.
type nodeResult struct {
	n   int64
	err error
}

// eachNode runs f on every node at once and returns their answers in node
// order.
func eachNode[T any](nodes []redis.UniversalClient, f func(redis.UniversalClient) T) []T {
	res := make([]T, len(nodes))
	var wg sync.WaitGroup
	for i, rdb := range nodes {
		wg.Go(func() { res[i] = f(rdb) })
	}
	wg.Wait()
	return res
}

// tally counts the nodes that answered positively, those that answered 0
// or less (the key is not ours there), and collects the errors of the
// others.
func tally(res []nodeResult) (yes, no int, errs []error) {
	for i, r := range res {
		switch {
		case r.err != nil:
			errs = append(errs, fmt.Errorf("node %d: %w", i+1, r.err))
		case r.n > 0:
			yes++
		default:
			no++
		}
	}
	return yes, no, errs
}

// validity is what is left of ttl after elapsed and the allowed drift.
func validity(ttl, elapsed time.Duration) time.Duration {
	return ttl - elapsed - time.Duration(float64(ttl)*driftFactor) - driftFloor
}

func (q *quorum) acquire(ctx context.Context, l *Lock, opts *LockOptions) error {
	if opts != nil && opts.Fence {
		return unsupported(fmt.Sprintf("acquire %s: no fencing numbers on a quorum of independent masters", l.key))
	}
	// A majority decides (backend_quorum_race.go): a node that answers after it
	// did is a straggler, handled by lateClaim. A node slower than the TTL
	// cannot contribute anyway.
	q.begin(l)
	res, pending := q.raceScript(ctx, l.ttl, lateGrace, func(ctx context.Context, rdb redis.UniversalClient) (int64, error) {
		return claimOn(ctx, rdb, l, opts)
	}, func(i int, r nodeResult) { q.lateClaim(l, i, r) })
	left := validity(l.ttl, time.Since(l.acquired))
	yes, no, errs := tally(res)
	ok := yes >= q.need && left > 0
	answered := 0
	for _, p := range pending {
		if !p {
			answered++
		}
	}
	q.decide(l, ok, answered)
	if ok {
		var free time.Duration
		for _, r := range res {
			if r.err == nil {
				free = earliest(free, freeAfter(l, r.n))
			}
		}
		l.renewBy.Store(int64(free))
		return nil
	}
	// Remove our token everywhere it may be, not only where we know it
	// landed: a node whose reply was lost may have set the key all the
	// same. The clean-up is queued, not waited for (cleanupScript); a
	// claim still on its way is removed when it answers (lateClaim).
	// Where the claim was confirmed the node answers: its deletion is
	// awaited, so that no key of ours is there when this returns.
	var wg sync.WaitGroup
	for i, r := range res {
		if r.err == nil && r.n > 0 || r.err != nil && mayHaveLanded(r.err) {
			wg.Go(func() {
				cleanupScript(ctx, q.nodes[i], r.err == nil, l.key, releaseScript(), []string{l.key}, releaseArgs(l.token, "", 0, "")...)
			})
		}
	}
	wg.Wait()
	switch {
	case no > len(q.nodes)-q.need:
		return q.held(ctx, l, res)
	case yes >= q.need:
		return fmt.Errorf("acquire %s: %w: a majority took %s of the %s TTL, leaving no validity time",
			l.key, ErrNoQuorum, time.Since(l.acquired).Round(time.Millisecond), l.ttl)
	default:
		return fmt.Errorf("acquire %s: %w: %d of %d nodes, %d needed: %w",
			l.key, ErrNoQuorum, yes, len(q.nodes), q.need, nodeErrors(errs))
	}
}

// claimOn takes l on one node of a quorum, recognising our own token as
// taken, and waits for replicas when asked to.
func claimOn(ctx context.Context, rdb redis.UniversalClient, l *Lock, opts *LockOptions) (int64, error) {
	if opts == nil || opts.MinReplicas <= 0 {
		return rdb.Eval(ctx, claimScript(), []string{l.key}, l.token, l.ttl.Milliseconds()).Int64()
	}
	node := single{rdb: rdb}
	ok, err := node.acquireReplicated(ctx, l, opts)
	if ok {
		return 1, nil
	}
	return 0, err
}

// held describes the holder of a lock that a majority of nodes refused,
// from the first node that refused it.
func (q *quorum) held(ctx context.Context, l *Lock, res []nodeResult) error {
	for i, r := range res {
		if r.err == nil && r.n <= 0 {
			token, ttl, _ := inspect(ctx, q.nodes[i], l.key)
			return notObtained(l.key, token, ttl)
		}
	}
	return notObtained(l.key, "", 0)
}

// quorumError is ErrLockNotHeld when the key is gone from (or someone
// else's on) so many nodes that no majority can be ours, else ErrNoQuorum
// with the errors of the nodes that did not answer.
func (q *quorum) quorumError(op string, l *Lock, yes, no int, errs []error) error {
	if no > len(q.nodes)-q.need {
		return ErrLockNotHeld
	}
	return fmt.Errorf("%s %s: %w: %d of %d nodes confirmed, %d needed: %w",
		op, l.key, ErrNoQuorum, yes, len(q.nodes), q.need, nodeErrors(errs))
}

func (q *quorum) release(ctx context.Context, l *Lock, keep time.Duration) error {
	q.forget(l)
	res, pending := q.raceScript(ctx, l.ttl, lateGrace, func(ctx context.Context, rdb redis.UniversalClient) (int64, error) {
		return rdb.Eval(ctx, releaseScript(), []string{l.key}, releaseArgs(l.token, "", keep, "")...).Int64()
	}, nil)
	// A node that has not confirmed gets the release queued as well: it
	// runs when the node wakes even if this process has exited by then.
	q.queueOnPending(ctx, pending, l.key, releaseScript(), []string{l.key}, releaseArgs(l.token, "", keep, "")...)
	yes, no, errs := tally(res)
	if yes >= q.need {
		return nil
	}
	return q.quorumError("release", l, yes, no, errs)
}

func (q *quorum) renew(ctx context.Context, l *Lock, ttl time.Duration) error {
	start := time.Now()
	// A late answer is harmless: extend.lua never creates a key.
	res, _ := q.raceScript(ctx, ttl, lateGrace, func(ctx context.Context, rdb redis.UniversalClient) (int64, error) {
		return rdb.Eval(ctx, extendScript(), []string{l.key}, l.token, ttl.Milliseconds()).Int64()
	}, nil)
	left := validity(ttl, time.Since(start))
	yes, no, errs := tally(res)
	if yes < q.need || left <= 0 {
		return q.quorumError("extend", l, yes, no, errs)
	}
	// The lock still has its majority, so no one else can hold it: put the
	// key back on the nodes that lost it (restarted without persistence),
	// or the next loss of a node would cost the lock its majority. Never on
	// a node where someone else's key sits; never when the majority is gone
	// (extend.lua does not recreate keys, and neither does this).
	repairTTL := ttl - time.Since(start) // no longer than the renewed keys
	var free time.Duration
	for i, r := range res {
		if r.err == nil && r.n == 0 && repairTTL >= time.Millisecond {
			n, err := q.nodes[i].Eval(ctx, claimScript(), []string{l.key}, l.token, repairTTL.Milliseconds()).Int64()
			if err == nil {
				free = earliest(free, freeAfter(l, n))
			}
		}
	}
	l.renewBy.Store(int64(free))
	return nil
}

// freeAfter is, from a claim.lua answer just received, when that node's key
// can be claimed, as a time since l was acquired; 0 when it is ours or
// another owner's without an expiry. The earliest such time of a lock's
// nodes goes to l.renewBy: KeepAlive renews then, and the renewal (renew)
// puts the key on that node while the lock still has its majority. A node
// that did not answer has no known time: the next regular renewal tries it
// again.
func freeAfter(l *Lock, n int64) time.Duration {
	if n >= 0 {
		return 0
	}
	return time.Since(l.acquired) + time.Duration(-n)*time.Millisecond
}

// earliest is the earlier of two times, 0 meaning none.
func earliest(a, b time.Duration) time.Duration {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

func (q *quorum) ttl(ctx context.Context, l *Lock) (time.Duration, error) {
	res, _ := q.raceScript(ctx, l.ttl, 0, func(ctx context.Context, rdb redis.UniversalClient) (int64, error) {
		ms, err := rdb.Eval(ctx, pttlScript(), []string{l.key}, l.token).Int64()
		return ms + 1, err // so that a key with 0ms left still counts as present
	}, nil)
	var left []time.Duration
	for _, r := range res {
		if r.err == nil && r.n > 0 {
			left = append(left, time.Duration(r.n-1)*time.Millisecond)
		}
	}
	if len(left) < q.need {
		yes, no, errs := tally(res)
		return 0, q.quorumError("ttl of", l, yes, no, errs)
	}
	// The lock lasts as long as a majority of its keys: the quorum-th
	// longest.
	slices.SortFunc(left, func(a, b time.Duration) int { return int(b - a) })
	return left[q.need-1], nil
}

// subscribe listens on the first node only. The release script publishes on
// every node it deletes the key from, so any one node hears every release
// that reached it; listening on all would cost a connection per node for
// the same hint. When the first node is down or missed a release, waiters
// still try again at the holder's expiry and at the fallback poll, as they
// do when a message is lost on one deployment.
func (q *quorum) subscribe(ctx context.Context) *redis.PubSub { return q.nodes[0].Subscribe(ctx) }

// A quorum keeps no fair line (fairLine): each master would keep its own
// line, and no line could be held by a majority, so waiters on a quorum
// wait in their Client's local queues (wait_local.go), woken by release
// messages. Nor does it hand over (handOverer): a pipelined SET NX on
// each node is not a quorum acquisition (no validity check, no clean-up of
// a minority); the waiter, woken by the release message, acquires on its
// own.
