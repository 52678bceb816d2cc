package config

import (
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Stopping is how the job is stopped: the signal with-lock sends when it
// decides to stop the job itself, and how long a job told to stop by a
// signal with-lock forwarded may take before it is killed.
type Stopping struct {
	// StopTimeout is how long after forwarding SIGTERM, SIGINT or SIGHUP
	// the whole job gets SIGKILL; 0: never, with-lock waits for it.
	StopTimeout time.Duration
	// StopSignal names the signal sent on --max-run, a lost lock and
	// --leftovers kill: "TERM", "INT", "USR1"...
	StopSignal string
}

// DefaultStopSignal is what most programs stop on.
const DefaultStopSignal = "TERM"

// stopSignals are the signals --stop-signal may name: those a program
// may take as "stop", and KILL; not those that pause, resume or only
// inform it (STOP, CONT, CHLD, WINCH...).
var stopSignals = []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGALRM, syscall.SIGKILL}

// stopSignalNames are stopSignals' names without SIG, as --stop-signal
// is most often written.
func stopSignalNames() []string {
	names := make([]string, len(stopSignals))
	for i, sig := range stopSignals {
		names[i] = strings.TrimPrefix(unix.SignalName(sig), "SIG")
	}
	return names
}

// StopWith is the signal StopSignal names; call it once the Config is
// valid.
func (s *Stopping) StopWith() syscall.Signal {
	sig, _ := stopSignal(s.StopSignal)
	return sig
}

// stopSignal reads a --stop-signal: a name, with or without SIG, in any
// case, or its number.
func stopSignal(name string) (syscall.Signal, bool) {
	sig := unix.SignalNum("SIG" + strings.TrimPrefix(strings.ToUpper(name), "SIG"))
	if n, err := strconv.Atoi(name); err == nil {
		sig = syscall.Signal(n)
	}
	return sig, sig != 0 && slices.Contains(stopSignals, sig)
}

// validateStopping checks --stop-timeout and --stop-signal.
func (c *Config) validateStopping() error {
	if c.StopTimeout < 0 {
		return c.bad("stop-timeout", "%s is negative", c.StopTimeout)
	}
	if _, ok := stopSignal(c.StopSignal); !ok {
		return c.bad("stop-signal", "%q: expected one of HUP, INT, QUIT, TERM, USR1, USR2, ALRM or KILL", c.StopSignal)
	}
	return nil
}
