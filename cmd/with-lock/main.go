// with-lock's own goroutines are few and light, and the command is a
// process of its own with its own runtime: so the runtime need not poll
// the cgroup's CPU limit to update GOMAXPROCS (a goroutine and a timer at
// every start-up), nor name its memory mappings (a system call each).
//
//go:debug updatemaxprocs=0
//go:debug decoratemappings=0

// Command with-lock runs a command only while it holds a Redis lock, so the
// same cron job started on several servers runs once at a time.
//
//	with-lock [flags] <name> <command> [args...]
//
// See with-lock --help, the man page with-lock(1), the README and docs/.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/capture"
	"github.com/with-lock/with-lock/internal/config"
	"github.com/with-lock/with-lock/internal/supervise"
)

// forwarded are the signals with-lock passes on to the command's process
// group; it then waits for the command, releases the lock and exits as the
// command did.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

func main() {
	if supervise.IsGuard() { // with-lock run as its own job's guard: guard_self.go
		supervise.RunGuard()
	}
	// go-redis logs dial failures on its own; we report each failure once,
	// in our words.
	redis.SetLogger(quietLogger{})
	os.Exit(run(os.Args[1:]))
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

func run(args []string) int {
	// A run must not leave the lock behind when a signal comes, from its
	// acquire on. Asking for signals costs the runtime a thread and a
	// hand-off with it per signal, so it is begun first, beside the
	// parsing and the set-up, and waited for only before the acquire
	// (runner.run); --status and the other admin paths give the signals
	// back their default (runner.defaultSignals).
	sigs, notified := make(chan os.Signal, 4), make(chan struct{})
	go func() {
		signal.Notify(sigs, forwarded...)
		close(notified)
	}()
	cfg, err := config.Parse(args, os.Getenv)
	switch {
	case errors.Is(err, config.ErrHelp):
		config.Usage(os.Stdout)
		return 0
	case errors.Is(err, config.ErrConfig): // the config file
		return earlyLogger(args, os.Stderr).failed(exitConfig, "%v", err)
	case err != nil:
		// One line, as every error.
		return earlyLogger(args, os.Stderr).failed(exitUsage, "%v (see with-lock --help)", err)
	case cfg.Version:
		fmt.Println("with-lock", buildVersion())
		return 0
	case cfg.PrintConfig:
		return printConfig(os.Stdout, cfg, newLogger(cfg, os.Stderr)) // printconfig.go
	}
	r := &runner{cfg: cfg, sigs: sigs, notified: notified, log: newLogger(cfg, os.Stderr)}
	code := r.monitored(r.run)      // monitor.go: --metrics-dir and --ping learn how it ended
	return r.exitAsTheCommand(code) // signalexit.go
}

// runner is one run of with-lock: acquire, run the command, release; or
// --status.
type runner struct {
	cfg    *config.Config
	locker *withlock.Client
	sigs   chan os.Signal
	// notified is closed once sigs gets the forwarded signals (see run).
	notified chan struct{}
	log      *logger // what with-lock says on stderr: log.go
	// acquiredAt is when the lock was obtained.
	acquiredAt time.Time
	mon        monitor // what the monitoring learns of the run: monitor.go
	// timedOut is set when --max-run stopped the job: jobstop.go.
	timedOut bool
	// usage is what the job's processes cost, once it has ended.
	usage supervise.Usage
	// out is the command's output, when captured: output.go.
	out *capture.Capture
	// tracking is what followed the job, in one word (Child.TrackingMode).
	tracking string
	// onceWindow is --once-per's window of this run, from Lock.OncePer: its
	// record (Run.Window) marks it done when the run succeeds.
	onceWindow *withlock.Span
	// forwarded is the last signal passed on to the command (signalexit.go).
	forwarded syscall.Signal
}

func (r *runner) run() int {
	if r.cfg.RedisIsDefault() {
		// Someone at a terminal asks who holds a lock that no other host
		// can see, or debugs a run with -v; a script or cron job gets its
		// answer alone.
		if r.cfg.Status && isTerminal(os.Stderr) {
			r.log.print(levelWarn, "warning", fields{}, "note: %s", config.LocalOnlyWarning)
		} else {
			r.log.event(levelWarn, "warning", fields{}, "note: %s", config.LocalOnlyWarning)
		}
	}
	if code, ok := r.admin(); ok { // status.go: --status, --list, --break
		return code
	}
	// The job's guard, subreaper and cgroup are made while the command is
	// looked up and the lock taken; a run that does not start the command
	// undoes them.
	job := supervise.Prepare(r.jobOptions(), true)
	defer job.Discard()
	path, err := supervise.Resolve(r.cfg.Command[0])
	if err != nil {
		return r.startFailed(err)
	}
	// The connections are left for the exit to close: every reply the run
	// needs has arrived by then, and closing go-redis's pools costs a
	// short job a tenth of with-lock's start-up-to-exit time.
	locker, _, err := newLocker(r.cfg)
	if err != nil {
		return r.log.failed(exitConfig, "%v", err)
	}
	r.locker = locker
	<-r.notified                     // from here on a signal must not leave the lock behind
	if code, ok := r.jitter(); !ok { // jitter.go: --jitter's random delay
		return code
	}
	lock, code := r.acquire() // acquire.go
	if lock == nil {
		return code
	}
	if code, skip := r.oncePer(lock); skip { // onceper.go: --once-per's window already done
		return code
	}
	r.captureOutput(job) // output.go: what the command prints, when asked for
	child, err := job.Start(path, r.cfg.Command, r.env(lock))
	r.outputStarted(err == nil)
	if err != nil {
		r.release(lock)
		return r.startFailed(err)
	}
	// ping.go: --ping's start, sent beside the command
	r.pingStart()
	return r.hold(child, lock) // hold.go: renew, stop the command on loss, release
}

// jobOptions are how the job is followed (--tracking) and limited.
func (r *runner) jobOptions() supervise.Options {
	return supervise.Options{Tracking: r.cfg.Tracking, Name: r.cfg.Name,
		Description: "with-lock " + r.cfg.Name + ": " + strings.Join(r.cfg.Command, " "),
		Limits:      supervise.Limits{MemoryMax: r.cfg.MemoryMaxBytes, CPUQuotaPercent: r.cfg.CPUQuotaPercent}}
}

// env is the command's environment: ours, without secrets and without
// another lock's WITH_LOCK_* (see config.CommandEnviron), plus what names
// its own lock.
func (r *runner) env(lock *withlock.Lock) []string {
	env := append(config.CommandEnviron(os.Environ()),
		config.EnvLockName+"="+r.cfg.Name,
		config.EnvLockKey+"="+lock.Key(),
		config.EnvLockToken+"="+lock.Token(),
	)
	if f := lock.Fence(); f > 0 {
		env = append(env, config.EnvLockFence+"="+strconv.FormatInt(f, 10))
	}
	if s := lock.Slot(); s > 0 {
		env = append(env, config.EnvLockSlot+"="+strconv.Itoa(s))
	}
	return env
}

// defaultSignals gives the forwarded signals back their default action,
// for a path that runs no command: Ctrl-C stops --status at once.
// One that came meanwhile is raised again, to the same effect.
func (r *runner) defaultSignals() {
	<-r.notified
	signal.Stop(r.sigs)
	for {
		select {
		case sig := <-r.sigs:
			_ = syscall.Kill(os.Getpid(), sig.(syscall.Signal))
		default:
			return
		}
	}
}

// isTerminal reports whether f is a terminal (a character device).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
