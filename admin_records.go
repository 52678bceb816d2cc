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
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/keys"
)

// Run is the record of one finished run under a lock: who held it, when,
// and how the run ended. Lock.ReleaseAndRecord stores it; Status and List
// return it as Status.LastRun. It answers "did last night's job run, where,
// and how did it end?". Its JSON, as the field tags say, is the stored
// record's, which hosts running other versions read: a field is never
// renamed nor given another meaning, and a reader skips the fields it does
// not know.
type Run struct {
	Holder   string    `json:"holder"`   // "<host>:<pid>" of the lock's owner
	Started  time.Time `json:"started"`  // when the lock was obtained, unless the caller said otherwise
	Finished time.Time `json:"finished"` // when the run ended
	// ExitCode is how the run ended, as the caller defines it: a process's
	// exit code, say.
	ExitCode int   `json:"exit_code"`
	Lost     bool  `json:"lost,omitempty"`  // the lock was lost before the run ended
	Fence    int64 `json:"fence,omitempty"` // the lock's fencing number, or 0
	// Outcome is how the run ended in one word. Only OutcomeOK counts as
	// a success. Left empty, ReleaseAndRecord fills it in, and a lost lock
	// comes first: OutcomeLost whatever the exit code (see Outcome).
	Outcome Outcome `json:"outcome"`
	// Output is the end of what the run printed, as much as the caller
	// chose to keep; "" when it kept none. It is stored with the record,
	// in the history too, so it costs Redis memory for as long as the
	// record lives. JSON carries it as UTF-8 text: bytes that are not UTF-8
	// read back as U+FFFD.
	Output string `json:"output,omitempty"`
	// Extra holds the caller's own fields of the record, each a JSON value
	// under its name ("cpu_ms": 1520, say). They are stored at the top
	// level of the record's JSON beside the fields above, so that a reader
	// that does not know a field skips it; a name the record uses itself
	// (the JSON names above, "name" and "token_sha256") or a value that is
	// not JSON is refused. Status, List and History return every stored field that
	// is not one of the above in Extra, nil when there is none.
	Extra map[string]json.RawMessage `json:"-"`
	// Window is the once-per window the run was for, as Lock.OncePer
	// returns it, or nil. When the run's Outcome is OutcomeOK,
	// ReleaseAndRecord marks that window done (Status.Done) in the
	// release's round trip, so that Lock.OncePer skips the rest of it; a
	// quorum or a semaphore refuses to record a run with a Window
	// (errors.ErrUnsupported). It is not stored in the record, and is nil
	// in the runs that Status, List and History return.
	Window *Span `json:"-"`
}

// Outcome is how a run ended, in one word (Run.Outcome). The package
// defines three; a caller may store words of its own, such as "timed-out"
// for a run it stopped, which count as failures.
//
// A run has one outcome even when several things happened to it; the
// first that applies wins: lost (the lock was lost, so the run may have
// overlapped another owner's), then timed-out (the caller stopped it for
// running too long; the package writes it only for a record of an older
// version that stored "timed_out": true and no outcome), then ok for exit
// code 0, else failed.
type Outcome string

// Outcomes of a run that ReleaseAndRecord fills in when Run.Outcome is
// empty.
const (
	OutcomeOK     Outcome = "ok"     // exit code 0, the lock held to the end: a success
	OutcomeFailed Outcome = "failed" // any other exit code
	OutcomeLost   Outcome = "lost"   // the lock was lost before the run ended
)

// record is a Run as stored at keys.Record, as JSON: with the lock's name, and
// a digest of the token that tells the holder's own finished run from
// another's without revealing the token.
type record struct {
	Name string `json:"name"`
	Run
	Tag string `json:"token_sha256"`
}

// tokenTag is a digest of token: the first 64 bits of its SHA-256, in hex.
func tokenTag(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:8])
}

// recordFields are the names of a stored record's own fields: every other
// field of its JSON is the caller's (Run.Extra).
var recordFields = map[string]bool{"name": true, "holder": true, "started": true, "finished": true,
	"exit_code": true, "lost": true, "fence": true, "outcome": true, "output": true, "token_sha256": true}

func decodeRecord(raw string) (*record, error) {
	var rec record
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		return nil, fmt.Errorf("not a record written by this package: %w", err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &fields); err != nil {
		return nil, fmt.Errorf("not a record written by this package: %w", err)
	}
	for name, v := range fields {
		if !recordFields[name] {
			if rec.Extra == nil {
				rec.Extra = make(map[string]json.RawMessage, len(fields))
			}
			rec.Extra[name] = v
		}
	}
	if rec.Outcome == "" { // written by a version without outcomes, which had timed_out
		rec.Outcome = outcomeOf(&rec.Run, string(rec.Extra["timed_out"]) == "true")
	}
	return &rec, nil
}

// historyRuns is how many runs ReleaseAndRecord keeps in a name's history
// when Options.History is 0.
const historyRuns = 10

// outcomeTimedOut is the outcome of a run its caller stopped for running
// too long, as the CLI's --max-run writes it.
const outcomeTimedOut Outcome = "timed-out"

// outcomeOf is the outcome of a run that does not name one, the first that
// applies (see Outcome): lost, timed-out when timedOut, ok for exit code 0,
// else failed.
func outcomeOf(run *Run, timedOut bool) Outcome {
	switch {
	case run.Lost:
		return OutcomeLost
	case timedOut:
		return outcomeTimedOut
	case run.ExitCode == 0:
		return OutcomeOK
	}
	return OutcomeFailed
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
	sideKeys := []string{keys.Record(key), keys.History(key), keys.Success(key), keys.Window(key), keys.Left(key)}
	if w.index != "" {
		sideKeys = append(sideKeys, w.index)
	}
	return sideKeys
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
// overwrite, and marks its Window done. History and last success live for
// retention too. run's Holder and Fence are taken from the lock; a zero
// Started becomes the time the lock was obtained (for a waiting Acquire,
// when it returned: never before the run it waited for ended), a zero
// Finished the present, an
// empty Outcome OutcomeLost when Lost, OutcomeOK for exit code 0, else
// OutcomeFailed. The record is stored even when the lock is no longer
// ours, so that a lost run is recorded too. Unlike Release it never hands
// the lock to a waiter of the same Client in that round trip: the release
// message wakes it.
//
// It returns nil when the lock was released and the run recorded.
// Otherwise its error says which part failed, and matches with errors.Is:
// ErrLockNotHeld when the lock was no longer ours (the run is recorded all
// the same), ErrNotReleased when the release failed otherwise, and
// ErrNotRecorded when the record was not stored. When both parts failed it
// joins their errors, release first, as errors.Join does. A record refused
// before anything was sent (a retention below 1ms, an Extra field the
// record uses itself) still releases the lock.
func (l *Lock) ReleaseAndRecord(ctx context.Context, run Run, retention time.Duration) error {
	relErr, recErr := l.releaseAndRecord(ctx, run, retention)
	if relErr != nil && !errors.Is(relErr, ErrLockNotHeld) {
		relErr = notReleased{relErr}
	}
	if recErr != nil {
		recErr = fmt.Errorf("%w for %s: %w", ErrNotRecorded, l.key, recErr)
	}
	return errors.Join(relErr, recErr)
}

// releaseAndRecord is ReleaseAndRecord with the release's and the record's
// errors apart.
func (l *Lock) releaseAndRecord(ctx context.Context, run Run, retention time.Duration) (relErr, recErr error) {
	if retention < time.Millisecond {
		return l.c.b.release(ctx, l, l.keep()), fmt.Errorf("retention %s is below 1ms", retention)
	}
	if err := checkExtra(run.Extra); err != nil {
		return l.c.b.release(ctx, l, l.keep()), err
	}
	run.Holder, run.Fence = keys.Holder(l.token), l.fence
	if run.Started.IsZero() {
		run.Started = l.acquired
		if !l.obtained.IsZero() {
			run.Started = l.obtained // not before the run it waited for ended
		}
	}
	if run.Finished.IsZero() {
		run.Finished = time.Now()
	}
	if run.Outcome == "" {
		run.Outcome = outcomeOf(&run, false)
	}
	// Round drops the monotonic reading, which JSON would not keep anyway;
	// records are in UTC, for a fleet across time zones and because
	// writing local time would load the zone database (readers show
	// Local()).
	run.Started, run.Finished = run.Started.Round(0).UTC(), run.Finished.Round(0).UTC()
	b, err := marshalRecord(&record{Name: l.name, Run: run, Tag: tokenTag(l.token)})
	if err != nil {
		return l.c.b.release(ctx, l, l.keep()), err
	}
	w := recordWrite{rec: string(b), retention: retention, history: l.c.history, ok: run.Outcome == OutcomeOK,
		index: keys.Index(l.c.prefix)}
	if run.Window != nil {
		if _, ok := l.c.b.(windowMarker); !ok || l.slot > 0 {
			return l.c.b.release(ctx, l, l.keep()), unsupported("once-per window of " + l.key + ": a quorum or a semaphore keeps none")
		}
		if w.ok {
			w.mark, w.markUntil = run.Window.mark()
		}
	}
	if a, ok := l.c.b.(adminBackend); ok {
		return a.finish(ctx, l, l.keep(), &w)
	}
	// nowhere to record: still release
	return l.c.b.release(ctx, l, l.keep()), errors.ErrUnsupported
}

// checkExtra refuses the caller's fields of a record that would not read
// back as they were given: a name the record uses itself, or a value that
// is not JSON.
func checkExtra(extra map[string]json.RawMessage) error {
	for name, v := range extra {
		switch {
		case recordFields[name]:
			return fmt.Errorf("extra field %q is one of the record's own", name)
		case !json.Valid(v):
			return fmt.Errorf("extra field %q is not a JSON value", name)
		}
	}
	return nil
}

// Client.History: the recorded runs of a name, newest first.

// History returns up to n of the last runs of the lock called name that
// Lock.ReleaseAndRecord recorded and that are still kept, newest first
// (n <= 0: all of them). A name keeps Options.History runs, trimmed at each
// release, for the record's retention after the last. On a quorum it merges
// the runs of every node that answers, each run once, and needs a majority
// of answers, as List does.
func (c *Client) History(ctx context.Context, name string, n int) ([]Run, error) {
	key := c.Key(name)
	a, err := c.admin("history of " + key)
	if err != nil {
		return nil, err
	}
	raws, err := a.history(ctx, key, n)
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", key, err)
	}
	runs := make([]Run, 0, len(raws))
	for _, raw := range raws {
		rec, err := decodeRecord(raw)
		if err != nil {
			return nil, fmt.Errorf("history of %s: %w", key, err)
		}
		runs = append(runs, rec.Run)
	}
	// A list is newest first already; a quorum's union needs sorting. The
	// sort is stable, so that runs finished in the same instant keep their
	// order.
	slices.SortStableFunc(runs, func(a, b Run) int { return b.Finished.Compare(a.Finished) })
	if n > 0 && len(runs) > n {
		runs = runs[:n]
	}
	return runs, nil
}

// historyOn reads up to n of the runs at keys.History(key) on rdb.
func historyOn(ctx context.Context, rdb redis.UniversalClient, key string, n int) ([]string, error) {
	raws, err := rdb.LRange(ctx, keys.History(key), 0, int64(n)-1).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	return raws, nil
}
