// Command with-lock runs a command only while it holds a Redis lock, so the
// same cron job started on several servers runs once at a time.
//
//	with-lock [flags] <name> <command> [args...]
//
// See with-lock --help, the man page with-lock(1) and the README.
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

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/config"
	"github.com/with-lock/with-lock/internal/supervise"
)

// forwarded are the signals with-lock passes on to the command's process
// group; it then waits for the command, releases the lock and exits as the
// command did.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

func main() {
	// go-redis logs dial failures on its own; we report each failure once,
	// in our words.
	redis.SetLogger(quietLogger{})
	os.Exit(run(os.Args[1:]))
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

func run(args []string) int {
	cfg, err := config.Parse(args, os.Getenv)
	switch {
	case errors.Is(err, config.ErrHelp):
		config.Usage(os.Stdout)
		return 0
	case err != nil:
		warn("%v (see with-lock --help)", err) // one line, as every error
		return exitUsage
	case cfg.Version:
		fmt.Println("with-lock", buildVersion()) // version.go
		return 0
	}
	r := &runner{cfg: cfg, sigs: make(chan os.Signal, 4)}
	return r.run()
}

// runner is one run of with-lock: acquire, run the command, release.
type runner struct {
	cfg    *config.Config
	locker *withlock.Client
	sigs   chan os.Signal
}

func (r *runner) run() int {
	if r.cfg.Status {
		return r.status() // status.go
	}
	path, err := supervise.Resolve(r.cfg.Command[0])
	if err != nil {
		return startFailed(err)
	}
	locker, closeRedis, err := newLocker(r.cfg)
	if err != nil {
		warn("%v", err)
		return exitConfig
	}
	defer closeRedis()
	r.locker = locker

	// From here on a signal must not leave the lock behind.
	signal.Notify(r.sigs, forwarded...)
	defer signal.Stop(r.sigs)

	lock, code := r.acquire()
	if lock == nil {
		return code
	}
	child, err := supervise.StartGuarded(path, r.cfg.Command, r.env(lock)) // guard.go
	if err != nil {
		r.release(lock)
		return startFailed(err)
	}
	return r.hold(child, lock) // renew.go: renew, stop the command on loss, release
}

// acquire takes the lock, or returns nil and the exit code to leave with.
func (r *runner) acquire() (*withlock.Lock, int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var lock *withlock.Lock
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		if r.cfg.Wait > 0 {
			wctx, wcancel := context.WithTimeout(ctx, r.cfg.Wait)
			defer wcancel()
			lock, err = r.locker.Acquire(wctx, r.cfg.Name, r.cfg.TTL, r.lockOptions())
			return
		}
		lock, err = r.locker.TryAcquire(ctx, r.cfg.Name, r.cfg.TTL, r.lockOptions())
	}()
	select {
	case <-done:
	case sig := <-r.sigs:
		cancel()
		<-done
		if lock != nil {
			r.release(lock)
		}
		warn("%v while acquiring %s; command not run", sig, r.locker.Key(r.cfg.Name))
		return nil, 128 + int(sig.(syscall.Signal))
	}
	var held *withlock.NotObtainedError
	switch {
	case err == nil:
		return lock, 0
	case errors.As(err, &held):
		if !r.cfg.Quiet && r.cfg.ConflictExit != 0 {
			warn("%v; command not run", err)
		}
		return nil, r.cfg.ConflictExit
	default:
		code := redisExit(err)
		warn("%v; command not run%s", err, hint(code, err))
		return nil, code
	}
}

// env is the command's environment: ours, without secrets and without
// another lock's WITH_LOCK_* (see config.CommandEnviron), plus what names
// its own lock.
func (r *runner) env(lock *withlock.Lock) []string {
	env := append(config.CommandEnviron(os.Environ()),
		config.EnvLockName+"="+lock.Name(),
		config.EnvLockKey+"="+lock.Key(),
		config.EnvLockToken+"="+lock.Token(),
	)
	if f := lock.Fence(); f > 0 {
		env = append(env, config.EnvLockFence+"="+strconv.FormatInt(f, 10))
	}
	return env
}

// release gives the lock up. Failing to is worth a warning but does not
// change the exit code: the command did run, and the key expires anyway.
func (r *runner) release(lock *withlock.Lock) {
	err := lock.Release(context.Background())
	switch {
	case err == nil:
	case errors.Is(err, withlock.ErrLockNotHeld):
		warn("lock %s was no longer ours at release (it expired or was taken over); left it alone", lock.Key())
	default:
		warn("%v; the lock will expire by itself", err)
	}
}

func startFailed(err error) int {
	var serr *supervise.StartError
	if errors.As(err, &serr) {
		warn("%v", serr)
		return serr.Code
	}
	warn("%v", err)
	return exitInternal
}

// warn prints one line on stderr in with-lock's name. A line break that
// comes from the input (a flag named "--a\nb") is shown escaped, so that
// every message stays one line, as cron mails and log scanners expect.
func warn(format string, args ...any) {
	msg := strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(fmt.Sprintf(format, args...))
	fmt.Fprintf(os.Stderr, "with-lock: %s\n", msg)
}
