package withlock

// The index of held locks that List reads instead of scanning, kept up at
// each renewal and pruned of names that are no longer held.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The index of a prefix's names: a set of lock keys that List reads instead of
// scanning the whole keyspace, so that its cost grows with the locks, not
// with the keys beside them. It is written where a lock's key is already
// written, without a command of its own: by the release's script when it
// records the run (record.lua) and by the holder's first renewal
// (extend_index.lua), never by the acquisition, which stays one SET NX. A
// name is therefore listed from its first recorded release on, for as long
// as its record is kept, and a name that never ran before from its
// holder's first renewal (a third of its TTL). Entries whose lock and
// records are all gone are pruned when List finds them.
//
// Only one deployment that is not a Cluster keeps an index: a Cluster's
// locks are spread over its slots, and a script may only write keys of its
// own slot; a quorum's List asks every node, which a scan does. Both scan.

// indexKey is the index of the lock keys under prefix: "{<prefix>}:index",
// which no lock key under prefix can be (they start with prefix) and which
// the documented ACL's "~{<prefix>*" covers.
func indexKey(prefix string) string { return "{" + prefix + "}:index" }

// hasIndex reports whether rdb keeps the index: any deployment but a
// Cluster.
func hasIndex(rdb redis.UniversalClient) bool {
	_, cluster := rdb.(*redis.ClusterClient)
	return !cluster
}

// withoutIndex is w without the index's write.
func (w *recordWrite) withoutIndex() *recordWrite {
	c := *w
	c.index = ""
	return &c
}

// extendIndexScript is extendScript that also puts the lock's key into its
// prefix's index: KEYS[2] is the index; a failed SADD (an ACL without it)
// does not fail the renewal.
// The holder's first renewal uses it, later ones the plain script.
var extendIndexScript = lazyScript("extend_index.lua")

// extendIndexed is extend for l's first renewal: it also indexes l.
func (s *single) extendIndexed(ctx context.Context, l *Lock, ttl time.Duration) error {
	n, err := s.rdb.Eval(ctx, extendIndexScript(), []string{l.key, indexKey(l.c.prefix)}, l.token, ttl.Milliseconds()).Int64()
	if err != nil {
		return opError("extend", l.key, err)
	}
	if n != 1 {
		return ErrLockNotHeld
	}
	l.indexed.Store(true)
	return nil
}

// indexed returns the keys in the index of prefix, and false when the
// deployment keeps none or it is empty (a deployment that a version
// without the index used): then List scans.
func (s *single) indexed(ctx context.Context, prefix string) ([]string, bool, error) {
	if !hasIndex(s.rdb) {
		return nil, false, nil
	}
	keys, err := s.rdb.SMembers(ctx, indexKey(prefix)).Result()
	if err != nil {
		return nil, false, fmt.Errorf("read the index %s: %w", indexKey(prefix), err)
	}
	return keys, len(keys) > 0, nil
}

// unindexScript removes from the index KEYS[1] each lock key among the
// rest, given with its record and last success, that it finds with none of
// the three: checked and removed in one step, so that a holder that indexed
// its name after List read it is not dropped.
var unindexScript = lazyScript("unindex.lua")

// unindex removes keys, seen stale, from the index of prefix if they still
// are.
func (s *single) unindex(ctx context.Context, prefix string, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	ks := []string{indexKey(prefix)}
	for _, k := range keys {
		ks = append(ks, k, recordKey(k), successKey(k))
	}
	return s.rdb.Eval(ctx, unindexScript(), ks).Err()
}

// views reads the views of keys in one pipeline (on a Cluster, one per
// master), then a semaphore's slots for each key that holds its marker. A
// key's reads are not one transaction, unlike Status's: a lock taken or
// released meanwhile may be shown either way, as List says. A key that
// another program uses (WRONGTYPE) gets a zero view.
func (s *single) views(ctx context.Context, keys []string) ([]lockView, error) {
	reads := make([]*statusReads, len(keys))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, key := range keys {
			reads[i] = queueStatus(ctx, p, key)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) && !isWrongType(err) {
		return nil, fmt.Errorf("status of %d locks: %w", len(keys), err)
	}
	views := make([]lockView, len(keys))
	for i, key := range keys {
		n := reads[i].result()
		if isWrongType(n.err) {
			continue
		}
		if n.err != nil {
			return nil, fmt.Errorf("status of %s: %w", key, n.err)
		}
		if views[i], err = s.viewOf(ctx, key, n); err != nil {
			return nil, err
		}
	}
	return views, nil
}

// views reads each key as view does: a quorum needs every node's view of
// a key to combine them.
func (q *quorum) views(ctx context.Context, keys []string) ([]lockView, error) {
	views := make([]lockView, len(keys))
	for i, key := range keys {
		v, err := q.view(ctx, key)
		if isWrongType(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		views[i] = v
	}
	return views, nil
}

// listKeys returns the lock keys List reads: from the index where the
// deployment keeps one, else by scanning for the keys under the prefix
// (and with all, the last-run records under it), as also with scan.
// fromIndex says which.
func (c *Client) listKeys(ctx context.Context, a adminBackend, all, scan bool) (keys []string, fromIndex bool, err error) {
	if ik, ok := c.b.(indexKeeper); ok && !scan {
		keys, fromIndex, err = ik.indexed(ctx, c.prefix)
		if err != nil {
			return nil, false, fmt.Errorf("list %s*: %w", c.prefix, err)
		}
	}
	if fromIndex {
		keys = slices.DeleteFunc(keys, func(k string) bool { return !strings.HasPrefix(k, c.prefix) })
		slices.Sort(keys)
		return keys, true, nil
	}
	if keys, err = a.keys(ctx, globEscape(c.prefix)+"*"); err != nil {
		return nil, false, fmt.Errorf("list %s*: %w", c.prefix, err)
	}
	var recorded []string // with all: the lock keys of the records found
	if all {
		recs, err := a.keys(ctx, recordPattern(c.prefix))
		if err != nil {
			return nil, false, fmt.Errorf("list records of %s*: %w", c.prefix, err)
		}
		// The records of names with a hash tag or a '}' ("P{tag}x:last",
		// "Pa}b:last:<n>") start with the prefix P: the first SCAN found them.
		for _, rk := range append(recs, keys...) {
			if key, ok := lockKeyOfRecord(rk); ok && strings.HasPrefix(key, c.prefix) {
				recorded = append(recorded, key)
			}
		}
	}
	keys = append(slices.DeleteFunc(keys, isSideKey), recorded...)
	slices.Sort(keys)
	return slices.Compact(keys), false, nil
}
