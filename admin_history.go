package withlock

// Client.History: the recorded runs of a name, newest first.

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"
)

// History returns up to n of the last runs of the lock called name that
// Lock.ReleaseAndRecord recorded and that are still kept, newest first
// (n <= 0: all of them). A name keeps Options.History runs, trimmed at each
// release, for the record's retention after the last. On a quorum it merges
// the runs of every node that answers, each run once, and needs a majority
// of answers, as List does.
func (c *Client) History(ctx context.Context, name string, n int) ([]Run, error) {
	key := c.Key(name)
	a, err := c.admin("history of " + key)
	if err != nil {
		return nil, err
	}
	raws, err := a.history(ctx, key, n)
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", key, err)
	}
	runs := make([]Run, 0, len(raws))
	for _, raw := range raws {
		rec, err := decodeRecord(raw)
		if err != nil {
			return nil, fmt.Errorf("history of %s: %w", key, err)
		}
		runs = append(runs, rec.Run)
	}
	// A list is newest first already; a quorum's union needs sorting. The
	// sort is stable, so that runs finished in the same instant keep their
	// order.
	slices.SortStableFunc(runs, func(a, b Run) int { return b.Finished.Compare(a.Finished) })
	if n > 0 && len(runs) > n {
		runs = runs[:n]
	}
	return runs, nil
}

// historyOn reads up to n of the runs at historyKey(key) on rdb.
func historyOn(ctx context.Context, rdb redis.UniversalClient, key string, n int) ([]string, error) {
	raws, err := rdb.LRange(ctx, historyKey(key), 0, int64(n)-1).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	return raws, nil
}

func (s *single) history(ctx context.Context, key string, n int) ([]string, error) {
	return historyOn(ctx, s.rdb, key, n)
}

func (q *quorum) history(ctx context.Context, key string, n int) ([]string, error) {
	type read struct {
		raws []string
		err  error
	}
	res := eachNode(q.nodes, func(rdb redis.UniversalClient) read {
		raws, err := historyOn(ctx, rdb, key, n)
		return read{raws, err}
	})
	var all []string
	var errs []error
	for i, r := range res {
		if r.err != nil {
			errs = append(errs, fmt.Errorf("node %d: %w", i+1, r.err))
		}
		all = append(all, r.raws...)
	}
	if len(q.nodes)-len(errs) < q.need {
		return nil, fmt.Errorf("%w: %d of %d nodes answered, %d needed: %w",
			ErrNoQuorum, len(q.nodes)-len(errs), len(q.nodes), q.need, nodeErrors(errs))
	}
	// The same run is the same JSON on every node that stored it.
	slices.Sort(all)
	return slices.Compact(all), nil
}
