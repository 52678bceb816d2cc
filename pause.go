package withlock

// Pausing a name everywhere (Client.Pause, Client.Resume): the pause is a
// value in the lock's own key, so that every acquisition's SET NX, which is
// sent anyway, collides with it and finds out; while a holder runs, it
// waits beside the key and its release puts it in.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/keys"
	"github.com/with-lock/with-lock/internal/pipeline"
)

// ErrPaused means the lock's name is paused (Client.Pause): nothing takes
// it until the pause ends. Errors that match it are *NotObtainedError (its Paused set) and also
// match ErrNotObtained, so that a caller that skips a busy run skips a
// paused one too; a waiting Acquire ends with it at once.
var ErrPaused = errors.New("lock is paused")

// Pause is a pause of a lock's name, as Client.Pause sets it and Status
// and NotObtainedError.Paused report it.
type Pause struct {
	By     string    // who paused it, "<host>:<user>"
	Since  time.Time // when it was paused
	Until  time.Time // when it ends by itself; zero: only Resume ends it
	Reason string    // why, as given; may be ""
	// Pending is true, in Status, while a holder that took the lock
	// before the pause still runs: the pause takes effect at its release.
	Pending bool
}

// pausedError is the error of an acquisition that found key paused: a
// *NotObtainedError whose Paused says by whom.
func pausedError(key string, p Pause) *NotObtainedError {
	return &NotObtainedError{Key: key, Paused: &p}
}

// Describe is p in words, as of now: "paused by host:user since 10:02:03
// (reason), until 11:02:03" or "..., until resumed".
func (p Pause) Describe(now time.Time) string {
	var b strings.Builder
	b.WriteString("paused by " + p.By + " since " + stamp(p.Since, now))
	if p.Reason != "" {
		b.WriteString(" (" + p.Reason + ")")
	}
	if p.Until.IsZero() {
		b.WriteString(", until resumed")
	} else {
		b.WriteString(", until " + stamp(p.Until, now))
	}
	return b.String()
}

// stamp is t as a clock time, with its date when not today.
func stamp(t, now time.Time) string {
	t = t.Local()
	if y, m, d := t.Date(); y == now.Local().Year() && m == now.Local().Month() && d == now.Local().Day() {
		return t.Format("15:04:05")
	}
	return t.Format("2006-01-02 15:04:05")
}

// pausePrefix starts a pause's value in a lock key: no token starts with
// it ('|' is in no host name) nor does a semaphore's marker.
const pausePrefix = "paused|"

// pauseValue is p stored: "paused|<by>|<since ms>|<until ms or 0>|<reason>".
func pauseValue(p Pause) string {
	until := int64(0)
	if !p.Until.IsZero() {
		until = p.Until.UnixMilli()
	}
	return pausePrefix + p.By + "|" + strconv.FormatInt(p.Since.UnixMilli(), 10) + "|" +
		strconv.FormatInt(until, 10) + "|" + p.Reason
}

// pauseOf reads a lock key's value v as a pause, false when it is none.
func pauseOf(v string) (Pause, bool) {
	rest, ok := strings.CutPrefix(v, pausePrefix)
	if !ok {
		return Pause{}, false
	}
	f := strings.SplitN(rest, "|", 4)
	if len(f) != 4 {
		return Pause{}, false
	}
	p := Pause{By: f[0], Reason: f[3]}
	if ms, err := strconv.ParseInt(f[1], 10, 64); err == nil && ms > 0 {
		p.Since = time.UnixMilli(ms)
	}
	if ms, err := strconv.ParseInt(f[2], 10, 64); err == nil && ms > 0 {
		p.Until = time.UnixMilli(ms)
	}
	return p, true
}

// Pause pauses the lock called name until Resume, or until p.Until when
// set: every acquisition of it, by any Client on the deployment, fails at
// once with a *NotObtainedError whose Paused is set (ErrPaused) and waits end. p.By and p.Since are
// filled in when empty. A holder that runs is not stopped: the pause takes
// effect when it releases, and Pause returns it (nil when the pause holds
// at once). It costs the acquisitions nothing: their SET NX collides with
// the pause's value in the key. One deployment only: a quorum or a
// semaphore's name is refused (errors.ErrUnsupported).
func (c *Client) Pause(ctx context.Context, name string, p Pause) (*Holder, error) {
	s, lockKeys, err := c.pauseTarget("pause", name)
	if err != nil {
		return nil, err
	}
	key := lockKeys[0]
	if p.Since.IsZero() {
		p.Since = time.Now()
	}
	if p.By == "" {
		p.By = pauser()
	}
	var ms int64
	if !p.Until.IsZero() {
		if ms = time.Until(p.Until).Milliseconds(); ms <= 0 {
			return nil, fmt.Errorf("pause %s: its end %s has passed", key, p.Until.Format(time.RFC3339))
		}
	}
	var script *redis.Cmd
	err = pipeline.Send(ctx, s.rdb, func(pipe redis.Pipeliner) { // a refused connection is the script's error too
		pipe.HSet(ctx, keys.Index(c.prefix), key, "") // List shows the paused name, as it shows a taken one (admin_index.go)
		script = pipe.Eval(ctx, pauseScript(), lockKeys,
			pauseValue(p), ms, pausePrefix, markerPrefix)
	})
	res, serr := script.Slice()
	if err == nil || serr != nil {
		err = serr
	}
	if err == nil && len(res) != 2 {
		err = fmt.Errorf("unexpected reply %v", res)
	}
	if err != nil {
		return nil, opError("pause", key, err)
	}
	n, _ := res[0].(int64)
	v, _ := res[1].(string)
	switch n {
	case 1:
		return nil, nil
	case -1:
		slots, _ := slotsOf(v)
		return nil, unsupported(fmt.Sprintf("pause %s: it is a semaphore's name (%d slots), which cannot be paused", key, slots))
	}
	h := notObtained(key, v, 0).Holder
	return &h, nil
}

// Resume ends the pause of the lock called name, set by Pause. It reports
// whether there was one.
func (c *Client) Resume(ctx context.Context, name string) (bool, error) {
	s, keys, err := c.pauseTarget("resume", name)
	if err != nil {
		return false, err
	}
	n, err := s.rdb.Eval(ctx, resumeScript(), keys, pausePrefix, aliveFor.Milliseconds()).Int64()
	if err != nil {
		return false, opError("resume", keys[0], err)
	}
	return n > 0, nil
}

// pauseTarget is, for op on the lock called name, the one deployment
// that keeps c's locks and the keys pauseScript and resumeScript are
// given: the lock key, its pause key, its waiting mark and its fair line.
func (c *Client) pauseTarget(op, name string) (*single, []string, error) {
	if name == "" {
		return nil, nil, ErrEmptyName
	}
	key := c.Key(name)
	s, err := c.pauser(op + " " + key)
	if err != nil {
		return nil, nil, err
	}
	pk, ok := keys.Pause(key)
	if !ok {
		return nil, nil, unsupported(fmt.Sprintf("%s %s: a key with '}' but no hash tag has no room for a pause beside it", op, key))
	}
	b, _ := keys.LineBase(key)
	return s, []string{key, pk, keys.Mark(key), b + ":q"}, nil
}

// pauser is the one deployment that keeps c's locks, or for op an error
// that matches errors.ErrUnsupported.
func (c *Client) pauser(op string) (*single, error) {
	if s, ok := c.b.(*single); ok {
		return s, nil
	}
	if _, ok := c.b.(slotted); ok {
		return nil, unsupported(op + ": a semaphore's name cannot be paused")
	}
	return nil, unsupported(op + ": only a lock on one Redis deployment can be paused, not a quorum's")
}

// pauser names who pauses: "<host>:<user>", the user from $USER or else
// the account running this process.
func pauser() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	name := os.Getenv("USER")
	if name == "" {
		if u, err := user.Current(); err == nil {
			name = u.Username
		}
	}
	return strings.ReplaceAll(host+":"+name, "|", "_") // '|' separates the value's fields
}
