package withlock

// Last-run records: Run, Lock.ReleaseAndRecord and the keys and script that
// store a run's record, history and last success.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

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
	// Outcome is how the run ended in one word: OutcomeOK, OutcomeFailed,
	// OutcomeLost, OutcomeTimedOut, or the caller's own. Only OutcomeOK
	// counts as a success.
	Outcome string `json:"outcome"`
	// CPUMs and MaxRSSKB are what the run's processes cost, as far as the
	// caller knows: CPU time (user and system) in milliseconds, and the
	// largest resident set of any one of them in KiB (the CLI's, from the
	// rusage of the job's processes).
	CPUMs    int64 `json:"cpu_ms,omitempty"`
	MaxRSSKB int64 `json:"max_rss_kb,omitempty"`
	// Output is the end of what the run printed, as much as the caller
	// chose to keep (the CLI's --record-output); "" when it kept none.
	// It is stored with the record, in the history too, so it costs
	// Redis memory for as long as the record lives. JSON carries it as
	// UTF-8 text: bytes that are not UTF-8 read back as U+FFFD.
	Output string `json:"output,omitempty"`
	// Tracking is what followed the run's processes, as the caller says
	// (the CLI's: "scope", "cgroup", "subreaper", "reaper" or "process
	// group").
	Tracking string `json:"tracking,omitempty"`
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
	if rec.Outcome == "" { // written by a version without outcomes
		rec.Outcome = outcomeOf(&rec.Run)
	}
	return &rec, nil
}

// Outcomes of a run (Run.Outcome).
const (
	OutcomeOK       = "ok"        // exit code 0, the lock held to the end: a success
	OutcomeFailed   = "failed"    // any other exit code
	OutcomeLost     = "lost"      // the lock was lost before the run ended
	OutcomeTimedOut = "timed-out" // stopped for running too long (set by the caller)
)

// DefaultHistory is how many runs of a name ReleaseAndRecord keeps in its
// history when Options.History is 0.
const DefaultHistory = 10

// outcomeOf is the outcome of a run that does not name one: timed out,
// lost, ok for exit code 0, else failed.
func outcomeOf(run *Run) string {
	switch {
	case run.TimedOut:
		return OutcomeTimedOut
	case run.Lost:
		return OutcomeLost
	case run.ExitCode == 0:
		return OutcomeOK
	}
	return OutcomeFailed
}

// Host is the host part of run's Holder ("<host>:<pid>").
func (run *Run) Host() string {
	if i := strings.LastIndexByte(run.Holder, ':'); i > 0 {
		return run.Holder[:i]
	}
	return run.Holder
}

// Duration is how long the run took, from Started to Finished.
func (run *Run) Duration() time.Duration { return run.Finished.Sub(run.Started) }

// historyKey is the list of the last runs of the lock key key, newest
// first, in its slot: "{key}:runs".
func historyKey(key string) string { return sideKey(key, "runs") }

// successKey is the record of the last successful run (OutcomeOK) of the
// lock key key, in its slot: "{key}:ok".
func successKey(key string) string { return sideKey(key, "ok") }

// windowKey is the marker of the once-per window in which the lock key
// key's job last succeeded, in its slot: "{key}:done".
func windowKey(key string) string { return sideKey(key, "done") }

// recordScript is what the finish scripts run after the release, whose
// reply is in r: it stores the run's record at recordKey, pushes it onto
// the history at historyKey trimmed to its size (none when 0), and when the
// run succeeded also stores it at successKey and, with a marker's expiry
// above 0, the once-per window's marker (onceper.go), until that expiry by
// the server's TIME; when the release gave the
// lock up, it deletes the holder's leftovers note (leftovers.go). Every key is in the lock's
// Cluster slot and lives for the retention, the marker until its expiry. The
// writes are pcalls after the release, so that none can stop the release
// or hide its reply: the script returns {the release's reply, "OK" or the
// first write's error}. Last, where the deployment keeps an index of the
// prefix's names (admin_index.go), it adds the lock's key to it.
var recordScript = lazyScript("record.lua")

// finishAround makes a finish script of a release script: the release,
// run as a function, then recordScript. KEYS and ARGV are the release's,
// then the record's (recordWrite.keys and args) at their end. So the
// release stays the one compare-and-delete EVAL the original contract
// asks for, and the record costs no command of its own.
func finishAround(release string) string {
	return "local function release()\n" + release + "\nend\nlocal r = release()\n" + recordScript()
}

// recordWrite is what a finish script stores after the release.
type recordWrite struct {
	rec       string        // the run's record, JSON
	retention time.Duration // how long the record, history and last success live
	history   int           // how many runs the history keeps; 0: none
	ok        bool          // the run succeeded: it is also the last success
	mark      string        // the once-per window's marker, stored with ok
	markUntil int64         // when it expires, Unix ms by the server's clock; 0: no marker
	index     string        // the prefix's index (admin_index.go), or "" where there is none
}

// keys are the record's keys for the lock key key, after the release's.
func (w *recordWrite) keys(key string) []string {
	keys := []string{recordKey(key), historyKey(key), successKey(key), windowKey(key), leftKey(key)}
	if w.index != "" {
		keys = append(keys, w.index)
	}
	return keys
}

// args are the record's ARGV, after the release's.
func (w *recordWrite) args() []any {
	ok := "0"
	if w.ok {
		ok = "1"
	}
	return []any{w.rec, w.retention.Milliseconds(), w.history, ok, w.mark, w.markUntil}
}

// ReleaseAndRecord releases the lock as Release does and stores run as the
// last run of its name, kept for retention, in the same round trip (on a
// quorum: on every node, stored when a majority stored it). The run also
// goes on the name's history (Client.History), trimmed there to
// Options.History runs, and when its Outcome is OutcomeOK it becomes the
// name's last success (Status.LastSuccess), which a later failure does not
// overwrite; after Lock.OncePer it also marks the window done. History and
// last success live for retention too. run's Holder and Fence are taken
// from the lock; a zero Started becomes the time of acquisition, a zero
// Finished the present, an empty Outcome OutcomeLost when Lost, OutcomeOK
// for exit code 0, else OutcomeFailed. The record is stored even when
// the lock is no longer ours, so that a lost run is recorded too. Unlike
// Release it never hands the lock to a waiter of the same Client in that
// round trip: the release message wakes it.
//
// The two errors are reported apart because callers act on them apart:
// released is the release's, as Release returns it (ErrLockNotHeld when the
// lock was no longer ours); recorded is nil when the record was stored,
// else why not. A record refused before anything was sent (a retention
// below 1ms) still releases the lock.
func (l *Lock) ReleaseAndRecord(ctx context.Context, run Run, retention time.Duration) (released, recorded error) {
	if retention < time.Millisecond {
		return l.c.b.release(ctx, l, l.keep()), fmt.Errorf("%w for %s: retention %s is below 1ms", errNotRecorded, l.key, retention)
	}
	run.Holder, run.Fence = holderOf(l.token), l.fence
	if run.Started.IsZero() {
		run.Started = l.acquired
	}
	if run.Finished.IsZero() {
		run.Finished = time.Now()
	}
	if run.Outcome == "" {
		run.Outcome = outcomeOf(&run)
	}
	// Round drops the monotonic reading, which JSON would not keep anyway;
	// records are in UTC, for a fleet across time zones and because
	// writing local time would load the zone database (readers show
	// Local()).
	run.Started, run.Finished = run.Started.Round(0).UTC(), run.Finished.Round(0).UTC()
	b, err := marshalRecord(&record{Name: l.name, Run: run, Tag: tokenTag(l.token)})
	if err != nil {
		return l.c.b.release(ctx, l, l.keep()), fmt.Errorf("%w for %s: %w", errNotRecorded, l.key, err)
	}
	w := recordWrite{rec: string(b), retention: retention, history: l.c.history, ok: run.Outcome == OutcomeOK,
		index: indexKey(l.c.prefix)}
	if w.ok && l.window != nil {
		w.mark, w.markUntil = l.window.mark()
	}
	var relErr, recErr error
	if a, ok := l.c.b.(adminBackend); ok {
		relErr, recErr = a.finish(ctx, l, l.keep(), &w)
	} else { // nowhere to record: still release
		relErr, recErr = l.c.b.release(ctx, l, l.keep()), errors.ErrUnsupported
	}
	if recErr != nil {
		recErr = fmt.Errorf("%w for %s: %w", errNotRecorded, l.key, recErr)
	}
	return relErr, recErr
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
