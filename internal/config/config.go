// Package config turns with-lock's command line and environment into a
// Config, and a Config into Redis clients. Every setting is declared once,
// in settings.go, with its flag, default, help and WITH_LOCK_* variable.
package config

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/pflag"
)

// Defaults a user sees in --help and the man page.
const (
	DefaultRedisURL     = "redis://127.0.0.1:6379/0"
	DefaultRedisTimeout = 3 * time.Second
	DefaultPrefix       = "lock:"
	DefaultTTL          = 30 * time.Second
	DefaultConflictExit = 75 // EX_TEMPFAIL

	// DefaultKillAfter is how long a command may take to stop after
	// SIGTERM, once its lock is lost, before it gets SIGKILL.
	DefaultKillAfter = 5 * time.Second

	// MinTTL is the shortest --ttl with-lock accepts. Renewal extends the
	// lock every third of its TTL, and a round trip to Redis and the
	// scheduler's delays must fit well inside that third; below this a
	// healthy run loses its lock at once and is stopped with 125.
	MinTTL = 200 * time.Millisecond
)

// What --on-lost can say.
const (
	OnLostTerm   = "term"   // stop the command: SIGTERM, then SIGKILL
	OnLostIgnore = "ignore" // warn and let the command finish
)

// ErrUsage marks a bad command line or environment variable; the CLI
// exits 64 on it.
var ErrUsage = errors.New("usage error")

// ErrHelp means -h/--help was given: print Usage and exit 0.
var ErrHelp = pflag.ErrHelp

// Config is one run of with-lock. Its settings are declared, with their
// flags, defaults and variables, in settings.go.
type Config struct {
	Name    string   // the lock's name
	Command []string // the command and its arguments

	Connection  // which Redis, and how to reach it: connection.go
	Lock        // how the lock is taken
	Supervision // what happens to the command while it runs
	Output      // what with-lock prints, and whether it runs a command at all

	// Warnings are printed once by the CLI before it connects.
	Warnings []string

	sources map[string]source // where each setting came from, by flag name
}

// Lock is how the lock is taken.
type Lock struct {
	Prefix       string        // put before Name to make the key
	TTL          time.Duration // the lock's time to live
	Wait         time.Duration // 0: fail at once when busy
	ConflictExit int           // exit code when the lock is busy
	MinHold      time.Duration // keep the lock at least this long after acquiring it
	Fence        bool          // draw a fencing number: WITH_LOCK_FENCE
	MinReplicas  int           // WAIT for this many replicas after acquiring
}

// Supervision is what happens to the command while it runs.
type Supervision struct {
	NoRenew   bool          // the TTL is fixed, as in a plain SET NX EX
	OnLost    string        // OnLostTerm or OnLostIgnore
	KillAfter time.Duration // SIGKILL this long after SIGTERM on loss
}

// Output is what with-lock prints, and whether it runs a command at all.
type Output struct {
	Quiet     bool   // errors only: no busy message, no warnings
	Verbose   bool   // one line per event on stderr
	LogFormat string // LogText or LogJSON
	Status    bool   // --status <name>: print the lock's state, run nothing
	JSON      bool   // print --status as JSON
	Version   bool   // print the version, run nothing
}

// What --log-format can say.
const (
	LogText = "text" // lines for people: "with-lock: ..."
	LogJSON = "json" // one JSON object per line, for journald, Loki, ELK
)

// Parse reads args (without the program name) and the environment lookup
// getenv: a flag beats its variable, which beats the default. Flags stop
// at the lock's name. Errors wrap ErrUsage or are ErrHelp.
func Parse(args []string, getenv func(string) string) (*Config, error) {
	c := &Config{}
	fs := newFlagSet(c)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, ErrHelp
		}
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	// pflag reports ErrHelp only when no help flag is defined; ours is,
	// so that it shows in the usage.
	if help, _ := fs.GetBool("help"); help {
		return nil, ErrHelp
	}
	if c.Version {
		return c, nil
	}
	if err := c.applyEnv(fs, getenv); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	c.resolveConnection(getenv)
	rest := fs.Args()
	if c.Status {
		if len(rest) != 1 {
			return nil, fmt.Errorf("%w: --status takes one lock name and no command", ErrUsage)
		}
		c.Name = rest[0]
		return c.validated()
	}
	switch {
	case len(rest) == 0:
		return nil, fmt.Errorf("%w: missing lock name and command", ErrUsage)
	case len(rest) == 1:
		return nil, fmt.Errorf("%w: missing command to run under lock %q", ErrUsage, rest[0])
	}
	c.Name, c.Command = rest[0], rest[1:]
	if c.Command[0] == "--" { // "with-lock name -- cmd" reads as it would with flock
		c.Command = c.Command[1:]
		if len(c.Command) == 0 {
			return nil, fmt.Errorf("%w: missing command to run under lock %q", ErrUsage, c.Name)
		}
	}
	return c.validated()
}

// validated returns c, or its first contradiction or out-of-range value as
// a usage error.
func (c *Config) validated() (*Config, error) {
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	return c, nil
}

func (c *Config) validate() error {
	switch {
	case c.Name == "":
		return errors.New("lock name is empty")
	case strings.ContainsFunc(c.Name, unicode.IsControl):
		return fmt.Errorf("lock name %q contains control characters", c.Name)
	case !c.Status && c.Command[0] == "":
		return errors.New("command is empty")
	case c.JSON && !c.Status:
		return errors.New("--json goes with --status")
	case c.TTL < MinTTL:
		return fmt.Errorf("%s %s is below the minimum of %s", c.origin("ttl"), c.TTL, MinTTL)
	case c.RedisTimeout <= 0:
		return fmt.Errorf("%s %s must be positive", c.origin("redis-timeout"), c.RedisTimeout)
	case c.Wait < 0:
		return fmt.Errorf("%s %s is negative", c.origin("wait"), c.Wait)
	case c.ConflictExit < 0 || c.ConflictExit > 255:
		return fmt.Errorf("%s %d is outside 0-255", c.origin("conflict-exit-code"), c.ConflictExit)
	case c.MinHold < 0:
		return fmt.Errorf("%s %s is negative", c.origin("min-hold"), c.MinHold)
	case c.MinReplicas < 0:
		return fmt.Errorf("%s %d is negative", c.origin("min-replicas"), c.MinReplicas)
	case c.Fence && !c.Cluster && len(c.RedisURLs) > 1:
		// Counters on independent masters are not one sequence.
		return errors.New("--fence needs one Redis deployment, not a quorum of masters")
	case c.OnLost != OnLostTerm && c.OnLost != OnLostIgnore:
		return fmt.Errorf("%s %q: expected %s or %s", c.origin("on-lost"), c.OnLost, OnLostTerm, OnLostIgnore)
	case c.LogFormat != LogText && c.LogFormat != LogJSON:
		return fmt.Errorf("%s %q: expected %s or %s", c.origin("log-format"), c.LogFormat, LogText, LogJSON)
	case c.Quiet && c.Verbose:
		return fmt.Errorf("%s and %s contradict each other", c.origin("quiet"), c.origin("verbose"))
	case c.KillAfter < 0:
		return fmt.Errorf("%s %s is negative", c.origin("kill-after"), c.KillAfter)
	}
	return c.validateConnection()
}
