package withlock

// A quorum call decided by the first majority, and the clean-up of what a
// slow node does after it (stragglers).

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// A majority decides: a quorum's calls (acquire, renew, release, ttl)
// return as soon as their outcome is known, and never wait for a node that
// is slow to answer once a majority has (race). The slow node's call goes
// on in the background, and what it leaves behind is taken care of:
//
//   - A claim that answers after its acquisition was decided (a straggler)
//     is checked against the Lock's state (quorumState): while the Lock is
//     held the key is simply ours there too, as a repair would make it;
//     once the Lock is released, or its acquisition failed, the straggler
//     removes our token from that node (cleanupScript), so a member that
//     answers late cannot keep our key.
//   - A release (or finish) that a node has not confirmed is also queued
//     on a fresh connection to it (queueScript): if the process exits
//     before the node answers, the node still runs the deletion when it
//     wakes, after whatever of ours was queued there before.
//
// Safety is unchanged: an acquisition needs the same majority within the
// same validity time, counted from before the first claim was sent.

// errNoAnswerYet stands for the answer of a node that had not answered
// when the outcome was decided.
var errNoAnswerYet = errors.New("no answer yet")

// lateGrace is how long a decided call still waits for the nodes that
// have not answered. On a healthy quorum, whose nodes answer within
// moments of each other, every call then sees every node: an acquisition
// knows each node's holder, a renewal repairs each node that lost the key,
// and no release needs queueing. Only a slow node costs it.
const lateGrace = 20 * time.Millisecond

// queueWait bounds how long a release waits to queue its deletion on the
// nodes that did not answer: a stopped server's kernel accepts at once; a
// host that does not answer at all is not waited for.
const queueWait = 250 * time.Millisecond

// verdict is how an answer counts toward a majority.
type verdict int

const (
	against verdict = iota // the node answered: not ours there
	failed                 // the node did not answer, or failed
	agrees                 // the node confirmed
)

// settleGrace is how long a call that can no longer succeed still waits for
// the nodes that have not answered when neither its refusals nor its
// failures alone are a majority: their answers tell a lock held elsewhere
// (a contender's busy) from nodes that cannot be reached, which a node
// slower than lateGrace on a loaded host would otherwise leave untold.
const settleGrace = 250 * time.Millisecond

// race runs f on every node at once and returns their answers in node
// order as soon as the outcome is decided: need nodes agree, or so many
// did not that need cannot, or ctx ends; then it waits up to grace more
// for the others (settleGrace when the nodes that did not agree are split
// between refusals and failures, and neither is a majority). pending marks the nodes whose answer had not come by then:
// their answer in res is the zero T. Their calls go on under a context of
// their own, bounded by limit and not by ctx; late, if not nil, gets each
// of their answers as it comes (from another goroutine).
func race[T any](ctx context.Context, nodes []redis.UniversalClient, need int, limit, grace time.Duration,
	f func(context.Context, redis.UniversalClient) T, judge func(T) verdict, late func(int, T),
) (res []T, pending []bool) {
	n := len(nodes)
	return raceGraced(ctx, nodes, limit, grace, f, func(res []T, pending []bool) time.Duration {
		yes, refused, failures := 0, 0, 0
		for i, v := range res {
			switch {
			case pending[i]:
			case judge(v) == agrees:
				yes++
			case judge(v) == against:
				refused++
			default:
				failures++
			}
		}
		switch {
		case yes >= need || refused > n-need || failures > n-need:
			return grace
		case refused+failures > n-need:
			return max(grace, settleGrace)
		}
		return undecided
	}, late)
}

// undecided is what raceGraced's decided says while the outcome is open.
const undecided time.Duration = -1

// raceUntil is race with the outcome decided by decided, which is asked
// after each answer with the answers so far (pending marks those not in).
func raceUntil[T any](ctx context.Context, nodes []redis.UniversalClient, limit, grace time.Duration,
	f func(context.Context, redis.UniversalClient) T, decided func(res []T, pending []bool) bool, late func(int, T),
) (res []T, pending []bool) {
	return raceGraced(ctx, nodes, limit, grace, f, func(res []T, pending []bool) time.Duration {
		if decided(res, pending) {
			return grace
		}
		return undecided
	}, late)
}

// raceGraced is raceUntil whose decided also says how long to wait for
// the others once the outcome is decided (undecided while it is not); ctx's
// end decides with grace.
func raceGraced[T any](ctx context.Context, nodes []redis.UniversalClient, limit, grace time.Duration,
	f func(context.Context, redis.UniversalClient) T, decided func(res []T, pending []bool) time.Duration, late func(int, T),
) (res []T, pending []bool) {
	type answer struct {
		i int
		v T
	}
	n := len(nodes)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), limit)
	ch := make(chan answer, n) // never blocks a call that answers late
	for i, rdb := range nodes {
		go func() { ch <- answer{i, f(cctx, rdb)} }()
	}
	res = make([]T, n)
	pending = make([]bool, n)
	for i := range pending {
		pending[i] = true
	}
	got := 0
	var graced <-chan time.Time
	done := ctx.Done()
wait:
	for got < n {
		select {
		case a := <-ch:
			res[a.i], pending[a.i] = a.v, false
			got++
			if graced == nil {
				if g := decided(res, pending); g >= 0 {
					graced = time.After(g)
				}
			}
		case <-graced:
			break wait
		case <-done:
			done = nil // the answers so far decide, after the grace
			if graced == nil {
				graced = time.After(grace)
			}
		}
	}
	left := n - got
	if left == 0 {
		cancel()
		return res, pending
	}
	go func() {
		defer cancel()
		for range left {
			a := <-ch
			if late != nil {
				late(a.i, a.v)
			}
		}
	}()
	return res, pending
}

// judgeResult counts a script's answer: positive agrees, 0 or less is
// against, an error failed.
func judgeResult(r nodeResult) verdict {
	switch {
	case r.err != nil:
		return failed
	case r.n > 0:
		return agrees
	}
	return against
}

// noAnswer marks in res the nodes that had not answered.
func noAnswer(ctx context.Context, res []nodeResult, pending []bool) {
	for i, p := range pending {
		if p {
			res[i] = nodeResult{err: pendingErr(ctx)}
		}
	}
}

// pendingErr is the error of a node that had not answered: ctx's when it
// ended first (its deadline is the caller's timeout), else errNoAnswerYet.
func pendingErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return errNoAnswerYet
}

// raceScript is race for a script-like f. A READONLY reply counts as 0:
// a demoted master no longer holds our key for anyone. The nodes that had
// not answered are reported with pendingErr.
func (q *quorum) raceScript(ctx context.Context, limit, grace time.Duration, f func(context.Context, redis.UniversalClient) (int64, error), late func(int, nodeResult)) ([]nodeResult, []bool) {
	res, pending := race(ctx, q.nodes, q.need, limit, grace, func(ctx context.Context, rdb redis.UniversalClient) nodeResult {
		n, err := f(ctx, rdb)
		if redis.IsReadOnlyError(err) {
			return nodeResult{}
		}
		return nodeResult{n, err}
	}, judgeResult, late)
	noAnswer(ctx, res, pending)
	return res, pending
}

// queueOnPending queues script (keys, args) on each node that had not
// answered, at once, waiting at most queueWait: see queueScript.
func (q *quorum) queueOnPending(ctx context.Context, pending []bool, key, script string, keys []string, args ...any) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), queueWait)
	defer cancel()
	var wg sync.WaitGroup
	for i, p := range pending {
		if p {
			wg.Go(func() { _ = queueScript(ctx, q.nodes[i], key, script, keys, args...) })
		}
	}
	wg.Wait()
}

// quorumState is what the quorum knows of one Lock while calls of its
// acquisitions are still running on some node.
type quorumState struct {
	held       bool // the last acquisition succeeded and the Lock was not released since
	attempting bool // an acquisition is deciding
	open       int  // claims still running
}

// begin notes that an acquisition of l sends its claims.
func (q *quorum) begin(l *Lock) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.locks == nil {
		q.locks = map[*Lock]*quorumState{}
	}
	st := q.locks[l]
	if st == nil {
		st = &quorumState{}
		q.locks[l] = st
	}
	st.attempting, st.held = true, false
	st.open += len(q.nodes)
}

// decide notes the outcome of l's acquisition, of whose claims answered
// have answered.
func (q *quorum) decide(l *Lock, held bool, answered int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	st := q.locks[l]
	st.attempting, st.held = false, held
	st.open -= answered
	if st.open == 0 {
		delete(q.locks, l)
	}
}

// forget notes that l was released: a claim answering late must now
// remove our key.
func (q *quorum) forget(l *Lock) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if st := q.locks[l]; st != nil {
		st.held = false
	}
}

// lateClaim handles the answer r of node i to a claim of l that came after
// its acquisition was decided.
func (q *quorum) lateClaim(l *Lock, i int, r nodeResult) {
	q.mu.Lock()
	st := q.locks[l]
	st.open--
	// While an acquisition decides, it sends its own clean-up, after this
	// answer, if it fails.
	held, deciding := st.held, st.attempting
	if st.open == 0 && !deciding {
		delete(q.locks, l)
	}
	q.mu.Unlock()
	switch {
	case deciding:
	case held:
		if r.err == nil && r.n < 0 { // someone else's key: repair when it frees
			earlier(&l.renewBy, freeAfter(l, r.n))
		}
	case r.err == nil && r.n > 0, r.err != nil && mayHaveLanded(r.err):
		cleanupScript(context.Background(), q.nodes[i], r.err == nil, l.key, releaseScript(), []string{l.key}, releaseArgs(l.token, "", 0, "")...)
	}
}

// earlier stores d in at unless at holds an earlier time; 0 means none.
func earlier(at interface {
	Load() int64
	CompareAndSwap(old, new int64) bool
}, d time.Duration) {
	for {
		old := at.Load()
		v := int64(earliest(time.Duration(old), d))
		if v == old || at.CompareAndSwap(old, v) {
			return
		}
	}
}
