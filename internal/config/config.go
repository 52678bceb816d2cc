// Package config turns with-lock's command line and environment into a
// Config, and a Config into Redis clients. Every setting is declared once,
// in settings_<group>.go, with its flag, default, help and WITH_LOCK_* variable;
// validate.go checks what was parsed.
package config

import (
	"errors"
	"fmt"
	"time"

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
	// OnLostReacquire takes a lock whose key vanished (a Redis restart
	// without persistence, a failover to a replica without it) again, and
	// stops the command as term does only if that fails.
	OnLostReacquire = "reacquire"
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
	Monitoring  // what the monitoring learns of a run: monitoring.go
	Capture     // what is kept of the command's output: capture.go
	Stopping    // how the job is stopped: stopping.go
	Pausing     // --pause and --resume: pause.go

	// File is the config file: --config's, WITH_LOCK_CONFIG's, or
	// DefaultFile, which may be missing.
	File string

	// Warnings are printed once by the CLI before it connects.
	Warnings []string

	// Refused is, with --print-config, why the settings would be refused
	// (an error as Parse returns it): --print-config prints them all the
	// same, as they are what needs mending, and then says why.
	Refused error

	nonblock  bool              // -n: --wait's opposite
	fileRead  bool              // File existed and was read
	fileLines map[string]int    // the line of each key in File
	sources   map[string]source // where each setting came from, by flag name
}

// Lock is how the lock is taken.
type Lock struct {
	Prefix       string        // put before Name to make the key
	TTL          time.Duration // the lock's time to live
	Wait         time.Duration // 0: fail at once when busy
	Jitter       time.Duration // wait a random time up to this before the first try
	ConflictExit int           // exit code when the lock is busy
	MinHold      time.Duration // keep the lock at least this long after acquiring it
	Fence        bool          // draw a fencing number: WITH_LOCK_FENCE
	MinReplicas  int           // WAIT for this many replicas after acquiring
	Slots        int           // holders allowed at once; 1 is the plain lock
	Replace      bool          // stop the holder and run next (replace.go)
	LockDelay    time.Duration // wait this long after a lapsed lease (lockdelay.go)

	OncePer       time.Duration // 0, or run at most once per window of this length
	OncePerOffset time.Duration // shift of the --once-per windows
	DoneExit      int           // exit code when the window is already done
}

// Supervision is what happens to the command while it runs.
type Supervision struct {
	NoRenew   bool          // the TTL is fixed, as in a plain SET NX EX
	OnLost    string        // OnLostTerm, OnLostIgnore or OnLostReacquire
	KillAfter time.Duration // SIGKILL this long after SIGTERM on loss
	RecordTTL time.Duration // keep the last-run record this long
	NoRecord  bool          // store no last-run record
	Leftovers string        // LeftoversWait or LeftoversKill
	MaxRun    time.Duration // stop the job after this long; 0: no limit
	NoCgroup  bool          // no cgroup of the job's own: the subreaper alone
	Job                     // how the job is followed, and its limits: job.go

	HistorySize int // runs kept for --history; 0: none
}

// What --leftovers can say.
const (
	LeftoversWait = "wait" // hold the lock until the job's last process ends
	LeftoversKill = "kill" // stop what is left when the command exits
)

// Output is what with-lock prints, and whether it runs a command at all.
type Output struct {
	Quiet       bool   // errors only: no busy message, no warnings
	Verbose     bool   // one line per event on stderr
	LogFormat   string // LogText or LogJSON
	Status      bool   // --status <name>: print the lock's state, run nothing
	List        bool   // --list: print the locks held, run nothing
	All         bool   // --list --all: also names with only a last-run record
	Scan        bool   // --list --scan: SCAN, not the index of names
	Break       bool   // --break <name>: remove the lock, run nothing
	History     bool   // --history <name>: print the last runs, run nothing
	JSON        bool   // print --status, --list or --print-config as JSON
	Version     bool   // print the version, run nothing
	PrintConfig bool   // print the effective settings, run nothing
}

// What --log-format can say.
const (
	LogText = "text" // lines for people: "with-lock: ..."
	LogJSON = "json" // one JSON object per line, for journald, Loki, ELK
)

// Parse reads args (without the program name), the environment lookup
// getenv and the config file: a flag beats its variable, which beats the
// file, which beats the default. Flags stop at the lock's name. Errors are
// ErrHelp, or wrap ErrUsage (the command line or a variable) or ErrConfig
// (the config file).
func Parse(args []string, getenv func(string) string) (*Config, error) {
	c := &Config{}
	fs := newFlagSet(c)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, ErrHelp
		}
		return nil, fmt.Errorf("%w: %w", ErrUsage, unknownFlag(fs, err)) // suggest.go
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
	if err := c.applyFile(fs); err != nil {
		return nil, err
	}
	if err := c.resolveWait(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	c.resolveConnection(getenv)
	rest := fs.Args()
	if c.List || c.PrintConfig {
		if len(rest) != 0 {
			only := "--list"
			if c.PrintConfig {
				only = "--print-config"
			}
			return nil, fmt.Errorf("%w: %s takes no lock name or command", ErrUsage, only)
		}
		if c.PrintConfig {
			var bad *badValue
			if err := c.validateActions(); err != nil && !errors.As(err, &bad) {
				return c.validated() // flags that do not go with it: nothing to print
			}
			_, c.Refused = c.validated()
			return c, nil
		}
		return c.validated()
	}
	if c.Doctor { // --doctor [NAME]: the name is optional
		if len(rest) > 1 && IsFlag(rest[1]) {
			return nil, fmt.Errorf("%w: --doctor takes at most one lock name and no command, and flags go before the name: %s is after %q",
				ErrUsage, rest[1], rest[0])
		}
		if len(rest) > 1 {
			return nil, fmt.Errorf("%w: --doctor takes at most one lock name and no command", ErrUsage)
		}
		if len(rest) == 1 {
			c.Name = rest[0]
		}
		return c.validated()
	}
	if c.Check != "" { // --check NAME: the name is the flag's, so that its options may follow it
		if len(rest) != 0 {
			return nil, fmt.Errorf("%w: --check NAME takes no other name and no command", ErrUsage)
		}
		c.Name = c.Check
		return c.validated()
	}
	if action := c.action(); action != "" {
		if len(rest) > 1 && IsFlag(rest[1]) {
			// "--pause pz --for 30s": flags stop at the name.
			return nil, fmt.Errorf("%w: %s takes one lock name and no command, and flags go before the name: %s is after %q",
				ErrUsage, action, rest[1], rest[0])
		}
		if len(rest) != 1 {
			return nil, fmt.Errorf("%w: %s takes one lock name and no command", ErrUsage, action)
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

// resolveWait settles -n against --wait: both on the command line
// contradict each other; -n beats a --wait from a variable or the file.
func (c *Config) resolveWait() error {
	switch {
	case !c.nonblock:
	case c.source("wait") == fromFlag && c.Wait != 0:
		return fmt.Errorf("-n/--nonblock and --wait %s contradict each other: give one", c.Wait)
	default:
		c.Wait, c.sources["wait"] = 0, fromFlag
	}
	return nil
}
