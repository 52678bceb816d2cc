package withlock

// The storage seam: the core interface every kind of lock storage
// implements, and the optional capabilities only some have.

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// backend is what every kind of lock storage does: one Redis deployment
// (backend_single.go, with or without replica acknowledgement), a quorum of
// independent masters (backend_quorum.go), or a semaphore of N slots on one
// deployment (backend_semaphore.go). New, NewQuorum and NewSemaphore choose
// one. It is the core that taking, keeping and giving up a lock needs; what
// only some storage can do is an optional capability below, found with a
// type assertion, so a backend that lacks one says so by not having it
// rather than by a method that must not be called.
//
// Every method that takes a *Lock works on l.key and l.token; the Lock's
// other fields (ttl, acquired, fence, slot, renewBy) are the backend's to
// read and, for fence, slot and renewBy, to set.
type backend interface {
	// acquire takes l for l.ttl. It returns nil when l is ours (also when
	// an earlier attempt with l's token had landed), a *NotObtainedError
	// when someone else holds it, and any other error when it cannot tell;
	// before returning such an error it has removed whatever it may have
	// left behind (see abandon in cleanup.go). It sets l.fence if
	// opts.Fence.
	acquire(ctx context.Context, l *Lock, opts *LockOptions) error
	// renew sets l's remaining time to ttl if it is still ours, else
	// returns an error matching ErrLockNotHeld.
	renew(ctx context.Context, l *Lock, ttl time.Duration) error
	// release gives l up if it is still ours, or with keep > 0 shortens its
	// life to keep; ErrLockNotHeld when it is not ours.
	release(ctx context.Context, l *Lock, keep time.Duration) error
	// ttl is l's remaining time, or ErrLockNotHeld.
	ttl(ctx context.Context, l *Lock) (time.Duration, error)
	// subscribe opens the Pub/Sub handle on which the release script's
	// messages (on a channel named like the lock's key) arrive.
	subscribe(ctx context.Context) *redis.PubSub
}

// adminBackend is a backend that can be seen and cleared, and keeps
// last-run records, for the admin_*.go files: every one, in
// backend_admin.go (one deployment, plain or semaphore) and
// backend_quorum_admin.go. A backend without it
// makes Status, List, Break, History and ReleaseAndRecord return
// errors.ErrUnsupported (Client.admin).
type adminBackend interface {
	// view reads who holds key, for how long, its fencing counter and its
	// last-run records (admin_status.go).
	view(ctx context.Context, key string) (lockView, error)
	// views reads many keys as view does each.
	views(ctx context.Context, keys []string) ([]lockView, error)
	// keys returns, each once, the keys that match the SCAN pattern match
	// on every master (all of a Cluster's, every node of a quorum).
	keys(ctx context.Context, match string) ([]string, error)
	// breakLock deletes key whatever its token and wakes its waiters, and
	// leaves a marker naming by ("<host>:<pid>") for the holder to read
	// (keys.Broken). It returns the view of what it removed (st.Held false
	// when nothing was held), without records.
	breakLock(ctx context.Context, key, by string) (lockView, error)
	// finish releases l as release does and, in the same round trip,
	// stores w: the record at keys.Record(l.key), the history, the last
	// success and a once-per marker (admin_records.go). relErr is what
	// release would return; recErr is the record's failure.
	finish(ctx context.Context, l *Lock, keep time.Duration, w *recordWrite) (relErr, recErr error)
	// history returns up to n of the runs recorded at keys.History(key),
	// newest first, as JSON records; on a quorum every node's, each once.
	history(ctx context.Context, key string, n int) ([]string, error)
}

// admin returns c's backend as an adminBackend, or for op an error that
// matches errors.ErrUnsupported.
func (c *Client) admin(op string) (adminBackend, error) {
	if a, ok := c.b.(adminBackend); ok {
		return a, nil
	}
	return nil, unsupported(op + ": this Client's lock storage keeps no status or records")
}

// indexKeeper is a backend that keeps an index of the names in use for
// List (admin_index.go): one deployment, plain or semaphore.
type indexKeeper interface {
	// indexed returns the lock keys in the index of prefix, false when
	// the deployment keeps none; unindex prunes keys out of use from it.
	indexed(ctx context.Context, prefix string) ([]string, bool, error)
	unindex(ctx context.Context, prefix string, keys []string) error
	// indexWrites is what the Client remembers of its writes into the
	// index, nil where the deployment keeps none.
	indexWrites() *nameIndex
}

// windowMarker is a backend that can keep once-per markers (onceper.go):
// a plain lock on one deployment.
type windowMarker interface {
	// marked reads the once-per marker at keys.Window(key), "" when none,
	// and the server's present, together.
	marked(ctx context.Context, key string) (string, time.Time, error)
}

// slotted is a backend that admits more than one holder per name: a
// semaphore. Every other backend admits one (slotsPer).
type slotted interface {
	// slots is how many may hold one name at once.
	slots() int
}

// slotsPer is how many may hold one name at once on b.
func slotsPer(b backend) int {
	if s, ok := b.(slotted); ok {
		return s.slots()
	}
	return 1
}

// fairLine is a backend that keeps the fair cross-process line of waiters
// (wait_fair.go): one deployment, plain or semaphore. Waiters on any other
// wait in their Client's local queues (wait_local.go), woken by release
// messages and retrying at the holder's expiry.
type fairLine interface {
	backend
	// lineStore returns the deployment that keeps the line.
	lineStore() redis.UniversalClient
	// releaseTo is release with keep 0 by a Client whose id in the fair line
	// is cid: the release may hand the lock to that Client's first waiter
	// without publishing, and returns the token it went to, or "".
	releaseTo(ctx context.Context, l *Lock, keep time.Duration, cid string) (string, error)
	// handed reads what releaseTo returns and a hand-over's message
	// carries: the token the lock went to, and for a semaphore the slot.
	handed(v string) (token string, slot int)
	// lineCheck runs the fair line's check for key (lineCheckScript) as the
	// Client cid, for the entries of its waiters: the PTTL in ms of the
	// holder whose lock frees first, and what it saw of each entry. far
	// says that the waiters are all far back (wait_fair_far.go): the check
	// then refreshes the Client's far key, not its liveness key.
	lineCheck(ctx context.Context, key, cid string, far bool, entries []string) (pttl int64, seen []lineSeen, err error)
	// mayHold reports whether a key read as v after a waiter's entry left
	// the line may have been handed to token: the waiter, giving up, then
	// releases it (release with l.slot 0 finds the slot).
	mayHold(v, token string) bool
}

// handOverer is a backend that can release a lock and take it for a waiter
// of the same Client in one round trip (wait_local.go): a plain
// lock on one deployment.
type handOverer interface {
	// handOver releases from and takes to (same key, fresh token) with
	// a plain SET NX PX in one round trip, setting to.acquired. got
	// reports whether to is ours; err is the release's error, as release
	// returns it. A SET whose outcome is unknown is cleaned up before
	// handOver returns, and then got is false.
	handOver(ctx context.Context, from, to *Lock) (got bool, err error)
}

// breakTeller is a backend whose Break leaves a marker its victim can read
// (admin_break.go): every one.
type breakTeller interface {
	brokenBy(ctx context.Context, l *Lock) (string, error)
}

// Which backend has which capability; the compiler checks these, and
// TestBackendCapabilities that none has one more.
var (
	_ adminBackend = (*single)(nil)
	_ adminBackend = (*quorum)(nil)
	_ adminBackend = (*semaphore)(nil)
	_ indexKeeper  = (*single)(nil)
	_ indexKeeper  = (*semaphore)(nil)
	_ windowMarker = (*single)(nil)
	_ slotted      = (*semaphore)(nil)
	_ fairLine     = (*single)(nil)
	_ fairLine     = (*semaphore)(nil)
	_ handOverer   = (*single)(nil)
	_ breakTeller  = (*single)(nil)
	_ breakTeller  = (*quorum)(nil)
	_ breakTeller  = (*semaphore)(nil)
)
