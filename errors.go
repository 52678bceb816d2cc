package withlock

// Every sentinel error and error type of the package, and how a READONLY
// reply becomes ErrLockNotHeld (opError).

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

var (
	// ErrNotObtained means the lock is held by someone else. Errors from
	// TryAcquire and Acquire that match it with errors.Is are *NotObtainedError.
	ErrNotObtained = errors.New("lock is held by another owner")

	// ErrLockNotHeld means the lock is no longer ours: it expired, or it
	// expired and someone else took it, or the server answered READONLY (it
	// was demoted in a failover). Release and Extend return it and leave the
	// key untouched.
	ErrLockNotHeld = errors.New("lock is no longer held")

	// ErrReplaced means an Acquire with LockOptions.Replace asked this
	// lock's holder to stop: Extend returns it having renewed the lock,
	// which stays ours until Release hands it to the replacer, and a
	// KeepAlive reports it as a loss (LostError.ReplacedBy) while it goes
	// on renewing, so that the replacer waits for the work to end.
	ErrReplaced = errors.New("lock replaced")

	// ErrWrongType means a key the lock needs (the lock's own key, or its
	// fencing counter) exists but holds something this package did not
	// write: another program uses the same key. Waiting does not help; pick
	// another name or prefix, or remove the foreign key.
	ErrWrongType = errors.New("key holds a value that is not a lock")

	// ErrEmptyName means a lock's name is "": its key would be the bare
	// prefix, one lock shared by every caller that forgot to name theirs.
	// TryAcquire, Acquire, Do, Status and Break return it.
	ErrEmptyName = errors.New("lock name is empty")
)

// NotObtainedError tells who holds a lock that could not be obtained. It
// matches ErrNotObtained with errors.Is.
type NotObtainedError struct {
	Key string // the lock's Redis key
	// Holder is the owner, as far as is known: ID "unknown" and TTL 0 when
	// it could not be read, TTL -1 for a key without expiry; for a
	// semaphore, the holder whose slot frees first.
	Holder Holder
	// Slots is, for a semaphore (NewSemaphore), its number of slots, all
	// held; 0 for a plain lock.
	Slots int
	// Paused is the pause that refused the acquisition (Client.Pause),
	// nil when a holder did; errors.Is(err, ErrPaused) tells the same.
	Paused *Pause
}

// Error names the key, the holder, how long it has held the lock when
// known, and its remaining time when known, which renewal keeps near the
// TTL. It never shows the holder's full token.
func (e *NotObtainedError) Error() string {
	if e.Paused != nil {
		return e.Key + " is " + e.Paused.Describe(time.Now())
	}
	h := e.Holder
	held := ""
	switch d := time.Since(h.Since); {
	case h.Since.IsZero():
	case d < time.Second:
		held = ", taken just now"
	default:
		held = " for " + d.Round(time.Second).String()
	}
	expires := ""
	switch {
	case h.TTL > 0:
		expires = " (expires in " + h.TTL.Round(time.Millisecond).String() + ")"
	case h.TTL < 0:
		expires = " (no expiry: it never frees by itself)"
	}
	if e.Slots > 0 {
		return fmt.Sprintf("all %d slots of %s are held; the first to free is %s's%s%s",
			e.Slots, e.Key, h.ID, held, expires)
	}
	return fmt.Sprintf("%s is held by %s%s%s", e.Key, h.ID, held, expires)
}

// Is makes errors.Is(err, ErrNotObtained) true, and errors.Is(err,
// ErrPaused) when a pause refused it.
func (e *NotObtainedError) Is(target error) bool {
	return target == ErrNotObtained || (target == ErrPaused && e.Paused != nil)
}

// waitEnded is the end of a wait that its context cut short, in words:
// whether it ran out of time or was cancelled, or the caller's own cause.
// It unwraps to the cause, so errors.Is still matches
// context.DeadlineExceeded, context.Canceled or what the caller set.
type waitEnded struct{ cause error }

func (e waitEnded) Error() string {
	switch {
	case errors.Is(e.cause, context.DeadlineExceeded):
		return "the wait's deadline passed"
	case errors.Is(e.cause, context.Canceled):
		return "the wait was cancelled"
	}
	return e.cause.Error()
}

func (e waitEnded) Unwrap() error { return e.cause }

// notObtained describes the lock on key held by the owner of token ("" when
// unknown) with ttl left.
func notObtained(key, token string, ttl time.Duration) *NotObtainedError {
	e := &NotObtainedError{Key: key, Holder: Holder{ID: "unknown", TTL: ttl}}
	if token != "" {
		e.Holder.ID, e.Holder.Since = keys.Holder(token), sinceOf(token)
	}
	return e
}

// unsupported is a combination of options this package refuses. Its
// message says which and matches errors.ErrUnsupported with errors.Is
// without ending in Go's "unsupported operation", so that the CLI can show
// it as it is.
type unsupported string

func (e unsupported) Error() string { return string(e) }

func (e unsupported) Is(target error) bool { return target == errors.ErrUnsupported }

// ErrLockLost means a lock was lost while its KeepAlive ran: Redis said the
// key is no longer ours, or no renewal succeeded before the key could have
// expired. Errors that match it with errors.Is are *LostError.
var ErrLockLost = errors.New("lock lost")

// errNoAnswer is why a lock was presumed lost when its deadline passed
// while a renewal still waited for Redis.
var errNoAnswer = errors.New("no answer from Redis to the last renewal")

// LostError says why a kept-alive lock was lost.
type LostError struct {
	Key string // the lock's Redis key
	// Err is ErrLockNotHeld when Redis said the key expired or holds
	// another owner's token. Otherwise the local deadline passed without a
	// successful renewal, and Err is the last renewal's error (also when it
	// is still waiting for an answer), or nil when none failed (the process
	// was paused, for example).
	Err error
	// BrokenBy is, when Err is ErrLockNotHeld because Client.Break removed
	// the lock, the "<host>:<pid>" of the Client that broke it; "" when
	// Redis knows of no break.
	BrokenBy string
	// ReplacedBy is, when Err is ErrReplaced, the "<host>:<pid>" of the
	// Client whose Acquire with LockOptions.Replace waits for the lock.
	ReplacedBy string
	// Promoted is, when Err is ErrLockNotHeld because a server given to
	// KeepAliveOptions.Recheck (a newly promoted master) lacks the key or
	// holds another owner's, that server's address.
	Promoted string
}

// Error says what was lost and why.
func (e *LostError) Error() string {
	switch {
	case e.ReplacedBy != "":
		return fmt.Sprintf("lock %s lost: replaced by %s (LockOptions.Replace)", e.Key, e.ReplacedBy)
	case e.BrokenBy != "":
		return fmt.Sprintf("lock %s lost: broken by %s (Client.Break)", e.Key, e.BrokenBy)
	case e.Promoted != "":
		return fmt.Sprintf("lock %s lost: %s, which a failover makes the master, does not hold it", e.Key, e.Promoted)
	case errors.Is(e.Err, ErrLockNotHeld):
		return fmt.Sprintf("lock %s lost: it expired or was taken over", e.Key)
	case e.Err != nil:
		return fmt.Sprintf("lock %s presumed lost: no renewal succeeded before it could expire (last attempt: %v)", e.Key, e.Err)
	default:
		return fmt.Sprintf("lock %s presumed lost: it was not renewed before it could expire (was this process paused?)", e.Key)
	}
}

// Unwrap returns ErrLockLost and Err, so that errors.Is matches both.
func (e *LostError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrLockLost}
	}
	return []error{ErrLockLost, e.Err}
}

// ErrDone means the job already succeeded in the current once-per window:
// Lock.OncePer returns it with that window.
var ErrDone = errors.New("already succeeded in this window")

// ErrNotReleased means the release of Lock.ReleaseAndRecord failed for
// another reason than the lock no longer being ours (ErrLockNotHeld):
// Redis refused it or did not answer. The key may still be there, and
// then expires at the end of its TTL.
var ErrNotReleased = errors.New("lock not released")

// ErrNotRecorded means Lock.ReleaseAndRecord did not store the run's
// record: Redis refused it or did not answer, or the record was refused
// before anything was sent. The release is reported apart, in the same
// error.
var ErrNotRecorded = errors.New("last-run record not stored")

// notReleased is a failed release of ReleaseAndRecord: its message is the
// release's, which names the operation and the key, and it matches
// ErrNotReleased.
type notReleased struct{ err error }

func (e notReleased) Error() string { return e.err.Error() }

func (e notReleased) Unwrap() error { return e.err }

func (e notReleased) Is(target error) bool { return target == ErrNotReleased }

// ErrNoQuorum means a quorum Client could not reach a majority of its
// nodes, or not within the lock's validity time. Whatever it did obtain has
// been released again.
var ErrNoQuorum = errors.New("no majority of Redis nodes")

// nodeErrors are the errors of several nodes, on one line, each still
// visible to errors.Is and errors.As.
type nodeErrors []error

func (e nodeErrors) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (e nodeErrors) Unwrap() []error { return e }

// ErrNotReplicated means a lock was obtained but fewer replicas than
// LockOptions.MinReplicas acknowledged it in time; it was released again.
// The error's message says how many did.
var ErrNotReplicated = errors.New("lock was not acknowledged by enough replicas")

// notReplicatedError says how many replicas acknowledged a lock that needed
// more. It matches ErrNotReplicated; callers branch on that alone.
type notReplicatedError struct {
	key       string
	want, got int
}

func (e *notReplicatedError) Error() string {
	return fmt.Sprintf("lock %s was acknowledged by %d of the %d replicas required; released it", e.key, e.got, e.want)
}

func (e *notReplicatedError) Is(target error) bool { return target == ErrNotReplicated }

// ErrSlotsMismatch means the lock's name is in use with another number of
// slots (a plain lock counts as 1); the error's message says both numbers.
// Waiting does not help: TryAcquire and Acquire return it at once.
var ErrSlotsMismatch = errors.New("lock name is used with a different number of slots")

// slotsError says that a name is in use with have slots while the caller
// wanted want; 1 is a plain lock. It matches ErrSlotsMismatch.
type slotsError struct {
	Key        string // the name's Redis key
	Have, Want int
}

func (e *slotsError) Error() string {
	have := fmt.Sprintf("in use with %d slots", e.Have)
	if e.Have == 1 {
		have = "held as a plain lock"
	}
	want := strconv.Itoa(e.Want)
	switch {
	case e.Want == 1:
		want = "a plain lock"
	case e.Have == 1:
		want = fmt.Sprintf("a semaphore of %d slots", e.Want)
	}
	return fmt.Sprintf("lock %s is %s, not %s: every user of a name must use the same number of slots", e.Key, have, want)
}

func (e *slotsError) Is(target error) bool { return target == ErrSlotsMismatch }

// wrongTypeError is a key the lock needs that holds something this package
// did not write. It matches ErrWrongType.
type wrongTypeError struct {
	what  string // "key" (the lock's own) or "fence counter"
	key   string
	holds string // `a list`, or a string's value quoted
	err   error  // Redis's WRONGTYPE reply
}

func (e *wrongTypeError) Error() string {
	not := "a lock"
	if e.what != "key" {
		not = "a number"
	}
	return fmt.Sprintf("%s %s holds %s, not %s: another program uses it; choose another name or prefix",
		e.what, e.key, e.holds, not)
}

func (e *wrongTypeError) Is(target error) bool { return target == ErrWrongType }

func (e *wrongTypeError) Unwrap() error { return e.err }

// errCannotQueue means queueScript cannot reach the server without its
// answering first; the caller sends the command the ordinary way.
var errCannotQueue = errors.New("cannot queue a command for this client")

// opError wraps the error of operation op on a held lock. A READONLY reply
// also matches ErrLockNotHeld: the server that held our key was demoted, and
// with asynchronous replication the promoted replica may never have received
// the key, so for all the owner knows someone else holds the lock now. This
// is the conservative choice: stop relying on the lock (a KeepAlive's loss stops
// the job) rather than carry on through a failover that may have lost it.
func opError(op, key string, err error) error {
	if redis.IsReadOnlyError(err) {
		return fmt.Errorf("%s %s: %w: the server was demoted to a replica (%w)", op, key, ErrLockNotHeld, err)
	}
	return fmt.Errorf("%s %s: %w", op, key, err)
}

// isWrongType reports whether err is Redis's WRONGTYPE reply (or the fenced
// acquisition script's, which uses the same prefix). go-redis v9 has no
// predicate for it, unlike READONLY or NOAUTH, so this matches the reply's
// prefix.
func isWrongType(err error) bool { return redis.HasErrorPrefix(err, "WRONGTYPE") }
