package withlock

// The index of a prefix's names that List reads instead of scanning: written
// beside each acquisition, pruned by List of names long out of use.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/keys"
)

// The index of a prefix's names is a hash, "{<prefix>}:names", whose fields
// are lock keys: List reads it instead of scanning the whole keyspace, so
// that its cost grows with the locks, not with the keys beside them.
//
// It is written beside every way a lock is taken, so that a lock is listed
// from the moment it is taken:
//
//   - An acquisition sends HSET index key "" in the round trip of its
//     acquiring command, ahead of it (backend_single.go, sendWith): no
//     round trip of its own. A Client writes a name at most once per
//     indexEvery (nameIndex): every CLI run is a fresh Client and writes
//     it, while a long-lived Client's uncontended path stays one SET.
//   - A waiter joining the fair line writes it the same way, with its
//     RPUSH (wait_fair_join.go): a hand-over sets the key for the waiter
//     without a SET of the waiter's own.
//   - The holder's first renewal (extend_index.lua) and the release that
//     records a run (record.lua) write it too, on a Cluster beside their
//     script: a lock that Redis lost and KeepAlive took back is listed
//     again.
//
// List prunes it (unindex.lua): a name whose lock key, last-run record,
// last success and fair line are all gone is marked with the time, by
// Redis's clock, and removed by a List that finds it so pruneAfter later;
// any write clears the mark. A Client trusts a write of its own for at most
// indexEvery, well below pruneAfter, so no name that is held, or that a
// Client skips writing because it wrote it lately, is ever missing: a mark
// set after that write, and pruneAfter more, come after the Client has
// written the name again (TestIndexPruningNeverDropsANameInUse).
//
// On a Cluster the index is the same hash, on the master of its own slot,
// while each lock lives on the master of its key's slot, and a script may
// only touch keys of one slot (admin_index_cluster.go):
//
//   - An acquisition's HSET goes in the same pipeline as its SET, which a
//     Cluster client splits by master and sends to both at once: still one
//     round trip, and still at most once per indexEvery. With MinReplicas
//     the SET goes on one master's connection (WAIT counts its writes), so
//     the HSET follows through the Cluster client: a round trip more, once
//     per indexEvery.
//   - The first renewal and the release that records a run send the HSET
//     beside their script (indexWrite), in the same pipeline: the script
//     cannot write it.
//   - List reads the index from its master (HKEYS), then the locks it names
//     with one pipeline per master, a few commands per lock: its cost grows
//     with the locks, as on one server, never with the keys.
//   - Pruning cannot check the name's keys and change its entry in one
//     script: it reads the entries with the index master's time, checks
//     the keys on their masters, then marks or removes only the entries
//     that are still what it read (unindexApart says why that keeps the
//     promise above).
//
// A quorum keeps no index: its List asks every node, which a scan does, as
// List does everywhere with ListOptions.Scan.

const (
	// indexEvery is how long a Client trusts its own write of a name into
	// the index: it writes the name again at its first acquisition after.
	indexEvery = time.Minute
	// pruneAfter is how long List must have seen a name out of use before
	// it removes it from the index: far above indexEvery, so that a step
	// of Redis's clock cannot make a trusted entry go.
	pruneAfter = 10 * time.Minute
)

// indexApart reports whether scripts on rdb cannot write the index, so
// that the client writes it beside them: on a Cluster.
func indexApart(rdb redis.UniversalClient) bool {
	_, cluster := rdb.(*redis.ClusterClient)
	return cluster
}

// nameIndex is a Client's memory of the names it wrote into its prefix's
// index lately: those of the current period of indexEvery, so that it
// writes each at most once a period. Nil where no index is kept.
type nameIndex struct {
	every  time.Duration // indexEvery; tests shorten it
	unused time.Duration // pruneAfter, which this Client's List applies
	period atomic.Pointer[indexPeriod]
}

// indexPeriod is one period of a nameIndex: the lock keys written since
// start, each sent no earlier than start.
type indexPeriod struct {
	start time.Time
	keys  sync.Map // lock key → struct{}
}

// newNameIndex returns the memory of a Client of one deployment.
func newNameIndex() *nameIndex {
	return &nameIndex{every: indexEvery, unused: pruneAfter}
}

// due reports whether an acquisition of key sent at now must write key into
// the index: not when this Client wrote it in the current period.
func (x *nameIndex) due(key string, now time.Time) bool {
	if x == nil {
		return false
	}
	p := x.period.Load()
	if p == nil || now.Sub(p.start) >= x.every {
		return true
	}
	_, ok := p.keys.Load(key)
	return !ok
}

// queue queues on p (or sends, on a client) the write of l's key into its
// prefix's index, whose reply answered is then given.
func (x *nameIndex) queue(ctx context.Context, p redis.Cmdable, l *Lock) *redis.IntCmd {
	return p.HSet(ctx, keys.Index(l.c.prefix), l.key, "")
}

// answered remembers the write of key sent at sent, once Redis answered it:
// with success, or an error reply (an ACL without HSET, say), which the
// next period tries again. A write that may not have arrived is forgotten.
func (x *nameIndex) answered(key string, sent time.Time, cmd *redis.IntCmd) {
	if err := cmd.Err(); err != nil && !isRedisReply(err) {
		return
	}
	p := x.period.Load()
	if p == nil || sent.Sub(p.start) >= x.every {
		next := &indexPeriod{start: sent}
		if x.period.CompareAndSwap(p, next) {
			p = next
		} else {
			p = x.period.Load()
		}
	}
	// Only a write sent within the period may stand for it: one from before
	// its start would be trusted for longer than every.
	if !sent.Before(p.start) {
		p.keys.Store(key, struct{}{})
	}
}

// queueIndexWrite queues on p the write of l's name into its prefix's
// index, where l's Client keeps one and has not written the name lately,
// for a command sent at now; it returns what to call once p was sent, or
// nil when nothing was queued.
func queueIndexWrite(ctx context.Context, p redis.Pipeliner, l *Lock, now time.Time) func() {
	ik, ok := l.c.b.(indexKeeper)
	if !ok {
		return nil
	}
	x := ik.indexWrites()
	if !x.due(l.key, now) {
		return nil
	}
	cmd := x.queue(ctx, p, l)
	return func() { x.answered(l.key, now, cmd) }
}

func (s *single) indexWrites() *nameIndex    { return s.names }
func (s *semaphore) indexWrites() *nameIndex { return s.one.names }

func (s *semaphore) indexed(ctx context.Context, prefix string) ([]string, bool, error) {
	return s.one.indexed(ctx, prefix)
}

func (s *semaphore) unindex(ctx context.Context, prefix string, keys []string) error {
	return s.one.unindex(ctx, prefix, keys)
}

// indexed returns the keys in the index of prefix: on a Cluster from the
// master of the index's slot.
func (s *single) indexed(ctx context.Context, prefix string) ([]string, bool, error) {
	lockKeys, err := s.rdb.HKeys(ctx, keys.Index(prefix)).Result()
	if err != nil {
		return nil, false, fmt.Errorf("read the index %s: %w", keys.Index(prefix), err)
	}
	return lockKeys, true, nil
}

// withoutIndex is w without the index's write.
func (w *recordWrite) withoutIndex() *recordWrite {
	c := *w
	c.index = ""
	return &c
}

// renewIndexed is renew for l's first renewal: it also indexes l, on a
// Cluster with an HSET beside the plain script.
func (s *single) renewIndexed(ctx context.Context, l *Lock, ttl time.Duration) error {
	var v any
	var err error
	sent := time.Now()
	if indexApart(s.rdb) {
		v, err = indexBeside(keys.Index(l.c.prefix), l.key).eval(ctx, s.rdb, extendScript(), []string{l.key, keys.Replaced(l.key)}, l.token, ttl.Milliseconds(), withServerTime).Result()
	} else {
		v, err = s.rdb.Eval(ctx, extendIndexScript(), []string{l.key, keys.Replaced(l.key), keys.Index(l.c.prefix)}, l.token, ttl.Milliseconds(), withServerTime).Result()
	}
	v = l.clock.note(v, sent, time.Now()) // keepalive_clocks.go
	if err := renewed(l.key, v, err); err != nil && !errors.Is(err, ErrReplaced) {
		return err
	}
	l.indexed.Store(true)
	return renewed(l.key, v, nil)
}

// unindex prunes keys, seen out of use, from the index of prefix where
// they still are (unindexScript).
func (s *single) unindex(ctx context.Context, prefix string, lockKeys []string) error {
	if len(lockKeys) == 0 {
		return nil
	}
	unused := pruneAfter
	if s.names != nil {
		unused = s.names.unused
	}
	if indexApart(s.rdb) {
		return s.unindexApart(ctx, prefix, lockKeys, unused) // admin_index_cluster.go
	}
	ks := []string{keys.Index(prefix)}
	for _, k := range lockKeys {
		ks = append(ks, inUseKeys(k)...)
	}
	return s.rdb.Eval(ctx, unindexScript(), ks, unused.Milliseconds()).Err()
}

// inUseKeys are the keys of lock key k whose presence says its name is in
// use: the key, its record, its last success and its fair line, all in its
// slot.
func inUseKeys(k string) []string {
	line := k // a key with '}' and no hash tag has no line: its own key again
	if b, ok := keys.LineBase(k); ok {
		line = b + ":q"
	}
	return []string{k, keys.Record(k), keys.Success(k), line}
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
