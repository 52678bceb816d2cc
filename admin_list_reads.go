package withlock

// How List reads the locks it found: all of them in one round trip.

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/keys"
)

// listChunk is how many locks' keys one MGET of List reads, where one
// MGET may read many locks: each command holds Redis for as long as it
// runs, so a long list is read by several, sent in one pipeline, and an
// acquisition meanwhile waits for no more than about a millisecond of them.
const listChunk = 250

// listKeysOf appends to keys those List reads of the lock key key, all in
// its Cluster slot: the key itself, its fence counter, last-run record,
// last success, once-per marker and leftovers note (keys.Side), and its pause
// (pauseKey) where it can have one: 6 or 7 keys.
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
