package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/leftovers"
)

// Exit codes of --status.
const (
	exitStatusHeld = 0
	exitStatusFree = 1
)

// redisFailed reports an error from Redis on one line, in the words a run
// uses for it (inUserWords), and returns the exit code for it.
func (r *runner) redisFailed(err error) int {
	code := redisExit(err)
	return r.log.failed(code, "%s%s", r.inUserWords(err), r.hint(code, err))
}

// statusJSON is --status --json's output, one object on one line, and
// --list --json's, one per lock.
type statusJSON struct {
	Name     string     `json:"name,omitempty"` // --list only
	Key      string     `json:"key"`
	Held     bool       `json:"held"`
	Holder   string     `json:"holder,omitempty"` // "<host>:<pid>"
	Host     string     `json:"host,omitempty"`
	PID      int        `json:"pid,omitempty"`
	TTLMs    int64      `json:"ttl_ms"`             // remaining time; -1: no expiry
	Fence    int64      `json:"fence,omitempty"`    // last fencing number drawn
	Since    *time.Time `json:"since,omitempty"`    // when the holder got the lock, if known (withlock.Holder.Since)
	Finished bool       `json:"finished,omitempty"` // the holder's run ended; only --min-hold keeps the key
	LastRun  *runJSON   `json:"last_run,omitempty"`
	Slots    int        `json:"slots,omitempty"`   // a semaphore's number of slots
	Holders  []slotJSON `json:"holders,omitempty"` // a semaphore's holders, by slot

	LastSuccess *runJSON  `json:"last_success,omitempty"` // kept when later runs fail
	Done        *spanJSON `json:"done_window,omitempty"`  // the --once-per window already done

	// Leftovers: the holder's command has exited, and the lock is held
	// until the processes it left end (--leftovers wait).
	Leftovers *leftovers.Note `json:"leftovers,omitempty"`

	// EvictionPolicy: the server may evict the lock under memory pressure
	// (eviction.go); --status only, as --list does not ask.
	EvictionPolicy string `json:"eviction_policy,omitempty"`

	Paused *pauseJSON `json:"paused,omitempty"` // --pause's, until --resume or --for (pause.go)

	// SuccessDurations: how long the successes the history keeps took
	// (durations.go); --status only, as --list does not read histories.
	SuccessDurations *durationsJSON `json:"success_durations,omitempty"`
}

// spanJSON is a --once-per window.
type spanJSON struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// slotJSON is one holder of a semaphore.
type slotJSON struct {
	Slot   int        `json:"slot"`
	Holder string     `json:"holder"`
	Host   string     `json:"host,omitempty"`
	PID    int        `json:"pid,omitempty"`
	TTLMs  int64      `json:"ttl_ms"`
	Since  *time.Time `json:"since,omitempty"`
}

// runJSON is a last-run record.
type runJSON struct {
	Holder     string    `json:"holder"`
	Host       string    `json:"host"`
	PID        int       `json:"pid"`
	Started    time.Time `json:"started"`
	Finished   time.Time `json:"finished"`
	DurationMs int64     `json:"duration_ms"`
	ExitCode   int       `json:"exit_code"`
	Lost       bool      `json:"lost,omitempty"`
	Fence      int64     `json:"fence,omitempty"`
	Outcome    string    `json:"outcome,omitempty"`  // ok, failed, lost, timed-out
	Output     string    `json:"output,omitempty"`   // the end of what it printed: --record-output
	Tracking   string    `json:"tracking,omitempty"` // scope, cgroup, subreaper, reaper, process group
}

func newStatusJSON(st *withlock.Status) statusJSON {
	out := statusJSON{Key: st.Key, Held: st.Held, Holder: st.Holder.ID, TTLMs: st.Holder.TTL.Milliseconds(), Fence: st.Fence, Finished: st.KeptByMinHold}
	if st.Holder.TTL < 0 {
		out.TTLMs = -1
	}
	out.Host, out.PID = splitHolder(st.Holder.ID)
	if st.Held && !st.Holder.Since.IsZero() {
		out.Since = &st.Holder.Since
	}
	out.Slots = st.Slots
	for _, h := range st.Holders {
		s := slotJSON{Slot: h.Slot, Holder: h.ID, TTLMs: h.TTL.Milliseconds()}
		s.Host, s.PID = splitHolder(h.ID)
		if !h.Since.IsZero() {
			s.Since = &h.Since
		}
		out.Holders = append(out.Holders, s)
	}
	out.LastRun, out.LastSuccess = newRunJSON(st.LastRun), newRunJSON(st.LastSuccess)
	out.Leftovers, out.EvictionPolicy = leftovers.Of(st), st.EvictionPolicy
	out.Paused = newPauseJSON(st.Paused)
	if st.Done != nil {
		out.Done = &spanJSON{st.Done.Start, st.Done.End}
	}
	return out
}

// newRunJSON is run as JSON, nil for none.
func newRunJSON(run *withlock.Run) *runJSON {
	if run == nil {
		return nil
	}
	out := &runJSON{Holder: run.Holder, Started: run.Started, Finished: run.Finished,
		DurationMs: run.Finished.Sub(run.Started).Milliseconds(), ExitCode: run.ExitCode, Lost: run.Lost, Fence: run.Fence,
		Outcome: string(run.Outcome), Output: run.Output, Tracking: fieldsOf(run).Tracking}
	out.Host, out.PID = splitHolder(run.Holder)
	return out
}

// splitHolder splits "<host>:<pid>"; "unknown" gives nothing.
func splitHolder(holder string) (host string, pid int) {
	if i := strings.LastIndexByte(holder, ':'); i > 0 {
		host = holder[:i]
		pid, _ = strconv.Atoi(holder[i+1:])
	}
	return host, pid
}

// printJSON prints v on one line.
func printJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode as JSON: %w", err)
	}
	fmt.Println(string(b))
	return nil
}

// status prints who holds the lock, for how long, its fencing number and
// its last recorded run, and exits 0 when it is held, 1 when it is free.
func (r *connected) status() int {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.RedisTimeout) // the whole wait, as the message says
	defer cancel()
	st, err := r.locker.Status(ctx, r.cfg.Name)
	if err != nil {
		return r.redisFailed(err)
	}
	r.warnUnanswered("the status is", st) // unanswered.go
	usual := r.usualDurations(ctx)
	if r.cfg.JSON {
		out := newStatusJSON(st)
		out.SuccessDurations = newDurationsJSON(usual)
		if err := printJSON(out); err != nil {
			return r.log.failed(exitInternal, "%v", err)
		}
	} else {
		fmt.Println(describeStatus(st))
		if st.Done != nil {
			fmt.Printf("done for the window starting %s, until %s\n", utc(st.Done.Start), utc(st.Done.End))
		}
		for _, h := range st.Holders {
			fmt.Println(describeHolder(h, time.Now()))
		}
		if st.LastRun != nil {
			fmt.Println("last run: " + describeRun(st.LastRun, time.Now()))
			fmt.Print(indentedOutput(st.LastRun.Output, math.MaxInt)) // history.go
		}
		if st.LastSuccess != nil && (st.LastRun == nil || !reflect.DeepEqual(st.LastSuccess, st.LastRun)) {
			fmt.Println("last success: " + describeRun(st.LastSuccess, time.Now()))
		}
		if usual.n > 0 {
			fmt.Printf("usual duration: %s, of the last %s kept\n", usual, successes(usual.n))
		}
		if st.EvictionPolicy != "" {
			fmt.Println("warning: " + evictionWords(st.Key, st.EvictionPolicy))
		}
	}
	if st.Held {
		return exitStatusHeld
	}
	return exitStatusFree
}

// usualDurations is how long the successes of the name that its history
// keeps took. The status stands without it: a history that cannot be read
// is a warning.
func (r *connected) usualDurations(ctx context.Context) durationRange {
	runs, err := r.locker.History(ctx, r.cfg.Name, 0)
	if err != nil {
		r.log.warn("warning", fields{}, "the usual duration is not shown: %s", r.inUserWords(err))
		return durationRange{}
	}
	return successRange(runs, time.Time{}, nil)
}

// describeStatus is --status's first line: whether the lock st describes
// is held, by whom, for how long, and its fencing number.
func describeStatus(st *withlock.Status) string {
	var b strings.Builder
	switch {
	case st.Slots > 0:
		fmt.Fprintf(&b, "%s is a semaphore: %d of %d slots held", st.Key, len(st.Holders), st.Slots)
	case !st.Held && st.Paused != nil:
		fmt.Fprintf(&b, "%s is %s", st.Key, st.Paused.Describe(time.Now()))
	case !st.Held:
		fmt.Fprintf(&b, "%s is free", st.Key)
	case st.KeptByMinHold:
		fmt.Fprintf(&b, "%s: the run of %s has finished; --min-hold keeps the key, expires in %s",
			st.Key, st.Holder.ID, st.Holder.TTL.Round(time.Millisecond))
	case leftovers.Of(st) != nil:
		fmt.Fprintf(&b, "%s is held by %s: %s, expires in %s",
			st.Key, st.Holder.ID, leftoversText(leftovers.Of(st)), st.Holder.TTL.Round(time.Millisecond))
	case st.Holder.TTL < 0:
		fmt.Fprintf(&b, "%s is held by %s, with no expiry", st.Key, st.Holder.ID)
	default:
		fmt.Fprintf(&b, "%s is held by %s, expires in %s", st.Key, st.Holder.ID, st.Holder.TTL.Round(time.Millisecond))
	}
	if st.Fence > 0 {
		fmt.Fprintf(&b, ", fence %d", st.Fence)
	}
	if st.Held && st.Paused != nil {
		b.WriteString("; " + pendingPause(st.Paused)) // pause.go
	}
	return b.String()
}

// leftoversText says what a finished command left holding the lock:
// "the command exited 0 at 14:02:07; 2 processes of its job still run".
func leftoversText(l *leftovers.Note) string {
	return fmt.Sprintf("the command exited %d at %s; %d %s of its job still %s", l.ExitCode,
		l.Exited.Local().Format("15:04:05"), l.Processes, plural(l.Processes, "process", "processes"), plural(l.Processes, "runs", "run"))
}

// describeHolder describes one holder of a semaphore, as describeStatus a lock's.
func describeHolder(h withlock.Holder, now time.Time) string {
	text := fmt.Sprintf("slot %d: held by %s", h.Slot, h.ID)
	if s := since(h.Since, now); s != "" {
		text += " " + s
	}
	return text + fmt.Sprintf(", expires in %s", h.TTL.Round(time.Millisecond))
}

// describeRun describes a last run: where, when, how long and how it ended.
func describeRun(run *withlock.Run, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, finished %s (%s ago) after %s, %s", run.Holder,
		run.Finished.Local().Format("2006-01-02 15:04:05 MST"), roughly(now.Sub(run.Finished)),
		roughly(run.Finished.Sub(run.Started)), ending(run))
	if run.Fence > 0 {
		fmt.Fprintf(&b, ", fence %d", run.Fence)
	}
	return b.String()
}

// ending says how a run ended.
func ending(run *withlock.Run) string {
	switch {
	case run.Lost && run.ExitCode == exitLockLost:
		return fmt.Sprintf("exit %d (lock lost, command stopped)", exitLockLost)
	case run.Lost:
		return fmt.Sprintf("exit %d (lock lost, --on-lost ignore)", run.ExitCode)
	case run.ExitCode > 128 && unix.SignalName(syscall.Signal(run.ExitCode-128)) != "":
		// As a shell reports a command killed by a signal.
		return fmt.Sprintf("exit %d (128+%s)", run.ExitCode, unix.SignalName(syscall.Signal(run.ExitCode-128)))
	}
	return fmt.Sprintf("exit %d", run.ExitCode)
}

// roughly rounds d for a person: to the second, or the millisecond below
// ten seconds.
func roughly(d time.Duration) time.Duration {
	if d < 10*time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}
