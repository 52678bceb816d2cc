package withlock

// Replacing a running holder (LockOptions.Replace): the marker that asks it
// to stop, read by its renewals, and the waiter that goes first in line.

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// replacedKey is the key of the marker an Acquire with LockOptions.Replace
// leaves beside the lock key key, in its Cluster slot: "<host:pid of the
// replacer> <sha1 of the holder's token>", living as long as the holder's
// key had left (plus a second), so that the holder's next renewal finds it.
// It never holds a token.
func replacedKey(key string) string { return sideKey(key, "replaced") }

// replaceScript marks the holder of a plain lock as replaced (see
// replacedKey). KEYS[1] is the lock key, KEYS[2] its replace marker,
// KEYS[3] and KEYS[4] its pause (pauseKey) and its line, ARGV[1] the
// replacer's "<host>:<pid>", ARGV[2] its entry in the queue. It returns the
// holder's token, nil when the key is free; a semaphore's marker is
// returned and left alone. Where a pause waits for the holder's release
// (Client.Pause), the holder is not marked and the replacer's entry goes
// behind the pause: a paused name starts no run, a replacing one neither.
var replaceScript = lazyScript("replace.lua")

// extended reads the reply v (or err) of the extend scripts for the lock
// key key: nil when extended, ErrLockNotHeld when the lock is not ours, a
// *replacedError matching ErrReplaced when it was extended but a replacer
// asked its holder to stop.
func extended(key string, v any, err error) error {
	if err != nil {
		return opError("extend", key, err)
	}
	switch v := v.(type) {
	case int64:
		if v == 1 {
			return nil
		}
	case string:
		return &replacedError{key: key, by: v}
	}
	return ErrLockNotHeld
}

// replacedError is Extend's answer for a lock that a replacer asked its
// holder to give up: it was extended all the same.
type replacedError struct{ key, by string }

func (e *replacedError) Error() string {
	return fmt.Sprintf("lock %s replaced by %s", e.key, e.by)
}

func (e *replacedError) Unwrap() error { return ErrReplaced }

// replacedBy is who replaced the lock, from an error of Extend; "" when
// none did.
func replacedBy(err error) string {
	var re *replacedError
	if errors.As(err, &re) {
		return re.by
	}
	return ""
}

// errReplaceUnsupported is Acquire's answer to LockOptions.Replace where
// the fair line cannot put the replacer first.
var errReplaceUnsupported = fmt.Errorf("%w: LockOptions.Replace needs the fair line: one Redis deployment (not a quorum), a plain lock without Fence, MinReplicas or slots, and Redis 7.0 or newer", errors.ErrUnsupported)

// queueReplace sends, in the join's pipeline p and after the waiter's
// LPUSH of entry to the head of r's line, the script that marks r's
// holder as replaced by by.
func queueReplace(ctx context.Context, p redis.Pipeliner, r *room, by, entry string) *redis.Cmd {
	paused, _ := pauseKey(r.key) // r has a line: its key has a base
	return p.Eval(ctx, replaceScript(), []string{r.key, replacedKey(r.key), paused, r.queue()}, by, entry)
}
