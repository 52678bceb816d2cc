package withlock

// The backend for N holders per name (NewSemaphore): slot keys under one
// marker key.

// A semaphore admits up to N holders of one name at once. Its keys, all in
// the Cluster slot of the name's key K (B is keys.LineBase(K), K's hash tag):
//
//   - K holds the marker "#slots=N" (tokens never start with '#'), so that
//     every user of the name sees how many slots it has: a plain lock's SET
//     NX fails on it, and a semaphore of another size reads it. Its expiry
//     is never shorter than any slot's: every command that sets a slot's
//     expiry to now+t also runs PEXPIRE K t GT (or sets the marker anew). The
//     last release deletes it.
//   - "B:s:1" … "B:s:N" hold the holders' tokens, each a plain lock.
//
// The fencing counter, the last-run record and the fair line are the
// plain lock's (keys.Fence, keys.Record, wait_fair.go).

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/keys"
)

// NewSemaphore returns a Client whose locks each admit up to slots holders
// at once: "at most two backups across the fleet". Everything a Client does
// works per holder: TryAcquire takes a free slot or fails with a
// *NotObtainedError naming the holder whose slot frees first; Acquire
// waits in the fair line as for a plain lock, a release handing its slot
// to the first live waiter (fenced waiters are woken by releases and try),
// and with LockOptions.Replace asks the oldest holder to stop;
// Do, KeepAlive, Extend, Release, MinHold and
// ReleaseAndRecord act on the holder's own slot (Lock.Slot); Fence draws one
// number per acquisition, strictly increasing per name across all slots.
// Status, List and Break of a semaphore's name work from any Client, a plain
// one too: Status lists every holder.
//
// Every user of a name must use the same number of slots: a plain lock is
// one slot, and a name in use with another number is refused at once with
// an error matching ErrSlotsMismatch, never waited for. slots == 1 is New,
// the plain lock, command for command; slots < 1 is an error.
//
// A semaphore lives on one Redis deployment (a server, Sentinel, or
// Cluster, where all its keys share the name's slot); there is no quorum
// semaphore. Names containing '}' without a hash tag are refused, as are
// LockOptions.MinReplicas (errors.ErrUnsupported).
func NewSemaphore(rdb redis.UniversalClient, slots int, opts *Options) (*Client, error) {
	switch {
	case slots < 1:
		return nil, fmt.Errorf("withlock: a semaphore needs at least 1 slot, not %d", slots)
	case slots == 1:
		return New(rdb, opts), nil
	}
	return newClient(&semaphore{one: newSingle(rdb), n: slots}, opts), nil
}

// Slot returns the semaphore slot the lock holds, 1..N, or 0 for a plain
// lock.
func (l *Lock) Slot() int { return l.slot }

// semaphore keeps locks of n slots on one deployment. It is its own
// wherever a holder's slot is involved, and passes on to one, the plain
// lock's backend on the same deployment, where the keys are the same
// (status, listing, breaking, the subscription): each by a method of its
// own (backend_admin.go), so that a method it lacks is a
// capability it lacks, never the plain lock's acting on the name's key.
type semaphore struct {
	one *single
	n   int
}

// markerPrefix starts a semaphore's marker "#slots=N".
const markerPrefix = "#slots="

func marker(n int) string { return markerPrefix + strconv.Itoa(n) }

// slotsOf reads a marker: its number of slots, or false for a token.
func slotsOf(v string) (int, bool) {
	s, ok := strings.CutPrefix(v, markerPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n > 0
}

// base is key's line base, or an error for a key with '}' and no hash tag,
// whose slot keys could not share its Cluster slot.
func (s *semaphore) base(key string) (string, error) {
	b, ok := keys.LineBase(key)
	if !ok {
		return "", unsupported(fmt.Sprintf("semaphore %s: a name with '}' needs a hash tag {...} before it", key))
	}
	return b, nil
}

func (s *semaphore) acquire(ctx context.Context, l *Lock, opts *LockOptions) error {
	if opts != nil && opts.MinReplicas > 0 {
		return unsupported(fmt.Sprintf("acquire %s: a semaphore does not wait for replicas (MinReplicas)", l.key))
	}
	b, err := s.base(l.key)
	if err != nil {
		return err
	}
	lockKeys := []string{l.key}
	if opts != nil && opts.Fence {
		lockKeys = append(lockKeys, keys.Fence(l.key))
	}
	v, markErr, err := s.take(ctx, l, lockKeys, b)
	if err == nil && len(v) < 2 {
		err = fmt.Errorf("unexpected reply %v", v)
	}
	switch {
	case isWrongType(err) && strings.Contains(err.Error(), "fence counter"):
		return wrongType(ctx, s.one.rdb, keys.Fence(l.key), "fence counter", err)
	case isWrongType(err):
		return wrongType(ctx, s.one.rdb, l.key, "key", err)
	case err != nil:
		if mayHaveLanded(err) {
			s.abandonSlot(ctx, l)
		}
		return fmt.Errorf("acquire %s: %w", l.key, err)
	}
	slot, _ := v[0].(int64)
	switch {
	case slot < 0:
		have, _ := v[1].(string)
		n, ok := slotsOf(have)
		if !ok {
			n = 1
		}
		return &slotsError{Key: l.key, Have: n, Want: s.n}
	case slot == 0:
		if err := markRefused(l.key, markErr); err != nil {
			return err
		}
		token, _ := v[1].(string)
		var ttl int64
		if len(v) > 2 {
			ttl, _ = v[2].(int64)
		}
		e := notObtained(l.key, token, time.Duration(ttl)*time.Millisecond)
		e.Slots = s.n
		return e
	}
	l.slot = int(slot)
	if opts != nil && opts.Fence {
		l.fence, _ = v[1].(int64)
	}
	return nil
}

// take sends slotsAcquireScript for l, in one round trip with what goes
// with an acquiring command (sendWith in backend_single.go) when anything
// does: the script's reply, the waiting mark's error, and the script's
// error.
func (s *semaphore) take(ctx context.Context, l *Lock, keys []string, b string) ([]any, error, error) {
	now := l.acquired
	probe := s.one.server.due(s.one.rdb) // the first acquisition also asks INFO memory (server_check.go)
	if !probe && !s.one.goesWithSet(l, now) {
		v, err := s.one.rdb.Eval(ctx, slotsAcquireScript(), keys, b, s.n, l.token, l.ttl.Milliseconds()).Slice()
		return v, nil, err
	}
	var acquire *redis.Cmd
	markErr := s.one.sendWith(ctx, s.one.rdb, l, now, probe, func(p redis.Pipeliner) {
		acquire = p.Eval(ctx, slotsAcquireScript(), keys, b, s.n, l.token, l.ttl.Milliseconds())
	})
	v, err := acquire.Slice()
	return v, markErr, err
}

// abandonSlot deletes l's token from whichever slot holds it, as abandon
// does for a plain lock.
func (s *semaphore) abandonSlot(ctx context.Context, l *Lock) {
	b, _ := keys.LineBase(l.key)
	cleanupScript(ctx, s.one.rdb, false, l.key, slotsReleaseScript(), []string{l.key}, l.token, 0, b, s.n, 0, "")
}

func (s *semaphore) renew(ctx context.Context, l *Lock, ttl time.Duration) error {
	b, _ := keys.LineBase(l.key)
	lockKeys := []string{l.key, keys.Slot(b, l.slot), keys.Replaced(l.key)}
	first := !l.indexed.Load()
	var beside indexWrite
	if first { // admin_index.go: the first renewal indexes the name
		lockKeys, beside = indexWith(s.one.rdb, lockKeys, l)
	}
	v, err := beside.eval(ctx, s.one.rdb, slotsExtendScript(), lockKeys, l.token, ttl.Milliseconds(), marker(s.n)).Result()
	err = renewed(l.key, v, err) // replace.go
	if first && (err == nil || errors.Is(err, ErrReplaced)) {
		l.indexed.Store(true)
	}
	return err
}

func (s *semaphore) release(ctx context.Context, l *Lock, keep time.Duration) error {
	_, err := s.releaseTo(ctx, l, keep, "")
	return err
}

func (s *semaphore) releaseTo(ctx context.Context, l *Lock, keep time.Duration, cid string) (string, error) {
	b, _ := keys.LineBase(l.key)
	v, err := s.one.rdb.Eval(ctx, slotsReleaseScript(), []string{l.key}, l.token, keep.Milliseconds(), b, s.n, l.slot, cid).Result()
	return released(l.key, v, err)
}

func (s *semaphore) ttl(ctx context.Context, l *Lock) (time.Duration, error) {
	b, _ := keys.LineBase(l.key)
	return ttlOf(ctx, s.one.rdb, l.key, keys.Slot(b, l.slot), l.token)
}

func (s *semaphore) slots() int { return s.n }

// subscribe is the plain lock's: a slot's release publishes on the name's key.
func (s *semaphore) subscribe(ctx context.Context) *redis.PubSub { return s.one.subscribe(ctx) }

// lineStore is the plain lock's: a semaphore's waiters queue in the name's line.
func (s *semaphore) lineStore() redis.UniversalClient { return s.one.lineStore() }

// A semaphore's part in the fair line: its check script and what a
// hand-over carries (slot and token).

// A semaphore's part in the fair line (wait_fair.go): its waiters queue as a
// plain lock's do, and a release or the check hands over a slot, telling
// the waiter which one.

// handed reads "<slot>:<token>", as the slots' release and check scripts
// hand a slot over.
func (s *semaphore) handed(v string) (string, int) {
	i, tok, _ := strings.Cut(v, ":")
	n, err := strconv.Atoi(i)
	if err != nil || n < 1 || n > s.n {
		return "", 0 // not a hand-over of ours: deliver nothing
	}
	return tok, n
}

// mayHold: the name's key holds the marker, not the slots' tokens, so any
// waiter whose entry left the line may have been handed a slot; releasing
// by token (slot 0) finds out.
func (s *semaphore) mayHold(string, string) bool { return true }

// lineCheck runs slotsLineCheckScript: it hands every free slot to the head
// of the line, and an entry that holds a slot reads "<slot>:<token>". The
// PTTL is the holder's whose slot frees first. A name in use with another
// number of slots ends the waits with an error matching ErrSlotsMismatch.
func (s *semaphore) lineCheck(ctx context.Context, key, cid string, _ bool, entries []string) (int64, []lineSeen, error) {
	b, err := s.base(key)
	if err != nil {
		return 0, nil, err
	}
	args := []any{b, s.n, cid, aliveFor.Milliseconds()}
	for _, e := range entries {
		args = append(args, e)
	}
	res, err := s.one.rdb.Eval(ctx, slotsLineCheckScript(), []string{key}, args...).Slice()
	if err != nil {
		return 0, nil, err
	}
	if len(res) == 2 && res[0] == int64(-1) {
		have, _ := res[1].(string)
		n, ok := slotsOf(have)
		if !ok {
			n = 1
		}
		return 0, nil, &slotsError{Key: key, Have: n, Want: s.n}
	}
	if len(res) != 2+len(entries) {
		return 0, nil, fmt.Errorf("unexpected reply %v", res)
	}
	pttl, _ := res[1].(int64)
	seen := make([]lineSeen, len(entries))
	for i, r := range res[2:] {
		switch r := r.(type) {
		case int64:
			seen[i].pos = r
		case string:
			_, seen[i].slot = s.handed(r)
			seen[i].handed, seen[i].pos = seen[i].slot > 0, -1
		}
	}
	return pttl, seen, nil
}
