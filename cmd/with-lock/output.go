package main

import (
	"bytes"
	"os"
	"time"

	"github.com/with-lock/with-lock/internal/capture"
	"github.com/with-lock/with-lock/internal/config"
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

// output is the command's output as a run captures it. A nil *output is
// a run that captures none: the command wrote where with-lock writes, and
// every method says there is nothing.
type output struct {
	c   *capture.Capture
	cfg *config.Config
	log *logger
	// heldSaid is what with-lock said that --output-on-failure holds
	// back with the output (heldLog).
	heldSaid bytes.Buffer
}

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
func (r *runner) captureOutput(job *supervise.Prepared) *output {
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
	return &output{c: c, cfg: r.cfg, log: r.log}
}

// atTerminal reports whether with-lock's stdout or stderr is a terminal:
// capturing takes both from the command, so either is reason enough to
// leave them.
func atTerminal() bool { return isTerminal(os.Stdout) || isTerminal(os.Stderr) }

// started follows the command's start: only the command holds its ends of
// the pipes now. A command that did not start printed nothing: its
// capture is let go, and started returns nil.
func (o *output) started(ok bool) *output {
	if o == nil {
		return nil
	}
	o.c.Started()
	if !ok {
		o.c.Stop(0)
		o.c.Close()
		return nil
	}
	return o
}

// end waits, once the job has ended, for the end of its output, and
// returns what of it the run's record keeps (forRecord).
func (o *output) end() string {
	if o == nil {
		return ""
	}
	o.c.Stop(outputGrace)
	return o.forRecord()
}

// heldLog is the logger for what with-lock says about the job's end
// itself, that a success under --output-on-failure keeps quiet as it
// keeps the output: "holding lock:x until its 2 remaining processes end"
// would otherwise be cron's mail of a run that went well. With the output
// held back, the message is written (with its time) for printHeld;
// otherwise it goes out at once (log).
func (o *output) heldLog(log *logger) *logger {
	if o == nil || !o.c.Held() {
		return log
	}
	l := *log
	l.w = &o.heldSaid
	return &l
}

// printHeld prints the output held back by --output-on-failure when the
// run did not succeed (its outcome), after what heldLog kept of
// with-lock's own messages, and lets it go.
func (o *output) printHeld(outcome string) {
	if o == nil {
		return
	}
	defer o.c.Close()
	if !o.c.Held() || outcome == outcomeOK {
		return
	}
	_, _ = o.heldSaid.WriteTo(o.log.w)
	if err := o.c.PrintHeld(); err != nil {
		o.log.warn("warning", fields{}, "print the command's output: %v", err)
	}
}

// forRecord is the end of the output for the run's record: its last
// --record-output KiB, from the start of a line when it was cut.
func (o *output) forRecord() string {
	if o == nil || o.cfg.NoRecord || o.cfg.RecordOutput == 0 {
		return ""
	}
	n := o.cfg.RecordOutput << 10
	tail := o.c.Tail(n)
	if o.c.Written() > int64(len(tail)) {
		if i := bytes.IndexByte(tail, '\n'); i >= 0 && i < len(tail)-1 {
			tail = tail[i+1:]
		}
	}
	return string(tail)
}

// forPing is the end of the output for the end ping's body, its last
// --ping-output KiB byte for byte, and whether there is one: not when
// nothing was captured (a terminal, or --ping-output 0).
func (o *output) forPing() (string, bool) {
	if o == nil || o.cfg.PingOutput == 0 {
		return "", false
	}
	return string(o.c.Tail(o.cfg.PingOutput << 10)), true
}
