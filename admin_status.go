package withlock

// Client.Status: reading who holds a lock, for how long, and its records,
// from one node or a majority of a quorum's; the holder an acquisition that
// found the key held reads (inspect); and what a key holds when it is not
// a lock (wrongType).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/keys"
	"github.com/with-lock/with-lock/internal/leftovers"
	"github.com/with-lock/with-lock/internal/serverinfo"
)

// Holder is one owner of a lock, or of one of a semaphore's slots, as
// Status and NotObtainedError report it.
type Holder struct {
	// ID is the "<host>:<pid>" of the owner ("unknown" for a token in
	// another format). The owner's full token is never returned: it would
	// let the reader release the lock.
	ID string
	// Slot is the semaphore's slot it holds, 1..N; 0 for a plain lock.
	Slot int
	// TTL is the owner's remaining time: -1 when the key exists without an
	// expiry (not set by this package), 0 when unknown.
	TTL time.Duration
	// Since is when the holder got the lock, as near as Redis tells: when
	// it began to acquire it, by its own clock, or, for a holder of a plain
	// lock that waited for it, when the run it waited for ended (that
	// run's record's Finished, by that run's clock), whichever is later.
	// Zero when unknown (a token from an older version or another
	// program).
	Since time.Time
}

// Status is what Redis says about a lock at one moment.
type Status struct {
	Key  string // the lock's Redis key
	Held bool   // whether the key exists
	// Holder is the owner while Held (for a semaphore the first of
	// Holders); the zero Holder when the lock is free.
	Holder Holder
	// Fence is the last fencing number drawn for this name — the holder's
	// own if it acquired with LockOptions.Fence — or 0 if none ever was.
	Fence int64
	// LastRun is the last run of this name that Lock.ReleaseAndRecord
	// recorded and that is still kept, or nil.
	LastRun *Run
	// LastSuccess is the last run of this name with Outcome OutcomeOK that
	// is still kept, or nil: LastRun when that succeeded, else an earlier
	// run that a failure did not overwrite.
	LastSuccess *Run
	// Done is the once-per window (Lock.OncePer) in which this name's job
	// has succeeded, while that window lasts; nil otherwise. A quorum
	// keeps none.
	Done *Span
	// KeptByMinHold is true when the lock is held but its holder's run has
	// ended (LastRun is that run): nothing runs, the key lives on only for
	// its LockOptions.MinHold, and frees itself when its TTL ends.
	KeptByMinHold bool
	// Slots is the number of slots when the name is a semaphore
	// (NewSemaphore), read from its marker; 0 for a plain lock.
	Slots int
	// Holders lists every holder of a semaphore's name by slot; Holder
	// above is the first of them. nil for a plain lock.
	Holders []Holder
	// Paused is the name's pause (Client.Pause), nil when none. While a
	// holder that took the lock before the pause runs, Held is true and
	// Paused.Pending; once the pause holds, Held is false.
	Paused *Pause
	// EvictionPolicy is the maxmemory-policy of the server that keeps
	// the lock when that server may evict it: its maxmemory is set and
	// its policy is not noeviction, so under memory pressure it may delete
	// the key before its TTL and let another owner take a lock still in
	// use. "" when it may not, or when the server does not say (an ACL
	// user without +info, INFO renamed away). On a quorum, the first
	// answering node's that may. List does not ask: "" there.
	EvictionPolicy string
	// Unanswered lists the nodes of a quorum (numbered from 1, in
	// NewQuorum's order) that this Status was decided without: they had
	// not answered when a majority's answers settled it, or they failed.
	// nil when every node answered, and on one deployment.
	Unanswered []int

	// leftovers is the holder's leftovers note (internal/leftovers), or
	// nil.
	leftovers *leftovers.Note
}

// Status reads the lock called name, its remaining time, its fencing
// counter and its last recorded run as of one moment: on one deployment in
// one script that only reads (the keys are in one Redis Cluster slot), so
// that it answers when Redis is out of memory, and with it the server's
// eviction policy. On a quorum
// (NewQuorum) it asks every node and reports the lock held when one token
// is on a majority of them, with the time until fewer than a majority of
// its keys remain, as Lock.TTL does, and the newest record of the nodes.
// It answers once a majority has and their answers settle the holder,
// without waiting for the others, which it names in Status.Unanswered.
func (c *Client) Status(ctx context.Context, name string) (*Status, error) {
	if name == "" {
		return nil, ErrEmptyName
	}
	a, err := c.admin("status of " + c.Key(name))
	if err != nil {
		return nil, err
	}
	v, err := a.view(ctx, c.Key(name))
	if err != nil {
		return nil, err
	}
	return v.status()
}

// lockView is a backend's view of a lock: its Status without LastRun and
// LastSuccess, the holder's token ("" when free) and the last-run and
// last-success records found (JSON, one per node that has one). The token
// never leaves the package.
type lockView struct {
	st        *Status
	token     string
	records   []string
	successes []string
	left      []string // leftovers notes (leftovers.go), one per node that has one
}

// status completes v.st with the newest of v.records, and tells whether
// it is the holder's own, finished run.
func (v lockView) status() (*Status, error) {
	st := v.st
	if st.Held {
		st.leftovers = leftoversOf(v.left, v.token)
	}
	for _, raw := range v.records {
		rec, err := decodeRecord(raw)
		if err != nil {
			return nil, fmt.Errorf("last-run record of %s: %w", st.Key, err)
		}
		if st.LastRun == nil || rec.Finished.After(st.LastRun.Finished) {
			st.LastRun = &rec.Run
			st.KeptByMinHold = st.Held && rec.Tag == tokenTag(v.token)
		}
	}
	st.Holder.Since = gotSince(st)
	for _, raw := range v.successes {
		rec, err := decodeRecord(raw)
		if err != nil {
			return nil, fmt.Errorf("last-success record of %s: %w", st.Key, err)
		}
		if st.LastSuccess == nil || rec.Finished.After(st.LastSuccess.Finished) {
			st.LastSuccess = &rec.Run
		}
	}
	return st, nil
}

// gotSince is since when st's holder holds the lock. Its token says when
// it began to acquire it: for a waiter, the start of its wait. It got the
// lock no earlier than the run before it ended, which the last-run record
// says when that run is another holder's and ended holding the lock (a
// lost run may have ended after the present holder took the lock over).
// A semaphore's last run may be of another slot, held beside it.
func gotSince(st *Status) time.Time {
	since, last := st.Holder.Since, st.LastRun
	if !st.Held || since.IsZero() || last == nil || st.KeptByMinHold || last.Lost || st.Slots > 0 {
		return since
	}
	if last.Finished.After(since) {
		return last.Finished
	}
	return since
}

// nodeStatus is one node's view of a lock. token is "" when the key is
// missing, record "" when there is no last-run record, success "" when
// there is no last-success record; the token never leaves the package.
type nodeStatus struct {
	token  string
	ttl    time.Duration // as Holder.TTL
	fence  int64
	record string
	err    error

	success string
	done    string // the once-per marker, "" when none
	left    string // the leftovers note, "" when none
	evicts  string // as Status.EvictionPolicy
	pause   string // the pause beside the key (keys.Pause), "" when none
}

// readStatus reads key's status on one node with statusScript, and what
// the node says of its eviction policy (Status.EvictionPolicy).
func readStatus(ctx context.Context, rdb redis.UniversalClient, key string) nodeStatus {
	lockKeys := []string{key, keys.Fence(key), keys.Record(key), keys.Success(key), keys.Window(key), keys.Left(key)}
	if pk, ok := keys.Pause(key); ok {
		lockKeys = append(lockKeys, pk) // pause.go
	}
	v, err := rdb.Eval(ctx, statusScript(), lockKeys, 1, 1).Slice()
	if err == nil && len(v) != len(lockKeys)+2 {
		err = fmt.Errorf("unexpected reply %v", v)
	}
	if err != nil {
		return nodeStatus{err: err}
	}
	ms, _ := v[1].(int64)
	n := statusOf(holderTTL(ms), scriptRead(v[0]),
		scriptRead(v[2]), scriptRead(v[3]), scriptRead(v[4]), scriptRead(v[5]), scriptRead(v[6]))
	if len(lockKeys) > 6 && n.err == nil {
		n.pause, _ = v[7].(string)
	}
	if info, ok := v[len(v)-1].(string); ok && n.err == nil {
		n.evicts = serverinfo.EvictingPolicy(info) // client.go
	}
	return n
}

// errNotANumber is the error of a fence counter that another program
// overwrote with text: List skips such a name as it skips a WRONGTYPE key.
var errNotANumber = errors.New("is not a number")

// read is one GET's reply: its value, or its error (redis.Nil when the key
// is missing).
type read struct {
	val string
	err error
}

// scriptRead is read for one GET's reply in a script's array reply.
func scriptRead(v any) read {
	switch v := v.(type) {
	case string:
		return read{val: v}
	case error:
		return read{err: v}
	case nil:
		return read{err: redis.Nil}
	}
	return read{err: fmt.Errorf("unexpected reply %v", v)}
}

// holderTTL is a PTTL reply of ms milliseconds as Holder.TTL says it: -1
// for a key without expiry, 0 for a missing key.
func holderTTL(ms int64) time.Duration {
	switch {
	case ms > 0:
		return time.Duration(ms) * time.Millisecond
	case ms == -1:
		return -1
	}
	return 0
}

// pttlHolderTTL is a PTTL reply, as go-redis reads it (-1 and -2 as
// they are, else in milliseconds), as Holder.TTL says it.
func pttlHolderTTL(d time.Duration) time.Duration {
	if d == -1 {
		return -1
	}
	return max(d, 0)
}

// statusOf is a node's status of what was read: the lock key's value and
// remaining time, then its fence counter, last-run record, last success,
// once-per marker and leftovers note. The first error other than a missing
// key is the node's.
func statusOf(ttl time.Duration, key, fence, record, success, done, left read) nodeStatus {
	for _, r := range []read{key, fence, record, success, done, left} {
		if r.err != nil && !errors.Is(r.err, redis.Nil) {
			return nodeStatus{err: r.err}
		}
	}
	var v nodeStatus
	if key.err == nil {
		v.token, v.ttl = key.val, ttl
	}
	if fence.err == nil {
		var err error
		if v.fence, err = strconv.ParseInt(fence.val, 10, 64); err != nil {
			return nodeStatus{err: fmt.Errorf("fence counter %q %w", fence.val, errNotANumber)}
		}
	}
	v.record, v.success, v.done, v.left = record.val, success.val, done.val, left.val
	return v
}

// majority combines the views of a quorum's nodes: the lock is held when
// one token is on a majority (need) of them, and a majority must answer.
// Its TTL is the quorum-th longest of that token's: after it, fewer than a
// majority remain.
func majority(op, key string, views []nodeStatus, need int) (lockView, error) {
	var errs []error
	ttls := map[string][]time.Duration{} // per token, on the nodes holding it
	v := lockView{st: &Status{Key: key}}
	for i, n := range views {
		switch {
		case n.err != nil:
			errs = append(errs, fmt.Errorf("node %d: %w", i+1, n.err))
			v.st.Unanswered = append(v.st.Unanswered, i+1)
			continue
		case n.token != "":
			ttls[n.token] = append(ttls[n.token], n.ttl)
		}
		if n.record != "" {
			v.records = append(v.records, n.record)
		}
		if n.success != "" {
			v.successes = append(v.successes, n.success)
		}
		if n.left != "" {
			v.left = append(v.left, n.left)
		}
		if v.st.EvictionPolicy == "" {
			v.st.EvictionPolicy = n.evicts
		}
	}
	if len(views)-len(errs) < need {
		return lockView{}, fmt.Errorf("%s %s: %w: %d of %d nodes answered, %d needed: %w",
			op, key, ErrNoQuorum, len(views)-len(errs), len(views), need, nodeErrors(errs))
	}
	for token, t := range ttls {
		if len(t) >= need {
			slices.Sort(t)
			v.token = token
			v.st.Held, v.st.Holder = true, Holder{ID: keys.Holder(token), TTL: t[len(t)-need], Since: sinceOf(token)}
		}
	}
	return v, nil
}

// inspect reads who holds key and for how long, in one round trip: the
// holder's token ("" when the key is gone) and its remaining time, as
// Holder.TTL says it (-1 without expiry, 0 when gone).
func inspect(ctx context.Context, rdb redis.UniversalClient, key string) (string, time.Duration, error) {
	var get *redis.StringCmd
	var pttl *redis.DurationCmd
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		get = p.Get(ctx, key)
		pttl = p.PTTL(ctx, key)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return "", 0, fmt.Errorf("inspect %s: %w", key, err)
	}
	return get.Val(), pttlHolderTTL(pttl.Val()), nil
}

// Describing a foreign key that holds what this package did not write
// (ErrWrongType).

// wrongType describes key after Redis answered err, a WRONGTYPE reply, for
// it: its type, or its value when it is a string, in one round trip taken
// only on this error path.
func wrongType(ctx context.Context, rdb redis.UniversalClient, key, what string, err error) error {
	var typ *redis.StatusCmd
	var get *redis.StringCmd
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		typ = p.Type(ctx, key)
		get = p.Get(ctx, key)
		return nil
	})
	e := &wrongTypeError{what: what, key: key, holds: "something else", err: err}
	switch t := typ.Val(); t {
	case "string":
		e.holds = quoteShort(get.Val(), 32)
	case "", "none": // gone meanwhile, or TYPE failed
	default:
		e.holds = "a " + t
	}
	return e
}

// quoteShort quotes s, cut to n bytes, for an error message.
func quoteShort(s string, n int) string {
	if len(s) <= n {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q...", s[:n])
}
