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
// backend.go): each asks every node and needs a majority of answers.

func (q *quorum) view(ctx context.Context, key string) (lockView, error) {
	views := eachNode(q.nodes, func(rdb redis.UniversalClient) nodeStatus { return readStatus(ctx, rdb, key) })
	return majority(key, views, q.need)
}

// keys is the union of every node's keys: a lock held on a majority is on
// some node that answered whenever a majority answers.
func (q *quorum) keys(ctx context.Context, match string) ([]string, error) {
	type scan struct {
		keys []string
		err  error
	}
	res := eachNode(q.nodes, func(rdb redis.UniversalClient) scan {
		keys, err := scanKeys(ctx, rdb, match)
		return scan{keys, err}
	})
	var all []string
	var errs []error
	for i, r := range res {
		if r.err != nil {
			errs = append(errs, fmt.Errorf("node %d: %w", i+1, r.err))
		}
		all = append(all, r.keys...)
	}
	if len(q.nodes)-len(errs) < q.need {
		return nil, fmt.Errorf("%w: %d of %d nodes answered, %d needed: %w",
			ErrNoQuorum, len(q.nodes)-len(errs), len(q.nodes), q.need, nodeErrors(errs))
	}
	slices.Sort(all)
	return slices.Compact(all), nil
}

// breakLock breaks the key on every node. What it removed was held when
// one token was on a majority of them.
func (q *quorum) breakLock(ctx context.Context, key, by string) (lockView, error) {
	views := eachNode(q.nodes, func(rdb redis.UniversalClient) nodeStatus {
		token, _, err := breakOn(ctx, rdb, key, by)
		return nodeStatus{token: token, err: err}
	})
	return majority(key, views, q.need)
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
