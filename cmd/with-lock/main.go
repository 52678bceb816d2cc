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
	"syscall"

	"github.com/redis/go-redis/v9"
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
	// (runner.run); --status and the other actions give the signals back
	// their default (runner.defaultSignals).
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
	}
	log := newLogger(cfg, os.Stderr)
	// A mistyped variable would be ignored without a word: one line each,
	// before anything else is said (-q hides them, as other warnings).
	for _, w := range config.UnknownVariables(os.Environ()) {
		log.warn("warning", fields{}, "warning: %s", w)
	}
	if cfg.PrintConfig {
		code := printConfig(os.Stdout, cfg, log) // printconfig.go
		switch {
		case code != 0 || cfg.Refused == nil:
			return code
		case errors.Is(cfg.Refused, config.ErrConfig):
			return log.failed(exitConfig, "%v", cfg.Refused)
		}
		return log.failed(exitUsage, "%v (see with-lock --help)", cfg.Refused)
	}
	r := &runner{cfg: cfg, sigs: sigs, notified: notified, log: log}
	r.warnLocalOnly()
	if code, ok := r.admin(); ok { // --status, --list, --break, ...: no command
		return code
	}
	return r.finish(r.run()) // run.go: acquire, run the command; finish.go: release, report, exit
}

// runner is one invocation of with-lock: a run of the command under the
// lock (run.go), or an action that replaces it (--status, --list, ...).
// It holds what every step has from the start; what a step makes (the
// Client, the lock, the output's capture, the job, the pinger) it hands
// to the steps after it.
type runner struct {
	cfg  *config.Config
	sigs chan os.Signal
	// notified is closed once sigs gets the forwarded signals (see run).
	notified chan struct{}
	log      *logger // what with-lock says on stderr: log.go
}

// warnLocalOnly notes that the Redis is the default, local one, which no
// other host can see. Someone at a terminal asking who holds a lock is
// told; a script, a cron job or a run is told with -v only.
func (r *runner) warnLocalOnly() {
	if !r.cfg.RedisIsDefault() {
		return
	}
	if r.cfg.Status && isTerminal(os.Stderr) {
		r.log.print(levelWarn, "warning", fields{}, "note: %s", config.LocalOnlyWarning)
	} else {
		r.log.event(levelWarn, "warning", fields{}, "note: %s", config.LocalOnlyWarning)
	}
}

// admin runs the action that replaces a command (--status, --list,
// --break, --history, --pause, --resume, --check), if one was asked for.
func (r *runner) admin() (code int, ok bool) {
	var action func(*connected) int
	switch {
	case r.cfg.Doctor:
		r.defaultSignals()
		return r.doctor(), true // doctor.go: the deployment's fitness, in --check's exit codes
	case r.cfg.Check != "":
		r.defaultSignals()
		return r.check(), true // check.go: its own connection, and the plugin's exit codes
	case r.cfg.Status:
		action = (*connected).status // status.go
	case r.cfg.List:
		action = (*connected).list // list.go
	case r.cfg.Break:
		action = (*connected).breakLock // break.go
	case r.cfg.History:
		action = (*connected).history // history.go
	case r.cfg.Pause:
		action = (*connected).pause // pause.go
	case r.cfg.Resume:
		action = (*connected).resume // pause.go
	default:
		return 0, false
	}
	r.defaultSignals()
	c, closeRedis, err := r.connect() // the same deployment the lock is taken on
	if err != nil {
		return r.log.failed(exitConfig, "%v", err), true
	}
	defer closeRedis()
	return action(c), true
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
