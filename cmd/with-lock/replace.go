package main

import (
	"fmt"

	withlock "github.com/with-lock/with-lock"
)

// replacedReason is lostReason for a lock that a run with --replace asked
// to stop: the replacer's host:pid, from the marker it left. The lock
// stays renewed while the job stops, and its release hands it to the
// replacer, so --on-lost reacquire has nothing to take back.
func replacedReason(lock *withlock.Lock, by string) (string, fields) {
	return fmt.Sprintf("lock %s lost: replaced by %s with --replace", lock.Key(), by), fields{}
}
