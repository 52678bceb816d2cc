package withlock

// Client.List, how the admin paths tell a lock's key
// from its side keys and records, and how List reads the locks it found.

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/keys"
)

// ListOptions configure List. A nil *ListOptions lists the locks held now.
type ListOptions struct {
	// All also lists the names that are free now but have a last-run
	// record (Status.Held false, Status.LastRun set). Where List scans it
	// costs a second SCAN.
	All bool
	// Scan finds the locks with SCAN even where the deployment keeps an
	// index of names ("{<prefix>}:names"): it also finds keys under the prefix
	// that no Client of this version took, set by another program or an
	// older version, at the cost of reading every key in Redis.
	Scan bool
}

// List returns the Status of every lock held under the Client's prefix,
// sorted by key. On one deployment (a plain server, Sentinel, a Cluster)
// it reads the prefix's index of names, the hash "{<prefix>}:names" (on a
// Cluster, on the master of its slot), so that its cost grows with the
// locks, not with the other keys in Redis: every acquisition of a Client
// writes its name there in the round trip of its SET, so a lock is listed
// from the moment it is taken, whatever its options, a semaphore's slot and
// a lock handed over in the fair line too; a key under the prefix that
// another program set is not, unless ListOptions.Scan. On a quorum, or
// with Scan, it finds the keys under the prefix with SCAN (never KEYS) on
// every master of a Cluster and every node of a quorum, another program's
// keys too (held by "unknown" when their value is not a token).
// The keys are then read in one pipeline per master (on a quorum, per
// node, answering from a majority as Status does): a lock taken or
// released meanwhile may be missed or shown free. Fencing counters, last-run records and break
// markers are not locks and are skipped. Index entries of names out of use
// (no lock, record or waiter) for ten minutes are removed.
func (c *Client) List(ctx context.Context, opts *ListOptions) ([]*Status, error) {
	a, err := c.admin("list " + c.prefix + "*")
	if err != nil {
		return nil, err
	}
	all := opts != nil && opts.All
	keys, fromIndex, err := c.listKeys(ctx, a, all, opts != nil && opts.Scan)
	if err != nil {
		return nil, err
	}
	views, err := a.views(ctx, keys)
	if err != nil {
		return nil, err
	}
	var list []*Status
	var stale []string
	for i, v := range views {
		if v.st == nil {
			// Another program's key under the prefix, or a name whose
			// acquisition found one and wrote the index all the same:
			// pruned once none of its keys is left.
			stale = append(stale, keys[i])
			continue
		}
		st, err := v.status()
		if err != nil {
			return nil, err
		}
		if st.Held || st.Paused != nil || (all && st.LastRun != nil) {
			list = append(list, st)
		}
		if !st.Held && st.Paused == nil && len(v.records) == 0 && len(v.successes) == 0 {
			stale = append(stale, keys[i])
		}
	}
	if ik, ok := c.b.(indexKeeper); ok && fromIndex {
		// Best effort: a failed pruning is tried again at the next List.
		_ = ik.unindex(ctx, c.prefix, stale)
	}
	return list, nil
}

// isSideKey reports whether key is the fencing counter, last-run record,
// history, last success, once-per marker, break or replace marker, leftovers note
// or lease mark of another key (see keys.Side), or one of the keys beside it that have its
// line base (keys.LineBase): its fair line, its waiting mark, a waiting Client's
// liveness or far key, a semaphore's slot. None of them is a lock.
func isSideKey(key string) bool {
	for _, what := range []string{"fence", "last", "runs", "ok", "done", "broken", "replaced", "left", "pause", "lease"} {
		if base, ok := baseOf(key, what); ok && keys.Side(base, what) == key {
			return true
		}
	}
	return isLineKey(key)
}

// isLineKey reports whether key is "B:q", "B:w", "B:c:<hex id>",
// "B:f:<hex id>" or "B:s:<n>" for a line base B (a key with a hash tag).
func isLineKey(key string) bool {
	b, ok := strings.CutSuffix(key, ":q")
	if !ok {
		b, ok = strings.CutSuffix(key, ":w")
	}
	if !ok {
		i := strings.LastIndexByte(key, ':')
		j := strings.LastIndexByte(key[:max(i, 0)], ':')
		if j < 0 {
			return false
		}
		id := key[i+1:]
		switch key[j:i] {
		case ":c", ":f":
			ok = id != "" && strings.Trim(id, "0123456789abcdef") == ""
		case ":s":
			ok = id != "" && strings.Trim(id, "0123456789") == ""
		}
		b = key[:j]
	}
	lb, tagged := keys.LineBase(b)
	return ok && tagged && lb == b && strings.Contains(b, "{")
}

// lockKeyOfRecord returns the lock key whose last-run record is at key.
func lockKeyOfRecord(key string) (string, bool) {
	base, ok := baseOf(key, "last")
	return base, ok && keys.Side(base, "last") == key
}

// baseOf guesses the lock key whose side key called what key is:
// "{base}:what", "base:what" or "base:what:<n>". The caller checks the guess
// with keys.Side.
func baseOf(key, what string) (string, bool) {
	if base, ok := strings.CutSuffix(key, ":"+what); ok {
		if strings.HasPrefix(base, "{") && strings.HasSuffix(base, "}") && keys.Side(base[1:len(base)-1], what) == key {
			return base[1 : len(base)-1], true
		}
		return base, true
	}
	if i := strings.LastIndex(key, ":"+what+":"); i > 0 {
		return key[:i], true
	}
	return "", false
}

// recordPattern is the SCAN pattern that matches the last-run records of
// the keys that start with prefix.
func recordPattern(prefix string) string {
	const name = "\x00" // stands for any name: no glob character, no brace
	if p := globEscape(keys.Record(prefix + name)); strings.HasSuffix(p, ":last") {
		return strings.Replace(p, name, "*", 1)
	}
	// A prefix with a '}' and no hash tag: the record's numeric suffix
	// depends on the name.
	return globEscape(prefix) + "*:last:*"
}

// globEscape escapes the characters SCAN's MATCH pattern gives a meaning.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// How List reads the locks it found: all of them in one round trip.

// listChunk is how many locks' keys one MGET of List reads, where one
// MGET may read many locks: each command holds Redis for as long as it
// runs, so a long list is read by several, sent in one pipeline, and an
// acquisition meanwhile waits for no more than about a millisecond of them.
const listChunk = 250

// listKeysOf appends to keys those List reads of the lock key key, all in
// its Cluster slot: the key itself, its fence counter, last-run record,
// last success, once-per marker and leftovers note (keys.Side), and its pause
// (keys.Pause) where it can have one: 6 or 7 keys.
func listKeysOf(lockKeys []string, key string) []string {
	open, close := "", "" // the line base is key itself (keys.HashTagged) or "{key}"
	switch {
	case keys.HashTagged(key):
	case keys.Taggable(key):
		open, close = "{", "}"
	default: // numbered side keys (sameSlotKey), and no pause
		return append(lockKeys, key, keys.Fence(key), keys.Record(key), keys.Success(key), keys.Window(key), keys.Left(key))
	}
	// Each is "<base>:<what>": one string holds them all, so that a
	// thousand locks cost a thousand allocations here, not six thousand.
	var b strings.Builder
	b.Grow(len(listSides) * (len(open) + len(key) + len(close) + len(":fence")))
	var ends [len(listSides)]int
	for i, what := range listSides {
		b.WriteString(open)
		b.WriteString(key)
		b.WriteString(close)
		b.WriteByte(':')
		b.WriteString(what)
		ends[i] = b.Len()
	}
	all, start := b.String(), 0
	lockKeys = append(lockKeys, key)
	for _, end := range ends {
		lockKeys = append(lockKeys, all[start:end])
		start = end
	}
	return lockKeys
}

// listSides are the side keys listKeysOf reads, in the order of
// statusOf's arguments, then the pause.
var listSides = [...]string{"fence", "last", "ok", "done", "left", "pause"}

// readLocks reads the locks keys on rdb in one pipeline (on a Cluster, one
// per master), as views says, and returns each one's status, with the
// error of its own reads, and the pipeline's first error. A quorum's views
// read each node so.
func readLocks(ctx context.Context, rdb redis.UniversalClient, keys []string) ([]nodeStatus, error) {
	if _, cluster := rdb.(*redis.ClusterClient); cluster {
		return readEach(ctx, rdb, keys)
	}
	return readChunks(ctx, rdb, keys)
}

// readChunks reads keys with one MGET per listChunk locks and a PTTL per
// lock, all in one pipeline.
func readChunks(ctx context.Context, rdb redis.UniversalClient, keys []string) ([]nodeStatus, error) {
	type chunk struct {
		values *redis.SliceCmd
		ends   []int // where each lock's values end in values
		pttls  []*redis.DurationCmd
	}
	var chunks []chunk
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for rest := keys; len(rest) > 0; {
			locks := rest[:min(listChunk, len(rest))]
			rest = rest[len(locks):]
			c := chunk{ends: make([]int, len(locks)), pttls: make([]*redis.DurationCmd, len(locks))}
			all := make([]string, 0, 7*len(locks))
			for i, key := range locks {
				all = listKeysOf(all, key)
				c.ends[i] = len(all)
				c.pttls[i] = p.PTTL(ctx, key)
			}
			c.values = p.MGet(ctx, all...)
			chunks = append(chunks, c)
		}
		return nil
	})
	nodes := make([]nodeStatus, 0, len(keys))
	for _, c := range chunks {
		v, verr := c.values.Result()
		if verr == nil && len(v) != c.ends[len(c.ends)-1] {
			verr = fmt.Errorf("unexpected reply of %d values", len(v))
		}
		start := 0
		for i, end := range c.ends {
			if verr != nil {
				nodes = append(nodes, nodeStatus{err: verr})
				continue
			}
			nodes = append(nodes, listed(v[start:end], nil, c.pttls[i]))
			start = end
		}
	}
	return nodes, err
}

// readEach reads keys with an MGET and a PTTL each, all in one pipeline
// (on a Cluster, one per master).
func readEach(ctx context.Context, rdb redis.UniversalClient, keys []string) ([]nodeStatus, error) {
	values := make([]*redis.SliceCmd, len(keys))
	pttls := make([]*redis.DurationCmd, len(keys))
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, key := range keys {
			values[i] = p.MGet(ctx, listKeysOf(make([]string, 0, 7), key)...)
			pttls[i] = p.PTTL(ctx, key)
		}
		return nil
	})
	nodes := make([]nodeStatus, len(keys))
	for i := range keys {
		v, verr := values[i].Result()
		nodes[i] = listed(v, verr, pttls[i])
	}
	return nodes, err
}

// listed is the status of a lock from the MGET of its listKeysOf, v or
// err, and its PTTL, read as readStatus reads its script's reply.
func listed(v []any, err error, pttl *redis.DurationCmd) nodeStatus {
	if err == nil && len(v) != 6 && len(v) != 7 {
		err = fmt.Errorf("unexpected reply %v", v)
	}
	if err == nil {
		err = pttl.Err()
	}
	if err != nil {
		return nodeStatus{err: err}
	}
	d := pttl.Val()
	ms := d.Milliseconds()
	if d < 0 {
		ms = int64(d) // go-redis keeps PTTL's -1 and -2 as -1ns and -2ns
	}
	n := statusOf(holderTTL(ms), scriptRead(v[0]), scriptRead(v[1]), scriptRead(v[2]),
		scriptRead(v[3]), scriptRead(v[4]), scriptRead(v[5]))
	if len(v) == 7 && n.err == nil {
		n.pause, _ = v[6].(string)
	}
	return n
}
