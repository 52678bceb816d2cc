// Package lapse is what the with-lock command's --lock-delay needs of
// package withlock: an acquisition that marks its lease beside the lock's
// key (the lease mark, which every release deletes and an expiry leaves),
// and whether the lease before it lapsed — its holder crashed, was
// stopped, lost Redis or could not renew, so its work may still run —
// rather than ended by a release. It is reached through this package so
// that the library's API does not carry what only the command needs.
package lapse

// Backend is what package withlock implements: Detect and Lapsed are its
// functions, given its *LockOptions and *Lock as opts and lock.
type Backend struct {
	Detect func(opts any)
	Lapsed func(lock any) bool
}

// backend is set once, by package withlock's init, before any caller can
// hold options or a lock.
var backend Backend

// Implement is called by package withlock's init, and only there.
func Implement(b Backend) { backend = b }

// Detect makes an acquisition with opts, a *withlock.LockOptions, mark its
// lease and learn whether the lease before it lapsed: with the SET, in its
// round trip; a waiter handed the lock by the fair line, once it has it,
// one round trip more. A quorum or semaphore Client, or a name with '}'
// and no hash tag, then refuses the acquisition with an error matching
// errors.ErrUnsupported.
func Detect(opts any) {
	if backend.Detect != nil {
		backend.Detect(opts)
	}
}

// Lapsed reports whether the lease before lock's, a *withlock.Lock taken
// with Detect, lapsed without a release, or whether that could not be
// told. It is false when the lock was free or released, and for a lock
// taken without Detect. A lease that a run without Detect took, and that
// lapsed before anyone with it tried the lock, leaves no mark.
func Lapsed(lock any) bool {
	return backend.Lapsed != nil && backend.Lapsed(lock)
}
