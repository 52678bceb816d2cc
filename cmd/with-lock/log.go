package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/with-lock/with-lock/internal/config"
	"golang.org/x/sys/unix"
)

// logger is what with-lock says on stderr: messages, as text for people or,
// with --log-format json, one JSON object each for journald, Loki or ELK.
// Errors are always said; warnings unless -q; events (acquired, waiting,
// slow renewals, lost, released, exited) only with -v, so that a run that
// succeeds stays silent. It is derived from the configuration alone and
// holds no state of the run.
type logger struct {
	w         io.Writer
	json      bool
	verbose   bool
	quiet     bool
	lock, key string // the run's lock; "" before the command line is read
	now       func() time.Time
}

func newLogger(cfg *config.Config, w io.Writer) *logger {
	l := &logger{w: w, json: cfg.LogFormat == config.LogJSON, verbose: cfg.Verbose, quiet: cfg.Quiet, now: time.Now}
	if cfg.Name != "" {
		l.lock, l.key = cfg.Name, cfg.Prefix+cfg.Name
	}
	return l
}

// earlyLogger is the logger for an error in the command line, the
// environment or the config file, before there is a Config: in the format
// that any of them asks for, as far as it can be read
// (config.EarlyLogFormat), so that a log shipper that asked for JSON gets
// JSON.
func earlyLogger(args []string, w io.Writer) *logger {
	return &logger{w: w, json: config.EarlyLogFormat(args, os.Getenv) == config.LogJSON, now: time.Now}
}

// Levels of a message.
const (
	levelInfo  = "info"  // an event, shown with -v
	levelWarn  = "warn"  // a warning, hidden by -q
	levelError = "error" // always shown
)

// entry is one message as JSON. The field names are stable: scripts and log
// pipelines rely on them (docs/logs.md). Fields that do not apply to an
// event are left out.
type entry struct {
	Time   string `json:"time"`  // RFC 3339 with milliseconds
	Level  string `json:"level"` // info, warn, error
	Event  string `json:"event"` // what happened, see the events in log.go's callers
	Lock   string `json:"lock,omitempty"`
	Key    string `json:"key,omitempty"`
	Msg    string `json:"msg"` // the message, as text shows it
	fields        // what the event is about
}

// fields are what an event says beyond its message.
type fields struct {
	Holder     string `json:"holder,omitempty"` // another owner's host:pid
	Since      string `json:"since,omitempty"`  // since when Holder holds the lock (RFC 3339)
	Fence      int64  `json:"fence,omitempty"`
	DurationMs *int64 `json:"duration_ms,omitempty"` // how long the event took or lasted
	TTLMs      int64  `json:"ttl_ms,omitempty"`
	Code       *int   `json:"code,omitempty"`   // the command's exit code; with-lock's on an error
	Signal     string `json:"signal,omitempty"` // the signal that ended the command
	Error      string `json:"error,omitempty"`  // the cause of a failed renewal
	// Tracking is what follows the job's processes: "cgroup DIR", "subreaper"
	// (Linux), "reaper" (FreeBSD) or "process group".
	Tracking string `json:"tracking,omitempty"`
	// CPUMs and MaxRSSKB are what the job cost: CPU time (user+system) and
	// the largest resident set of one of its processes.
	CPUMs    *int64 `json:"cpu_ms,omitempty"`
	MaxRSSKB int64  `json:"max_rss_kb,omitempty"`
}

// ms is d in whole milliseconds, for fields.DurationMs.
func ms(d time.Duration) *int64 {
	v := d.Milliseconds()
	return &v
}

// timeFormat is RFC 3339 with milliseconds.
const timeFormat = "2006-01-02T15:04:05.000Z07:00"

// info reports an event, with -v only.
func (l *logger) info(event string, f fields, format string, args ...any) {
	l.event(levelInfo, event, f, format, args...)
}

// event reports an event at level, with -v only: a slow or failed renewal
// is a warning worth seeing while debugging, but not in every cron mail.
func (l *logger) event(level, event string, f fields, format string, args ...any) {
	if l.verbose {
		l.print(level, event, f, format, args...)
	}
}

// warn reports something that went wrong without failing the run, unless
// -q.
func (l *logger) warn(event string, f fields, format string, args ...any) {
	if !l.quiet {
		l.print(levelWarn, event, f, format, args...)
	}
}

// error reports why with-lock fails, or a lost lock: always.
func (l *logger) error(event string, f fields, format string, args ...any) {
	l.print(levelError, event, f, format, args...)
}

// failed reports why with-lock exits with code, always, as an "error"
// event whose code field is that exit code, and returns code.
func (l *logger) failed(code int, format string, args ...any) int {
	l.print(levelError, "error", fields{Code: &code}, format, args...)
	return code
}

// print writes one message, on one line: a line break that comes from the
// input (a flag named "--a\nb") is shown escaped, as cron mails and log
// scanners expect a message per line. As text a message is
// "with-lock: <message>", with the time after the colon under -v.
func (l *logger) print(level, event string, f fields, format string, args ...any) {
	msg := strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(fmt.Sprintf(format, args...))
	now := l.now()
	if !l.json {
		if l.verbose {
			fmt.Fprintf(l.w, "with-lock: %s %s\n", now.Format(timeFormat), msg)
		} else {
			fmt.Fprintf(l.w, "with-lock: %s\n", msg)
		}
		return
	}
	b, err := json.Marshal(entry{Time: now.Format(timeFormat), Level: level, Event: event,
		Lock: l.lock, Key: l.key, Msg: msg, fields: f})
	if err != nil { // cannot happen: every field is a string or a number
		fmt.Fprintf(l.w, "with-lock: %s\n", msg)
		return
	}
	fmt.Fprintf(l.w, "%s\n", b)
}

// round shortens d for a message: milliseconds under a minute, seconds
// above.
func round(d time.Duration) time.Duration {
	if d >= time.Minute {
		return d.Round(time.Second)
	}
	return d.Round(time.Millisecond)
}

// signalName is "SIGTERM" for syscall.SIGTERM.
func signalName(sig os.Signal) string {
	if s, ok := sig.(syscall.Signal); ok && unix.SignalName(s) != "" {
		return unix.SignalName(s)
	}
	return sig.String()
}

// since says when a holder took the lock, for a person: "since 14:02:07
// (12m ago)", or "(just now)" within the second, with the date when it was
// not today; "" when unknown.
func since(t, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	if d := now.Sub(t); d < time.Second {
		return fmt.Sprintf("since %s (just now)", clock(t, now))
	}
	return fmt.Sprintf("since %s (%s ago)", clock(t, now), ago(now.Sub(t)))
}

// clock is t's time of day for a person, with the date when it is not
// now's day.
func clock(t, now time.Time) string {
	layout := "15:04:05"
	if y, m, d := t.Date(); y != now.Year() || m != now.Month() || d != now.Day() {
		layout = "2006-01-02 15:04:05"
	}
	return t.Format(layout)
}

// ago rounds d for a person: 42s, 12m, 3h12m.
func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return max(d, 0).Round(time.Second).String()
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	default:
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
}

// rfc3339 formats t for a JSON field; "" when unknown.
func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(timeFormat)
}
