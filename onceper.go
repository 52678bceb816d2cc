package withlock

// Lock.OncePer: a job that succeeds at most once per time window, and the
// window's marker.

import (
	"context"
	"errors"
	"fmt"
	"github.com/with-lock/with-lock/internal/keys"
	"strconv"
	"strings"
	"time"
)

// Window divides time into once-per windows of Every, aligned to multiples
// of Every since the Unix epoch (UTC) and shifted later by Offset: Every
// 24h and Offset 2h are the days from 02:00 UTC to 02:00 UTC.
type Window struct {
	Every  time.Duration
	Offset time.Duration
}

// Span is one window: from Start, included, to End, excluded.
type Span struct {
	Start, End time.Time
}

// At returns the window that contains t.
func (w Window) At(t time.Time) Span {
	every := w.Every.Nanoseconds()
	into := (t.UnixNano() - w.Offset.Nanoseconds()) % every
	if into < 0 {
		into += every
	}
	start := time.Unix(0, t.UnixNano()-into).UTC()
	return Span{start, start.Add(w.Every)}
}

// windowMargin is how long a window's marker outlives the window: a server
// whose clock is behind by less than that still finds it.
func windowMargin(every time.Duration) time.Duration { return min(every, time.Hour) }

// markValue is the marker of s as stored at keys.Window: its start and end in
// Unix milliseconds, so that a marker tells which window it is for and a
// reader needs no Window to show it.
func markValue(s Span) string {
	return strconv.FormatInt(s.Start.UnixMilli(), 10) + ":" + strconv.FormatInt(s.End.UnixMilli(), 10)
}

// parseMark reads a marker; false for anything else.
func parseMark(v string) (Span, bool) {
	a, b, ok := strings.Cut(v, ":")
	start, err1 := strconv.ParseInt(a, 10, 64)
	end, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || end <= start {
		return Span{}, false
	}
	return Span{time.UnixMilli(start).UTC(), time.UnixMilli(end).UTC()}, true
}

// mark is what ReleaseAndRecord stores when a run of window s succeeds: the
// window's marker, and when it expires, in Unix milliseconds of the
// server's clock: the window's end plus its margin. record.lua turns that
// into a TTL with the server's TIME, so no host's clock enters it either.
func (s *Span) mark() (string, int64) {
	return markValue(*s), s.End.Add(windowMargin(s.End.Sub(s.Start))).UnixMilli()
}

// OncePer makes l's job run at most once per window of w: call it right
// after acquiring, before the job starts. It returns the window of w that
// contains the Redis server's present (its TIME), not this host's, so that
// every host picks the same window whatever its clock says. When a run
// already succeeded in that window, it releases l at once (not kept for
// LockOptions.MinHold: nothing ran) and returns an error matching ErrDone,
// joined with the release's error if that failed. Otherwise the error is
// nil: give the window to Lock.ReleaseAndRecord as Run.Window, and a run
// with Outcome OutcomeOK marks it done in the release's round trip; a
// failed run marks nothing, so the next attempt retries.
//
// Holding the lock is what keeps this free of races: the marker is written
// before the release, and read only by a holder. It costs one EVAL, which
// reads the marker and the server's clock together. It needs one
// deployment: a quorum or a semaphore refuses it (errors.ErrUnsupported),
// as every slot's holder would read the marker at once.
func (l *Lock) OncePer(ctx context.Context, w Window) (Span, error) {
	span, done, err := l.c.windowDone(ctx, l.key, w)
	if err != nil {
		return Span{}, err
	}
	if done {
		d := fmt.Errorf("%s %w starting %s", l.key, ErrDone, span.Start.Format(time.RFC3339))
		return span, errors.Join(d, l.c.b.release(ctx, l, 0))
	}
	return span, nil
}

// WindowDone tells whether name's job already succeeded (Lock.OncePer) in
// the window of w that contains the Redis server's present: that window
// and true, or that window and false. It takes no lock, so the answer can
// change as soon as it is given; use it to report, and Lock.OncePer to
// decide. Like OncePer it costs one EVAL and needs one deployment.
func (c *Client) WindowDone(ctx context.Context, name string, w Window) (Span, bool, error) {
	return c.windowDone(ctx, c.Key(name), w)
}

// windowDone reads key's marker and the server's clock, and tells whether
// the window of w at that clock is the one marked done.
func (c *Client) windowDone(ctx context.Context, key string, w Window) (Span, bool, error) {
	if w.Every < time.Second {
		return Span{}, false, fmt.Errorf("once-per window %s is below 1s", w.Every)
	}
	m, ok := c.b.(windowMarker)
	if !ok {
		return Span{}, false, unsupported("once-per windows need a plain lock on one Redis deployment: not a quorum of masters, nor a semaphore, whose every slot's holder would find the window not done")
	}
	v, now, err := m.marked(ctx, key)
	if err != nil {
		return Span{}, false, err
	}
	span := w.At(now)
	return span, v == markValue(span), nil
}

// marked reads the once-per marker of the lock key key, "" when none, and
// the server's present, in one EVAL of windowScript.
func (s *single) marked(ctx context.Context, key string) (string, time.Time, error) {
	v, err := s.rdb.Eval(ctx, windowScript(), []string{keys.Window(key)}).Slice()
	if err != nil {
		return "", time.Time{}, fmt.Errorf("read the once-per marker of %s: %w", key, err)
	}
	now, ok := serverTime(v)
	if !ok {
		return "", time.Time{}, fmt.Errorf("read the once-per marker of %s: unexpected reply %v", key, v)
	}
	mark, _ := v[2].(string) // nil when there is no marker
	return mark, now, nil
}

// serverTime reads the {seconds, microseconds, ...} that windowScript
// returns.
func serverTime(v []any) (time.Time, bool) {
	if len(v) != 3 {
		return time.Time{}, false
	}
	a, _ := v[0].(string)
	b, _ := v[1].(string)
	sec, err1 := strconv.ParseInt(a, 10, 64)
	usec, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil {
		return time.Time{}, false
	}
	return time.Unix(sec, usec*1000).UTC(), true
}

// doneWindow is the window a marker read by Status names, when it has not
// ended at now; nil otherwise.
func doneWindow(v string, now time.Time) *Span {
	if v == "" { // none: List asks for every lock, and a failed parse allocates
		return nil
	}
	if s, ok := parseMark(v); ok && now.Before(s.End) {
		return &s
	}
	return nil
}
