package withlock

// The index of names on a Cluster, where a script cannot write it: written
// beside the scripts, pruned in steps (admin_index.go says why).

import (
	"context"
	"fmt"
	"github.com/with-lock/with-lock/internal/keys"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/pipeline"
)

// indexWrite is the write of a lock key into its prefix's index that goes
// beside a script where the script cannot make it (indexApart); the zero
// indexWrite writes nothing.
type indexWrite struct{ index, key string }

// indexBeside is the write of key into index beside a script.
func indexBeside(index, key string) indexWrite { return indexWrite{index, key} }

// eval runs script on rdb as rdb.Eval does, with w's write in the same
// pipeline: a Cluster client sends each master its part at once, so the
// write costs no round trip of its own. The script's reply is its own; a
// failed write (an ACL without HSET) is said nowhere, as a script's failed
// HSET is not.
func (w indexWrite) eval(ctx context.Context, rdb redis.UniversalClient, script string, keys []string, args ...any) *redis.Cmd {
	if w.index == "" {
		return rdb.Eval(ctx, script, keys, args...)
	}
	var cmd *redis.Cmd
	_ = pipeline.Send(ctx, rdb, func(p redis.Pipeliner) { // each command has its error
		p.HSet(ctx, w.index, w.key, "")
		cmd = p.Eval(ctx, script, keys, args...)
	})
	return cmd
}

// indexWith returns the keys of a script that also writes l's key into its
// prefix's index: keys and the index, for a script that writes it itself,
// or on a Cluster keys alone and the write to send beside it.
func indexWith(rdb redis.UniversalClient, lockKeys []string, l *Lock) ([]string, indexWrite) {
	if indexApart(rdb) {
		return lockKeys, indexBeside(keys.Index(l.c.prefix), l.key)
	}
	return append(lockKeys, keys.Index(l.c.prefix)), indexWrite{}
}

// apart returns w for a script on rdb that records the run of key: w
// itself where the script writes the index, else w without the index and
// the write to send beside it.
func (w *recordWrite) apart(rdb redis.UniversalClient, key string) (*recordWrite, indexWrite) {
	if w.index == "" || !indexApart(rdb) {
		return w, indexWrite{}
	}
	return w.withoutIndex(), indexBeside(w.index, key)
}

// indexReached reports whether the index of client's locks can be written
// through rdb, one of client's pipes: not through one master's connection
// of a Cluster (MinReplicas's, which WAIT needs), as the index may be on
// another master.
func indexReached(client redis.UniversalClient, rdb pipeSetter) bool {
	return !indexApart(client) || rdb == pipeSetter(client)
}

// unindexApart prunes keys, seen out of use, from the index of prefix on a
// Cluster, as unindexScript does in one step where it can see every key:
//
//  1. it reads their entries and the index master's time (indexSeenScript);
//  2. for each entry due a mark (none yet) or a removal (marked unused or
//     more ago), it asks the key's master whether the name is in use
//     (inUseKeys), one pipeline per master;
//  3. it marks or removes, on the index's master, the entries of those out
//     of use that are still what step 1 read (unindexSeenScript).
//
// A removal is as safe as unindexScript's. Its entry was the mark M at
// step 1, and no write came after M up to step 3, or the entry would
// differ. A Client that trusts a write of the name made before M trusts it
// until before M + indexEvery, which is before step 1 (M + unused, unused
// far above indexEvery), itself before step 2. So a lock taken on that
// trust was taken before step 2, and is seen there if still held; one
// taken after step 2 wrote the name again.
func (s *single) unindexApart(ctx context.Context, prefix string, lockKeys []string, unused time.Duration) error {
	index := keys.Index(prefix)
	args := make([]any, len(lockKeys))
	for i, k := range lockKeys {
		args[i] = k
	}
	v, err := s.rdb.Eval(ctx, indexSeenScript(), []string{index}, args...).Slice()
	if err != nil {
		return fmt.Errorf("read the index %s: %w", index, err)
	}
	if len(v) != len(lockKeys)+1 {
		return fmt.Errorf("read the index %s: unexpected reply of %d values", index, len(v))
	}
	now, _ := v[0].(int64)
	type entry struct {
		key, seen string
		used      *redis.IntCmd
	}
	var due []entry
	for i, k := range lockKeys {
		seen, ok := v[i+1].(string)
		if !ok {
			continue // gone already
		}
		if mark, err := strconv.ParseInt(seen, 10, 64); err == nil && now-mark < unused.Milliseconds() {
			continue
		}
		due = append(due, entry{key: k, seen: seen})
	}
	if len(due) == 0 {
		return nil
	}
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range due {
			due[i].used = p.Exists(ctx, inUseKeys(due[i].key)...)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("see whether %d names are in use: %w", len(due), err)
	}
	prune := []any{unused.Milliseconds()}
	for _, e := range due {
		if e.used.Val() == 0 {
			prune = append(prune, e.key, e.seen)
		}
	}
	if len(prune) == 1 {
		return nil
	}
	return s.rdb.Eval(ctx, unindexSeenScript(), []string{index}, prune...).Err()
}
