package withlock

// Lock.OncePer: a job that succeeds at most once per time window, and the
// window's marker.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
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

// markValue is the marker of s as stored at windowKey: its start and end in
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

// mark is what l's ReleaseAndRecord stores when its run succeeds: the
// window's marker, living until the window ends plus its margin; a ttl of 0
// when that is already past.
func (s *Span) mark() (string, time.Duration) {
	ttl := time.Until(s.End.Add(windowMargin(s.End.Sub(s.Start))))
	if ttl < time.Millisecond {
		return "", 0
	}
	return markValue(*s), ttl
}

// OncePer makes l's job run at most once per window of w: call it right
// after acquiring, before the job starts. When a run already succeeded in
// the window that contains now, it releases l at once (not kept for
// LockOptions.MinHold: nothing ran) and returns a *DoneError matching
// ErrDone. Otherwise it returns nil, and Lock.ReleaseAndRecord of a run
// with Outcome OutcomeOK marks the window done, in the release's round
// trip; a failed run marks nothing, so the next attempt retries.
//
// Holding the lock is what keeps this free of races: the marker is written
// before the release, and read only by a holder. It costs one GET. It needs
// one deployment: a quorum or a semaphore refuses it
// (errors.ErrUnsupported), as every slot's holder would read the marker at
// once.
func (l *Lock) OncePer(ctx context.Context, w Window) error {
	if w.Every < time.Second {
		return fmt.Errorf("once-per window %s is below 1s", w.Every)
	}
	span := w.At(time.Now())
	m, ok := l.c.b.(windowMarker)
	if !ok {
		return unsupported("once-per windows need a plain lock on one Redis deployment: not a quorum of masters, nor a semaphore, whose every slot's holder would find the window not done")
	}
	v, err := m.marked(ctx, l.key)
	if err != nil {
		return err
	}
	if v == markValue(span) {
		done := &DoneError{Key: l.key, Window: span}
		if err := l.c.b.release(ctx, l, 0); err != nil {
			return errors.Join(done, err)
		}
		return done
	}
	l.window = &span
	return nil
}

// marked reads the once-per marker of the lock key key: "" when none.
func (s *single) marked(ctx context.Context, key string) (string, error) {
	v, err := s.rdb.Get(ctx, windowKey(key)).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the once-per marker of %s: %w", key, err)
	}
	return v, nil
}

// doneWindow is the window a marker read by Status names, when it has not
// ended at now; nil otherwise.
func doneWindow(v string, now time.Time) *Span {
	if s, ok := parseMark(v); ok && now.Before(s.End) {
		return &s
	}
	return nil
}
