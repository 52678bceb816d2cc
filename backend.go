package withlock

// The storage seam: the interface every kind of lock storage implements.

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// backend is what differs between kinds of lock storage: one Redis
// deployment (backend_single.go, with or without replica acknowledgement), a
// quorum of independent masters (backend_quorum.go), or a semaphore of N slots on
// one deployment (backend_semaphore.go). New, NewQuorum and NewSemaphore choose one;
// Client and Lock only ever call these methods, so no other code asks which
// one it has.
//
// Every method that takes a *Lock works on l.key and l.token; the Lock's
// other fields (ttl, acquired, fence, slot, renewBy) are the backend's to
// read and, for fence, slot and renewBy, to set.
type backend interface {
	// acquire takes l for l.ttl. It returns nil when l is ours (also when
	// an earlier attempt with l's token had landed), a *NotObtainedError
	// when someone else holds it, and any other error when it cannot tell;
	// before returning such an error it has removed whatever it may have
	// left behind (see abandon in backend_single.go). It sets l.fence if
	// opts.Fence.
	acquire(ctx context.Context, l *Lock, opts *LockOptions) error
	// extend sets l's remaining time to ttl if it is still ours, else
	// returns an error matching ErrLockNotHeld.
	extend(ctx context.Context, l *Lock, ttl time.Duration) error
	// release gives l up if it is still ours, or with keep > 0 shortens its
	// life to keep; ErrLockNotHeld when it is not ours.
	release(ctx context.Context, l *Lock, keep time.Duration) error
	// ttl is l's remaining time, or ErrLockNotHeld.
	ttl(ctx context.Context, l *Lock) (time.Duration, error)
	// view reads who holds key, for how long, its fencing counter and its
	// last-run records (admin_status.go).
	view(ctx context.Context, key string) (lockView, error)

	// Seeing and clearing locks, and last-run records: backend_single_admin.go,
	// backend_quorum_admin.go.

	// keys returns, each once, the keys that match the SCAN pattern match
	// on every master (all of a Cluster's, every node of a quorum).
	keys(ctx context.Context, match string) ([]string, error)
	// breakLock deletes key whatever its token and wakes its waiters, and
	// leaves a marker naming by ("<host>:<pid>") for the holder to read
	// (brokenKey). It returns the view of what it removed (st.Held false
	// when nothing was held), without records.
	breakLock(ctx context.Context, key, by string) (lockView, error)
	// finish releases l as release does and, in the same round trip,
	// stores w: the record at recordKey(l.key), the history, the last
	// success and a once-per marker (admin_records.go). relErr is what release
	// would return; recErr is the record's failure.
	finish(ctx context.Context, l *Lock, keep time.Duration, w *recordWrite) (relErr, recErr error)
	// history returns up to n of the runs recorded at historyKey(key),
	// newest first, as JSON records; on a quorum every node's, each once.
	history(ctx context.Context, key string, n int) ([]string, error)
	// indexed returns the lock keys in the index of prefix, false when the
	// deployment keeps none or it is empty; unindex removes keys from it;
	// views reads many keys as view does each (admin_index.go).
	indexed(ctx context.Context, prefix string) ([]string, bool, error)
	unindex(ctx context.Context, prefix string, keys []string) error
	views(ctx context.Context, keys []string) ([]lockView, error)
	// marked reads the once-per marker at windowKey(key), "" when none
	// (onceper.go); errors.ErrUnsupported where once-per cannot work.
	marked(ctx context.Context, key string) (string, error)

	// The waiting line (wait.go, wait_local.go, wait_fair.go, wait_fair_room.go,
	// wait_local_handoff.go) uses only these eight.

	// slots is how many may hold one name at once: 1, or a semaphore's N.
	slots() int

	// lineStore returns the deployment that keeps the fair cross-process
	// line of waiters (wait_fair.go), or nil when this backend keeps none and
	// waiters wait as before, woken by release messages.
	lineStore() redis.UniversalClient
	// releaseTo is release with keep 0 by a Client whose id in the fair line
	// is cid: the release may hand the lock to that Client's first waiter
	// without publishing, and returns the token it went to, or "".
	releaseTo(ctx context.Context, l *Lock, keep time.Duration, cid string) (string, error)
	// handed reads what releaseTo returns and a hand-over's message
	// carries: the token the lock went to, and for a semaphore the slot.
	handed(v string) (token string, slot int)
	// lineCheck runs the fair line's check for key (lineCheckScript) as the
	// Client cid, for the entries of its waiters: the holder whose lock
	// frees first ("" if none), its PTTL in ms, and what it saw of each entry.
	lineCheck(ctx context.Context, key, cid string, entries []string) (holder string, pttl int64, seen []lineSeen, err error)
	// mayHold reports whether a key read as v after a waiter's entry left
	// the line may have been handed to token: the waiter, giving up, then
	// releases it (release with l.slot 0 finds the slot).
	mayHold(v, token string) bool

	// subscribe opens the Pub/Sub handle on which the release script's
	// messages (on a channel named like the lock's key) arrive.
	subscribe(ctx context.Context) *redis.PubSub
	// handOver releases from and takes to (same key, fresh token) with
	// a plain SET NX PX in one round trip, setting to.acquired. handled is
	// false when the backend cannot do that; then nothing was sent. got
	// reports whether to is ours; err is the release's error, as release
	// returns it. A SET whose outcome is unknown is cleaned up before
	// handOver returns, and then got is false.
	handOver(ctx context.Context, from, to *Lock) (handled, got bool, err error)
}
