package withlock

// A quorum's admin methods: views, keys, Break and the release-and-record
// of a run, across its nodes.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// The quorum backend's reading, listing, breaking and recording (see
// backend.go). Each asks every node at once and, as acquire and release do
// (backend_quorum_race.go), answers as soon as the answers in hand decide
// it, without waiting for a node that is slow to answer: a read once a
// majority has answered and they settle who holds the lock on a majority
// (settled), a Break once a majority has removed the key and it is settled
// whose it was. Their Status names the nodes left out (Status.Unanswered).
// When the answers leave it open (a token on some of the nodes that
// answered, which the silent ones could make a majority), they wait for
// the others, up to ctx's end.

// adminGrace is how long an admin call still waits for the nodes that
// have not answered once the outcome was decided: longer than a run's
// lateGrace, since a person or a script reads Status.Unanswered, and a
// node of a healthy quorum that is only a little slower than the others,
// on a loaded host, should not be reported as not answering. A healthy
// quorum's every node answers within it, which then costs nothing.
const adminGrace = 250 * time.Millisecond

// adminLimit bounds the calls of an admin read or break that go on after
// the outcome was decided: up to ctx's deadline, or a minute without one.
func adminLimit(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), time.Millisecond)
	}
	return time.Minute
}

// settled reports whether views, the answers so far of a quorum's nodes
// (pending: not in yet), decide who holds the lock on a majority (need):
// a majority answered and one token is on need of them, or none can be,
// even with every node yet to answer. It also reports true when so many
// nodes failed that no majority can answer.
func settled(views []nodeStatus, pending []bool, need int) bool {
	answered, failed, waiting, most := 0, 0, 0, 0
	on := map[string]int{}
	for i, v := range views {
		switch {
		case pending[i]:
			waiting++
		case v.err != nil:
			failed++
		default:
			answered++
			if v.token != "" {
				on[v.token]++
				most = max(most, on[v.token])
			}
		}
	}
	switch {
	case failed > len(views)-need:
		return true
	case answered < need:
		return false
	}
	return most >= need || most+waiting < need
}

// noStatus marks in views the nodes that had not answered.
func noStatus(ctx context.Context, views []nodeStatus, pending []bool) {
	for i, p := range pending {
		if p {
			views[i] = nodeStatus{err: pendingErr(ctx)}
		}
	}
}

func (q *quorum) view(ctx context.Context, key string) (lockView, error) {
	views, pending := raceUntil(ctx, q.nodes, adminLimit(ctx), adminGrace, func(ctx context.Context, rdb redis.UniversalClient) nodeStatus {
		return readStatus(ctx, rdb, key)
	}, func(views []nodeStatus, pending []bool) bool { return settled(views, pending, q.need) }, nil)
	noStatus(ctx, views, pending)
	return majority("status of", key, views, q.need)
}

// views reads the keys on every node in one pipeline each (readLocks, as
// one deployment's List reads them) and combines each key's as view does,
// once every key is settled. A key another program uses (WRONGTYPE, or a
// fence counter that is not a number) gets a zero view.
func (q *quorum) views(ctx context.Context, keys []string) ([]lockView, error) {
	views := make([]lockView, len(keys))
	if len(keys) == 0 {
		return views, nil
	}
	res, pending := raceUntil(ctx, q.nodes, adminLimit(ctx), adminGrace, func(ctx context.Context, rdb redis.UniversalClient) []nodeStatus {
		// Each key's reads say their own error, a lost connection's too.
		out, _ := readLocks(ctx, rdb, keys)
		return out
	}, func(res [][]nodeStatus, pending []bool) bool {
		for k := range keys {
			if !settled(column(res, pending, k), pending, q.need) {
				return false
			}
		}
		return true
	}, nil)
	for k, key := range keys {
		col := column(res, pending, k)
		noStatus(ctx, col, pending)
		v, err := majority("status of", key, col, q.need)
		switch {
		case isWrongType(err) || errors.Is(err, errNotANumber):
			continue
		case err != nil:
			return nil, err
		}
		views[k] = v
	}
	return views, nil
}

// column is key k's status on each node that answered the reads res.
func column(res [][]nodeStatus, pending []bool, k int) []nodeStatus {
	col := make([]nodeStatus, len(res))
	for i, r := range res {
		if !pending[i] {
			col[i] = r[k]
		}
	}
	return col
}

// keys is the union of the keys of the nodes that answered, once a
// majority did: a lock held on a majority is on one of any majority.
func (q *quorum) keys(ctx context.Context, match string) ([]string, error) {
	return q.unionOfMajority(ctx, func(ctx context.Context, rdb redis.UniversalClient) nodeStrings {
		keys, err := scanKeys(ctx, rdb, match)
		return nodeStrings{keys, err}
	})
}

// unionOfMajority reads strings on every node and returns their union
// (unionIfMajority) once a majority has answered, after adminGrace for the
// others: what a majority stored is on one of any majority, so a stopped
// node costs no more than the grace, as Status's does.
func (q *quorum) unionOfMajority(ctx context.Context, read func(context.Context, redis.UniversalClient) nodeStrings) ([]string, error) {
	res, pending := raceUntil(ctx, q.nodes, adminLimit(ctx), adminGrace, read, func(res []nodeStrings, pending []bool) bool {
		ok, failed := 0, 0
		for i, r := range res {
			switch {
			case pending[i]:
			case r.err != nil:
				failed++
			default:
				ok++
			}
		}
		return ok >= q.need || failed > len(q.nodes)-q.need
	}, nil)
	for i := range res {
		if pending[i] {
			res[i].err = pendingErr(ctx)
		}
	}
	return q.unionIfMajority(res)
}

// nodeStrings is one node's answer to a read of strings (a scan's keys, a
// history's runs), or why it has none.
type nodeStrings struct {
	vals []string
	err  error
}

// unionIfMajority is the sorted union, without repeats, of the strings the
// nodes read, res in the nodes' order; a node that failed adds what it
// read before it failed (a scan cut short). It is ErrNoQuorum, naming each
// node's error, when fewer than a majority answered: the union is then no
// answer, since what a majority holds need not be on any node that did.
func (q *quorum) unionIfMajority(res []nodeStrings) ([]string, error) {
	var all []string
	var errs []error
	for i, r := range res {
		if r.err != nil {
			errs = append(errs, fmt.Errorf("node %d: %w", i+1, r.err))
		}
		all = append(all, r.vals...)
	}
	if len(q.nodes)-len(errs) < q.need {
		return nil, fmt.Errorf("%w: %d of %d nodes answered, %d needed: %w",
			ErrNoQuorum, len(q.nodes)-len(errs), len(q.nodes), q.need, nodeErrors(errs))
	}
	slices.Sort(all)
	return slices.Compact(all), nil
}

// breakLock breaks the key on every node. What it removed was held when
// one token was on a majority of them. It returns once a majority has
// removed the key, so that no token can be on a majority any more, and it
// is settled whose it was; a node that has not answered then gets the
// release of that holder's token queued (queueOnPending), which removes
// its key when it wakes, and never a key someone took since.
func (q *quorum) breakLock(ctx context.Context, key, by string) (lockView, error) {
	views, pending := raceUntil(ctx, q.nodes, adminLimit(ctx), adminGrace, func(ctx context.Context, rdb redis.UniversalClient) nodeStatus {
		token, _, err := breakOn(ctx, rdb, key, by)
		return nodeStatus{token: token, err: err}
	}, func(views []nodeStatus, pending []bool) bool { return settled(views, pending, q.need) }, nil)
	noStatus(ctx, views, pending)
	v, err := majority("break", key, views, q.need)
	if err == nil && v.token != "" {
		q.queueOnPending(ctx, pending, key, releaseScript(), []string{key}, releaseArgs(v.token, "", 0, "")...)
	}
	return v, err
}

// finish releases and records on every node, each in one pipeline; the
// record is stored when a majority stored it.
func (q *quorum) finish(ctx context.Context, l *Lock, keep time.Duration, w *recordWrite) (relErr, recErr error) {
	type result struct {
		release nodeResult
		record  error
	}
	w = w.withoutIndex() // a quorum's List scans its nodes
	// As release: a majority decides, and a node that has not answered
	// gets the same script queued (backend_quorum_race.go).
	q.forget(l)
	res, pending := race(ctx, q.nodes, q.need, l.ttl, lateGrace, func(ctx context.Context, rdb redis.UniversalClient) result {
		relErr, recErr := finishOn(ctx, rdb, l, keep, w)
		switch {
		case relErr == nil:
			return result{nodeResult{1, nil}, recErr}
		case errors.Is(relErr, ErrLockNotHeld), redis.IsReadOnlyError(relErr): // as raceScript counts it
			return result{nodeResult{}, recErr}
		}
		return result{nodeResult{0, relErr}, recErr}
	}, func(r result) verdict { return judgeResult(r.release) }, nil)
	for i, p := range pending {
		if p {
			res[i] = result{nodeResult{err: pendingErr(ctx)}, pendingErr(ctx)}
		}
	}
	q.queueOnPending(ctx, pending, l.key, finishScript(), append([]string{l.key}, w.keys(l.key)...),
		append([]any{l.token, "", keep.Milliseconds(), ""}, w.args()...)...)
	releases := make([]nodeResult, len(res))
	var stored int
	var errs []error
	for i, r := range res {
		releases[i] = r.release
		if r.record == nil {
			stored++
		} else {
			errs = append(errs, fmt.Errorf("node %d: %w", i+1, r.record))
		}
	}
	if yes, no, rerrs := tally(releases); yes < q.need {
		relErr = q.quorumError("release", l, yes, no, rerrs)
	}
	if stored < q.need {
		recErr = fmt.Errorf("%w: %d of %d nodes stored it, %d needed: %w",
			ErrNoQuorum, stored, len(q.nodes), q.need, nodeErrors(errs))
	}
	return relErr, recErr
}

// history is the union of the nodes' runs once a majority has answered:
// the same run is the same JSON on every node that stored it.
func (q *quorum) history(ctx context.Context, key string, n int) ([]string, error) {
	return q.unionOfMajority(ctx, func(ctx context.Context, rdb redis.UniversalClient) nodeStrings {
		raws, err := historyOn(ctx, rdb, key, n)
		return nodeStrings{raws, err}
	})
}
