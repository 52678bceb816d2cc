// Package leftovers is the note the with-lock command keeps beside a held
// lock while the run's command has exited and processes it started still
// run under the lock: --status and --list show it. Package withlock
// stores the note (a token-checked script beside the lock's key, deleted
// by the release) and reads it with Status; this package is how the
// command reaches that, so that the library's API does not carry what
// only the command needs.
package leftovers

import (
	"context"
	"errors"
	"time"
)

// Note says that the command of the lock's run has exited while processes
// it started still run, and the lock stays held for them. Its JSON is the
// stored note's, which other versions of with-lock read.
type Note struct {
	ExitCode  int       `json:"exit_code"` // the command's exit code
	Exited    time.Time `json:"exited"`    // when it exited
	Processes int       `json:"processes"` // how many processes of its job still run
}

// Backend is what package withlock implements: Store and Of are its
// functions, given its *Lock and *Status as lock and status.
type Backend struct {
	Store func(ctx context.Context, lock any, n Note) error
	Of    func(status any) *Note
}

// backend is set once, by package withlock's init, before any caller can
// hold a lock or a status.
var backend Backend

// Implement is called by package withlock's init, and only there.
func Implement(b Backend) { backend = b }

// Store stores n beside lock, a *withlock.Lock, while it is still held,
// for the lock's remaining time: call it again after renewals to keep it,
// and when the number of processes changes. The lock's ReleaseAndRecord
// deletes it. It returns an error matching withlock.ErrLockNotHeld when
// the lock is no longer ours, and one matching errors.ErrUnsupported on a
// semaphore. On a quorum it is stored on the nodes that hold the lock, a
// majority.
func Store(ctx context.Context, lock any, n Note) error {
	if backend.Store == nil {
		return errors.ErrUnsupported
	}
	return backend.Store(ctx, lock, n)
}

// Of returns the note that status, a *withlock.Status, read: set while the
// holder's command has exited and processes it started still run under
// the lock, nil otherwise.
func Of(status any) *Note {
	if backend.Of == nil {
		return nil
	}
	return backend.Of(status)
}
