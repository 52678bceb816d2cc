package withlock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ErrNotRecorded means Lock.ReleaseAndRecord could not store the run's
// record; the release itself may have succeeded.
var ErrNotRecorded = errors.New("last-run record not stored")

// Run is the record of one finished run under a lock: who held it, when,
// and how the run ended. Lock.ReleaseAndRecord stores it; Status and List
// return it as Status.LastRun. It answers "did last night's job run, where,
// and how did it end?".
type Run struct {
	Holder   string    `json:"holder"`   // "<host>:<pid>" of the lock's owner
	Started  time.Time `json:"started"`  // when the lock was acquired, unless the caller said otherwise
	Finished time.Time `json:"finished"` // when the run ended
	// ExitCode is how the run ended, as the caller defines it (the CLI
	// stores its own exit code: the command's, 128+N after signal N, 125
	// when the lock was lost).
	ExitCode int   `json:"exit_code"`
	Lost     bool  `json:"lost,omitempty"`  // the lock was lost before the run ended
	Fence    int64 `json:"fence,omitempty"` // the lock's fencing number, or 0
	// TimedOut is set when the run was stopped for running too long (the
	// CLI's --max-run).
	TimedOut bool `json:"timed_out,omitempty"`
	// CPUMs and MaxRSSKB are what the run's processes cost, as far as the
	// caller knows: CPU time (user and system) in milliseconds, and the
	// largest resident set of any one of them in KiB (the CLI's, from the
	// rusage of the job's processes).
	CPUMs    int64 `json:"cpu_ms,omitempty"`
	MaxRSSKB int64 `json:"max_rss_kb,omitempty"`
}

// record is a Run as stored at recordKey, as JSON: with the lock's name, and
// a digest of the token that tells the holder's own finished run from
// another's without revealing the token.
type record struct {
	Name string `json:"name"`
	Run
	Tag string `json:"token_sha256"`
}

// recordKey is the key of the last-run record of the lock key key, in its
// Redis Cluster slot: "{key}:last".
func recordKey(key string) string { return sideKey(key, "last") }

// tokenTag is a digest of token: the first 64 bits of its SHA-256, in hex.
func tokenTag(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:8])
}

func decodeRecord(raw string) (*record, error) {
	var rec record
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		return nil, fmt.Errorf("not a record written by this package: %w", err)
	}
	return &rec, nil
}

// ReleaseAndRecord releases the lock as Release does and stores run as the
// last run of its name, kept for retention, in the same round trip (on a
// quorum: on every node, stored when a majority stored it). run's Holder
// and Fence are taken from the lock; a zero Started becomes the time of
// acquisition, a zero Finished the present. The record is stored even when
// the lock is no longer ours, so that a lost run is recorded too. Unlike
// Release it never hands the lock to a waiter of the same Client in that
// round trip: the release message wakes it.
//
// The error is the release's, as Release returns it, joined with one that
// matches ErrNotRecorded when the record was not stored.
func (l *Lock) ReleaseAndRecord(ctx context.Context, run Run, retention time.Duration) error {
	if retention < time.Millisecond {
		return fmt.Errorf("record retention %s is below 1ms", retention)
	}
	run.Holder, run.Fence = holderOf(l.token), l.fence
	if run.Started.IsZero() {
		run.Started = l.acquired
	}
	if run.Finished.IsZero() {
		run.Finished = time.Now()
	}
	// Round drops the monotonic reading, which JSON would not keep anyway.
	run.Started, run.Finished = run.Started.Round(0), run.Finished.Round(0)
	b, err := json.Marshal(record{Name: l.name, Run: run, Tag: tokenTag(l.token)})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotRecorded, err)
	}
	relErr, recErr := l.c.b.finish(ctx, l, l.keep(), string(b), retention)
	if recErr != nil {
		recErr = fmt.Errorf("%w for %s: %w", ErrNotRecorded, l.key, recErr)
	}
	return errors.Join(relErr, recErr)
}

// keep is what is left of l's min-hold: how long the key must still live
// after a release, or 0 to delete it.
func (l *Lock) keep() time.Duration {
	if l.minHold > 0 {
		if left := l.minHold - time.Since(l.acquired); left >= time.Millisecond {
			return left
		}
	}
	return 0
}
