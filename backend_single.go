package withlock

// The backend for one Redis deployment (plain, Sentinel, Cluster): acquire,
// renew, release, TTL, the fair line's check and the hand-over.

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/keys"
	"github.com/with-lock/with-lock/internal/pipeline"
)

// single keeps locks on one Redis deployment (a plain server, Sentinel, or
// Cluster, where each lock lives on the master of its key's slot): one key
// per lock. With LockOptions.MinReplicas an acquisition also waits for
// replicas to acknowledge it (backend_replicas.go).
type single struct {
	rdb   redis.UniversalClient
	names *nameIndex // the names this Client wrote into the index lately (admin_index.go); nil: no index

	releaseBy atomic.Int32 // how the release script is sent (runRelease, roundtrip_senders.go)
	trips     roundTrips   // round trips shared by concurrent callers (roundtrip.go)

	server serverCheck // what the first acquisition learns of the server (server_check.go)
}

// newSingle is the backend of a Client on rdb, which writes the names it
// takes into its prefix's index where rdb keeps one.
func newSingle(rdb redis.UniversalClient) *single {
	return &single{rdb: rdb, names: newNameIndex(), trips: newRoundTrips(rdb)}
}

func (s *single) acquire(ctx context.Context, l *Lock, opts *LockOptions) error {
	fenced := opts != nil && opts.Fence
	var ok bool
	var err error
	if opts != nil && opts.MinReplicas > 0 {
		ok, err = s.acquireReplicated(ctx, l, opts)
	} else {
		ok, err = s.set(ctx, s.rdb, l, fenced)
	}
	switch {
	case err != nil:
		return err
	case ok:
		return nil
	}
	return s.held(ctx, l, fenced)
}

// setter is what sends an acquiring command: a client, or one of its
// connections when WAIT must follow on the same one, or a pipeline of either.
type setter interface {
	Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd
	SetNX(ctx context.Context, key string, value any, expiration time.Duration) *redis.BoolCmd
}

// pipeSetter is a setter that can pipeline: a client or a connection.
type pipeSetter interface {
	setter
	Pipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
}

// set sends l's acquiring command through rdb: one SET NX PX, or with
// fencing the script that also draws the fencing number into l.fence, in
// one round trip with what goes with it (sendWith) when anything does. It
// reports false when someone else holds the key. Every acquisition sends
// its command here, so this is where a command whose outcome is unknown is
// cleaned up (abandon) before its error is returned.
func (s *single) set(ctx context.Context, rdb pipeSetter, l *Lock, fenced bool) (bool, error) {
	rdb = s.share(rdb, l) // roundtrip_senders.go
	now := l.acquired
	if now.IsZero() {
		now = time.Now()
	}
	probe := s.server.due(s.rdb) // the first acquisition also asks INFO memory (server_check.go)
	if probe || s.goesWithSet(l, now) {
		return s.setWith(ctx, rdb, l, fenced, now, probe)
	}
	var ok bool
	var err error
	if fenced {
		ok, err = s.fenced(l, sendFenced(ctx, rdb, l))
	} else {
		ok, err = rdb.SetNX(ctx, l.key, &l.token, l.ttl).Result() // by pointer: no copy of the token to box
	}
	return s.sent(ctx, l, fenced, ok, err)
}

// setWith is set with what goes with the SET, in one round trip
// (sendWith).
func (s *single) setWith(ctx context.Context, rdb pipeSetter, l *Lock, fenced bool, now time.Time, probe bool) (bool, error) {
	var fence *redis.Cmd
	var set *redis.BoolCmd
	markErr := s.sendWith(ctx, rdb, l, now, probe, func(p redis.Pipeliner) {
		if fenced {
			fence = sendFenced(ctx, p, l)
		} else {
			set = p.SetNX(ctx, l.key, &l.token, l.ttl)
		}
	})
	var ok bool
	var err error
	if fenced {
		ok, err = s.fenced(l, fence)
	} else {
		ok, err = set.Result()
	}
	if err == nil && !ok {
		// The lease's mark was of another holder's lease: one that hands
		// the lock over marks its own (lease.go).
		l.leaseSent = false
		if err := markRefused(l.key, markErr); err != nil {
			return false, err
		}
	}
	return s.sent(ctx, l, fenced, ok, err)
}

// What goes with an acquiring command, in its round trip, so that it costs
// no round trip of its own:
//
//   - ahead of it, the waiting mark, on a try of a waiter outside the fair
//     line (l.announce): once the try finds the key held, the holder's
//     release sees the mark and publishes;
//   - ahead of it, the write of the name into its prefix's index, which
//     List reads (admin_index.go), when this Client has not written it
//     lately;
//   - after it, with internal/lapse.Detect, the SET … GET of the lease
//     mark (lease.go);
//   - after it, on the Client's first acquisition, INFO memory, which says
//     whether the server may evict the lock (server_check.go).
//
// With none of them the command goes alone: a long-lived Client's
// uncontended acquisition is one SET.

// goesWithSet reports whether the mark, the lease mark or the index's write goes with l's
// acquiring command, sent at now; the probe is claimed apart
// (serverCheck.due), as asking claims it.
func (s *single) goesWithSet(l *Lock, now time.Time) bool {
	return l.announce > 0 && l.waitMark() != "" || l.lapse || s.names.due(l.key, now)
}

// sendWith sends, in one round trip on rdb, what goes with l's acquiring
// command (sent at now; with probe, INFO memory too), and what send queues:
// the acquiring command. It returns the waiting mark's error, nil without a
// mark.
func (s *single) sendWith(ctx context.Context, rdb pipeSetter, l *Lock, now time.Time, probe bool, send func(redis.Pipeliner)) error {
	var mark *redis.StatusCmd
	var index *redis.IntCmd
	var lease *redis.StatusCmd
	queue := func(p redis.Pipeliner) {
		if l.announce > 0 && l.waitMark() != "" {
			mark = p.Set(ctx, l.waitMark(), 1, l.announce)
		}
		if s.names.due(l.key, now) && indexReached(s.rdb, rdb) {
			index = s.names.queue(ctx, p, l)
		}
		send(p)
		lease = queueLease(ctx, p, l) // lease.go: after it, so that a release in send has cleared it
	}
	if probe {
		s.server.pipelined(ctx, rdb, queue) // INFO memory after the command
	} else {
		_ = pipeline.Send(ctx, rdb, queue) // each command has its error
	}
	if index == nil && s.names.due(l.key, now) { // admin_index_cluster.go: indexReached
		index = s.names.queue(ctx, s.rdb, l)
	}
	if index != nil {
		s.names.answered(l.key, now, index)
	}
	l.leaseRead(lease, false)
	if mark == nil {
		return nil
	}
	return mark.Err()
}

// markRefused is the error of a try that found the lock held while Redis
// refused its mark (an ACL without the mark's key), or nil: no release
// would wake that waiter, so its wait ends with this rather than fall back
// on the poll.
func markRefused(key string, markErr error) error {
	if !isRedisReply(markErr) {
		return nil
	}
	return fmt.Errorf("mark the wait for %s: %w", key, markErr)
}

// sendFenced sends acquireFencedScript for l through rdb.
func sendFenced(ctx context.Context, rdb setter, l *Lock) *redis.Cmd {
	return rdb.Eval(ctx, acquireFencedScript(), []string{l.key, keys.Fence(l.key)}, l.token, l.ttl.Milliseconds())
}

// fenced reads acquireFencedScript's reply into l.fence: true when the lock
// was taken, false with no error when it is held.
func (s *single) fenced(l *Lock, cmd *redis.Cmd) (bool, error) {
	var err error
	l.fence, err = cmd.Int64()
	if errors.Is(err, redis.Nil) { // the script's false: held
		return false, nil
	}
	return err == nil, err
}

// sent is what set returns for a SET (or fenced script) that answered ok,
// err: the error for a failure, after cleaning up a command that may have
// landed.
func (s *single) sent(ctx context.Context, l *Lock, fenced, ok bool, err error) (bool, error) {
	switch {
	case err == nil:
		return ok, nil
	case fenced && isWrongType(err):
		// Only the counter can fail the script: a lock key of another
		// type makes its SET NX answer "held", and held finds out.
		return false, wrongType(ctx, s.rdb, keys.Fence(l.key), "fence counter", err)
	case mayHaveLanded(err):
		s.abandon(ctx, l, false)
	}
	return false, fmt.Errorf("acquire %s: %w", l.key, err)
}

// held builds the *NotObtainedError for a failed SET NX. If the key holds
// our own token, an earlier attempt of this acquisition did land (a retried
// command or a wait loop) and the lock is ours after all: then it returns
// nil.
func (s *single) held(ctx context.Context, l *Lock, fenced bool) error {
	holder, ttl, err := inspect(ctx, s.rdb, l.key)
	if isWrongType(err) {
		return wrongType(ctx, s.rdb, l.key, "key", err)
	}
	if err != nil {
		if mayHaveLanded(err) { // a retried SET may have landed before
			s.abandon(ctx, l, false)
		}
		if isRedisReply(err) { // refused (an ACL without GET): say so
			return err
		}
		// Redis answered the SET: the key is held, by whom is what the
		// inspection could not say. A try that got its answer is refused,
		// not failed; at the top of the minute the inspection is the
		// round trip that a busy Redis leaves unanswered.
		return notObtained(l.key, "", 0)
	}
	if n, ok := slotsOf(holder); ok {
		return &slotsError{Key: l.key, Have: n, Want: 1}
	}
	if p, ok := pauseOf(holder); ok { // pause.go
		return pausedError(l.key, p)
	}
	if holder != l.token {
		return notObtained(l.key, holder, ttl)
	}
	if fenced {
		// While we hold the lock nobody else can draw a number, so the
		// counter is still the one our landed script drew.
		if l.fence, err = s.rdb.Get(ctx, keys.Fence(l.key)).Int64(); err != nil {
			s.abandon(ctx, l, !mayHaveLanded(err))
			return fmt.Errorf("read fence of %s: %w", l.key, err)
		}
	}
	return nil
}

func (s *single) renew(ctx context.Context, l *Lock, ttl time.Duration) error {
	if !l.indexed.Load() {
		return s.renewIndexed(ctx, l, ttl) // admin_index.go: the first renewal indexes the lock
	}
	sent := time.Now()
	v, err := s.rdb.Eval(ctx, extendScript(), []string{l.key, keys.Replaced(l.key)}, l.token, ttl.Milliseconds(), withServerTime).Result()
	v = l.clock.note(v, sent, time.Now()) // keepalive_clocks.go
	return renewed(l.key, v, err)         // replace.go
}

func (s *single) release(ctx context.Context, l *Lock, keep time.Duration) error {
	_, err := s.releaseTo(ctx, l, keep, "")
	return err
}

// releaseTo runs the release script for l; with cid, the id of l's Client
// in the fair line, the script may hand the lock to a waiter of that
// Client without publishing. It returns the token the lock went to, or "".
func (s *single) releaseTo(ctx context.Context, l *Lock, keep time.Duration, cid string) (string, error) {
	keys, args := l.releaseCall(keep, cid)
	v, err := s.runRelease(ctx, keys, args)
	return released(l.key, v, err)
}

// releaseCall returns the release script's KEYS and ARGV for l (see
// releaseScript): with keep and cid, the Client id sent by a Client with
// waiters of its own, or "".
func (l *Lock) releaseCall(keep time.Duration, cid string) ([]string, []any) {
	if keep == 0 && cid == "" && l.relArgs[0] != nil {
		return l.relKeys[:], l.relArgs[:]
	}
	return []string{l.key}, releaseArgs(l.token, l.waitMark(), keep, cid)
}

// releaseArgs is releaseScript's ARGV: the token and the waiting mark, then
// the time to keep the key and the Client id only when one of them is
// sent. Redis pushes every argument into the script's ARGV table, which
// costs it time on every release, so a plain release sends only two.
func releaseArgs(token, mark string, keep time.Duration, cid string) []any {
	switch {
	case cid != "":
		return []any{token, mark, keep.Milliseconds(), cid}
	case keep > 0:
		return []any{token, mark, keep.Milliseconds()}
	}
	return []any{token, mark}
}

// released reads a release script's reply v (or err) for the lock key
// key: what the lock was handed to (see releaseTo), or ErrLockNotHeld.
func released(key string, v any, err error) (string, error) {
	if err != nil {
		return "", opError("release", key, err)
	}
	to, ok := releaseReply(v)
	if !ok {
		return "", ErrLockNotHeld
	}
	return to, nil
}

func (s *single) ttl(ctx context.Context, l *Lock) (time.Duration, error) {
	return ttlOf(ctx, s.rdb, l.key, l.key, l.token)
}

// ttlOf runs pttlScript on key, which holds token if it is still ours:
// the key of the lock key lockKey, or one of its semaphore's slots.
func ttlOf(ctx context.Context, rdb redis.UniversalClient, lockKey, key, token string) (time.Duration, error) {
	ms, err := rdb.Eval(ctx, pttlScript(), []string{key}, token).Int64()
	if err != nil {
		return 0, opError("ttl of", lockKey, err)
	}
	if ms < 0 {
		return 0, ErrLockNotHeld
	}
	return time.Duration(ms) * time.Millisecond, nil
}

func (s *single) subscribe(ctx context.Context) *redis.PubSub { return s.rdb.Subscribe(ctx) }

// handed: the release script returns, and its message carries, the token.
func (s *single) handed(v string) (string, int) { return v, 0 }

// mayHold: the key holds the waiter's token.
func (s *single) mayHold(v, token string) bool { return v == token }

// lineArg is what the line's check is given for key's fair line: its
// base, or "" for a key that has none.
func lineArg(key string) string {
	b, _ := keys.LineBase(key)
	return b
}

// lineCheck runs lineCheckScript: an entry was handed the lock when the
// key holds its token, for aliveFor at most when it was handed as to a far
// waiter (provisional). A semaphore's marker ends the waits with a
// *slotsError, as it ends a try.
func (s *single) lineCheck(ctx context.Context, key, cid string, far bool, entries []string) (int64, []lineSeen, error) {
	farMs := int64(0)
	if far {
		farMs = farFor.Milliseconds()
	}
	args := []any{lineArg(key), cid, aliveFor.Milliseconds(), farMs}
	for _, e := range entries {
		args = append(args, e)
	}
	res, err := s.rdb.Eval(ctx, lineCheckScript(), []string{key}, args...).Slice()
	if err == nil && len(res) != 2+len(entries) {
		err = fmt.Errorf("unexpected reply %v", res)
	}
	if err != nil {
		return 0, nil, err
	}
	holder, _ := res[0].(string)
	if n, ok := slotsOf(holder); ok { // a semaphore took the name meanwhile
		return 0, nil, &slotsError{Key: key, Have: n, Want: 1}
	}
	if p, ok := pauseOf(holder); ok { // paused: the waits end, as a try does
		return 0, nil, pausedError(key, p)
	}
	pttl, _ := res[1].(int64)
	seen := make([]lineSeen, len(entries))
	for i, e := range entries {
		seen[i].pos, _ = res[2+i].(int64)
		seen[i].handed = holder != "" && holder == entryToken(e)
		seen[i].provisional = seen[i].handed && pttl <= aliveFor.Milliseconds()
	}
	return pttl, seen, nil
}

// lineStore: one deployment keeps the line beside the lock's key.
func (s *single) lineStore() redis.UniversalClient { return s.rdb }
