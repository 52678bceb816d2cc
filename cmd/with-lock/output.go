package main

import (
	"bytes"
	"os"
	"time"

	"github.com/with-lock/with-lock/internal/capture"
	"github.com/with-lock/with-lock/internal/supervise"
)

// What the command prints, for --output-on-failure (held back, printed
// only if the run failed), --ping-output (its end sent with the end ping)
// and --record-output (its end in the run's record). The output is
// captured (internal/capture) only when one of them asks for it: without
// them the command writes to with-lock's stdout and stderr itself, and
// with-lock does nothing more at start-up than read three settings.

// outputGrace is how long, once the job has ended, with-lock still reads
// a pipe that a process outside the job holds open; the job's own
// processes are gone by then, and with them every writer with-lock waits
// for.
const outputGrace = 100 * time.Millisecond

// captureOutput gives the job pipes for its stdout and stderr when the
// settings ask for what it prints, and returns their capture; nil when
// there is none. At a terminal the command keeps it (a pipe would change
// how it prints, and someone is watching): only --output-on-failure given
// as a flag holds a terminal's output back. A file, a pipe, /dev/null
// (cron's ">/dev/null 2>&1") is no terminal: there the output is
// captured for the ping and the record, and held back by
// --output-on-failure from the environment or the config file.
// A capture that cannot be set up is a warning; the command then writes
// where it would have.
func (r *runner) captureOutput(job *supervise.Prepared) *capture.Capture {
	hold, tail := r.cfg.OutputOnFailure, 0
	if r.cfg.PingURL != "" {
		tail = r.cfg.PingOutput << 10
	}
	if !r.cfg.NoRecord {
		tail = max(tail, r.cfg.RecordOutput<<10)
	}
	if !hold && tail == 0 {
		return nil
	}
	if atTerminal() && (!hold || !r.cfg.OutputOnFailureIsAFlag()) {
		return nil
	}
	c, err := capture.Start(capture.Options{Hold: hold, Tail: tail})
	if err != nil {
		r.log.warn("warning", fields{}, "cannot capture the command's output: %v; it goes out as it comes", err)
		return nil
	}
	job.Output(c.Files())
	return c
}

// atTerminal reports whether with-lock's stdout or stderr is a terminal:
// capturing takes both from the command, so either is reason enough to
// leave them.
func atTerminal() bool { return isTerminal(os.Stdout) || isTerminal(os.Stderr) }

// outputStarted follows the command's start: only the command holds its
// ends of the pipes now. A command that did not start printed nothing.
func (r *runner) outputStarted(started bool) {
	if r.out == nil {
		return
	}
	r.out.Started()
	if !started {
		r.out.Stop(0)
		r.out.Close()
		r.out = nil
	}
}

// endOutput waits, once the job has ended, for the end of its output.
func (r *runner) endOutput() {
	if r.out != nil {
		r.out.Stop(outputGrace)
	}
}

// heldLog is the logger for what with-lock says about the job's end
// itself, that a success under --output-on-failure keeps quiet as it
// keeps the output: "holding lock:x until its 2 remaining processes end"
// would otherwise be cron's mail of a run that went well. With the output
// held back, the message is written (with its time) for printHeldOutput;
// otherwise it goes out at once.
func (r *runner) heldLog() *logger {
	if r.out == nil || !r.out.Held() {
		return r.log
	}
	l := *r.log
	l.w = &r.heldSaid
	return &l
}

// printHeldOutput prints the output held back by --output-on-failure when
// the run did not succeed (its outcome), after what heldLog kept of
// with-lock's own messages, and lets it go.
func (r *runner) printHeldOutput(outcome string) {
	if r.out == nil {
		return
	}
	defer r.out.Close()
	if !r.out.Held() || outcome == outcomeOK {
		return
	}
	_, _ = r.heldSaid.WriteTo(r.log.w)
	if err := r.out.PrintHeld(); err != nil {
		r.log.warn("warning", fields{}, "print the command's output: %v", err)
	}
}

// recordOutput is the end of the output for the run's record: its last
// --record-output KiB, from the start of a line when it was cut.
func (r *runner) recordOutput() string {
	if r.out == nil || r.cfg.RecordOutput == 0 {
		return ""
	}
	n := r.cfg.RecordOutput << 10
	tail := r.out.Tail(n)
	if r.out.Written() > int64(len(tail)) {
		if i := bytes.IndexByte(tail, '\n'); i >= 0 && i < len(tail)-1 {
			tail = tail[i+1:]
		}
	}
	return string(tail)
}

// pingOutput is the end of the output for the end ping's body, its last
// --ping-output KiB byte for byte, and whether there is one: not when
// nothing was captured (a terminal, or --ping-output 0).
func (r *runner) pingOutput() (string, bool) {
	if r.out == nil || r.cfg.PingOutput == 0 {
		return "", false
	}
	return string(r.out.Tail(r.cfg.PingOutput << 10)), true
}
