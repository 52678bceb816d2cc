package withlock

// The admin methods (adminBackend) of one deployment and of a semaphore's
// slots: views, keys, the break, the release-and-record of a run, and the
// history. A quorum's are in backend_quorum_admin.go.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/keys"
)

// The single backend's reading, listing, breaking and recording (see
// backend.go).

func (s *single) view(ctx context.Context, key string) (lockView, error) {
	n := readStatus(ctx, s.rdb, key)
	if n.err != nil {
		return lockView{}, fmt.Errorf("status of %s: %w", key, n.err)
	}
	return s.viewOf(ctx, key, n)
}

// viewOf makes the view of key from what was read of it, n, reading a
// semaphore's slots when key holds its marker.
func (s *single) viewOf(ctx context.Context, key string, n nodeStatus) (lockView, error) {
	v := lockView{st: &Status{Key: key, Fence: n.fence, Done: doneWindow(n.done, time.Now()), EvictionPolicy: n.evicts}, token: n.token}
	// new(p), not &p: p would be moved to the heap at every call, paused
	// or not, which List pays for each of a thousand locks.
	if p, ok := pauseOf(n.token); ok { // pause.go: the pause holds the key
		v.st.Paused, v.token, n.token = new(p), "", ""
	} else if p, ok := pauseOf(n.pause); ok { // it waits for the holder's release
		p.Pending = true
		v.st.Paused = new(p)
	}
	if n.token != "" {
		v.st.Held, v.st.Holder = true, Holder{ID: keys.Holder(n.token), TTL: n.ttl, Since: sinceOf(n.token)}
	}
	if n.record != "" {
		v.records = []string{n.record}
	}
	if n.success != "" {
		v.successes = []string{n.success}
	}
	if n.left != "" {
		v.left = []string{n.left}
	}
	if slots, ok := slotsOf(n.token); ok {
		return s.viewSlots(ctx, v, slots)
	}
	return v, nil
}

// views reads the views of keys in one round trip (on a Cluster, one per
// master), then a semaphore's slots for each key that holds its marker:
// each lock's keys (listKeysOf) with an MGET and its PTTL. On one
// deployment that is not a Cluster an MGET reads listChunk locks' keys at
// once; a Cluster's MGET may only read keys of one slot, so there each
// lock has its own. The reads are not one transaction, unlike Status's:
// a lock taken or released meanwhile may be shown either way, as List
// says. A key that another program uses (a fence counter that is not a
// number) gets a zero view; MGET reads a lock key of another type as
// missing.
func (s *single) views(ctx context.Context, keys []string) ([]lockView, error) {
	nodes, err := readLocks(ctx, s.rdb, keys)
	if err != nil && !errors.Is(err, redis.Nil) && !isWrongType(err) {
		return nil, fmt.Errorf("status of %d locks: %w", len(keys), err)
	}
	views := make([]lockView, len(keys))
	for i, key := range keys {
		switch n := nodes[i]; {
		case n.err == nil: // isWrongType allocates, even for nil
		case isWrongType(n.err) || errors.Is(n.err, errNotANumber):
			continue
		default:
			return nil, fmt.Errorf("status of %s: %w", key, n.err)
		}
		if views[i], err = s.viewOf(ctx, key, nodes[i]); err != nil {
			return nil, err
		}
	}
	return views, nil
}

// keys scans the deployment; on a Cluster every master, at once.
func (s *single) keys(ctx context.Context, match string) ([]string, error) {
	cc, ok := s.rdb.(*redis.ClusterClient)
	if !ok {
		return scanKeys(ctx, s.rdb, match)
	}
	var mu sync.Mutex
	var all []string
	err := cc.ForEachMaster(ctx, func(ctx context.Context, rdb *redis.Client) error {
		keys, err := scanKeys(ctx, rdb, match)
		mu.Lock()
		defer mu.Unlock()
		all = append(all, keys...)
		return err
	})
	return all, err
}

// scanKeys returns the keys of one server (or the keys of one Sentinel
// master) that match match, with SCAN.
func scanKeys(ctx context.Context, rdb redis.Cmdable, match string) ([]string, error) {
	var keys []string
	it := rdb.Scan(ctx, 0, match, 1000).Iterator()
	for it.Next(ctx) {
		keys = append(keys, it.Val())
	}
	return keys, it.Err()
}

// breakLock runs the break script where the key lives: on a Cluster the
// client sends it to the master of the key's slot.
func (s *single) breakLock(ctx context.Context, key, by string) (lockView, error) {
	token, slots, err := breakOn(ctx, s.rdb, key, by)
	if err != nil {
		return lockView{}, err
	}
	v := lockView{st: &Status{Key: key}, token: token}
	if n, ok := slotsOf(token); ok {
		return brokenSlots(v, n, slots), nil
	}
	if token != "" {
		v.st.Held, v.st.Holder = true, Holder{ID: keys.Holder(token), Since: sinceOf(token)}
	}
	return v, nil
}

// finish runs the release and the record's writes as one EVAL
// (finishScript): one command and one round trip, every key in one Cluster
// slot.
func (s *single) finish(ctx context.Context, l *Lock, keep time.Duration, w *recordWrite) (relErr, recErr error) {
	return finishOn(ctx, s.rdb, l, keep, w)
}

// finishOn runs finishScript for l on rdb and returns the release's error,
// as release would, and the record's.
func finishOn(ctx context.Context, rdb redis.UniversalClient, l *Lock, keep time.Duration, w *recordWrite) (relErr, recErr error) {
	w, beside := w.apart(rdb, l.key) // admin_index_cluster.go
	// The release's ARGV is sent whole, as the record's follows it:
	// ARGV[4] is the release's Client id in the fair line, none here.
	v, err := beside.eval(ctx, rdb, finishScript(), append([]string{l.key}, w.keys(l.key)...),
		append([]any{l.token, l.waitMark(), keep.Milliseconds(), ""}, w.args()...)...).Slice()
	return finishReply(l, v, err)
}

// finishReply reads the reply v (or err) of a finish script for l.
func finishReply(l *Lock, v []any, err error) (relErr, recErr error) {
	if err != nil {
		err = opError("release", l.key, err)
		return err, err
	}
	if len(v) != 2 {
		err := fmt.Errorf("release %s: unexpected reply %v", l.key, v)
		return err, err
	}
	if _, ours := releaseReply(v[0]); !ours {
		relErr = ErrLockNotHeld
	}
	if status, _ := v[1].(string); status != "OK" {
		recErr = fmt.Errorf("store the record of %s: %s", l.key, status)
	}
	return relErr, recErr
}

func (s *single) history(ctx context.Context, key string, n int) ([]string, error) {
	return historyOn(ctx, s.rdb, key, n)
}

// Reading and breaking a semaphore's slots for Status, List and Break.

// Reading and breaking a semaphore's name, for any Client of the
// deployment: the key's marker says how many slots to read.

// viewSlots completes v, the view of a key that holds the marker of n
// slots, with the slots' holders, read at one moment by statusScript (not
// a MULTI/EXEC, which Redis refuses when out of memory).
func (s *single) viewSlots(ctx context.Context, v lockView, n int) (lockView, error) {
	key := v.st.Key
	b, ok := keys.LineBase(key)
	if !ok {
		return v, nil
	}
	slotKeys := make([]string, n)
	for i := range n {
		slotKeys[i] = keys.Slot(b, i+1)
	}
	res, err := s.rdb.Eval(ctx, statusScript(), slotKeys, n, 0).Slice()
	if err == nil && len(res) != 2*n {
		err = fmt.Errorf("unexpected reply %v", res)
	}
	if err != nil {
		return lockView{}, fmt.Errorf("status of %s: %w", key, err)
	}
	st := v.st
	st.Slots, st.Held, st.Holder = n, false, Holder{}
	v.token = ""
	for i := range n {
		token, ok := res[2*i].(string)
		if !ok {
			continue
		}
		ms, _ := res[2*i+1].(int64)
		h := Holder{Slot: i + 1, ID: keys.Holder(token), TTL: holderTTL(ms), Since: sinceOf(token)}
		st.Holders = append(st.Holders, h)
		if !st.Held {
			st.Held, st.Holder = true, h
			v.token = token
		}
	}
	return v, nil
}

// brokenSlots completes v, the view of a broken key that held the marker of
// n slots, with the tokens removed from its slots.
func brokenSlots(v lockView, n int, tokens []string) lockView {
	st := v.st
	st.Slots = n
	v.token = ""
	for i, token := range tokens {
		if token == "" {
			continue
		}
		h := Holder{Slot: i + 1, ID: keys.Holder(token), Since: sinceOf(token)}
		st.Holders = append(st.Holders, h)
		if !st.Held {
			st.Held, st.Holder = true, h
			v.token = token
		}
	}
	return v
}

// A semaphore's name is read, listed, broken and recorded as a plain lock's
// is (single's view reads the marker and then the slots), so these pass on
// to the plain lock's backend; finish is its own (backend_semaphore.go).

func (s *semaphore) view(ctx context.Context, key string) (lockView, error) {
	return s.one.view(ctx, key)
}

func (s *semaphore) views(ctx context.Context, keys []string) ([]lockView, error) {
	return s.one.views(ctx, keys)
}

func (s *semaphore) keys(ctx context.Context, match string) ([]string, error) {
	return s.one.keys(ctx, match)
}

func (s *semaphore) breakLock(ctx context.Context, key, by string) (lockView, error) {
	return s.one.breakLock(ctx, key, by)
}

func (s *semaphore) history(ctx context.Context, key string, n int) ([]string, error) {
	return s.one.history(ctx, key, n)
}

// finish is single's finish with the slot's release script.
func (s *semaphore) finish(ctx context.Context, l *Lock, keep time.Duration, w *recordWrite) (relErr, recErr error) {
	b, _ := keys.LineBase(l.key)
	w, beside := w.apart(s.one.rdb, l.key) // admin_index_cluster.go
	v, err := beside.eval(ctx, s.one.rdb, slotsFinishScript(), append([]string{l.key}, w.keys(l.key)...),
		append([]any{l.token, keep.Milliseconds(), b, s.n, l.slot, ""}, w.args()...)...).Slice()
	return finishReply(l, v, err)
}
