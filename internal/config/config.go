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

// validated returns c, or its first contradiction or out-of-range value:
// a config error when the value came from the config file, else a usage
// error.
func (c *Config) validated() (*Config, error) {
	if err := c.validate(); err != nil {
		var bad *badValue
		if errors.As(err, &bad) && c.source(bad.name) == fromFile {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	return c, nil
}

// badValue is a setting's value out of its range; its message names the
// setting as the user gave it (see origin).
type badValue struct{ name, msg string }

func (e *badValue) Error() string { return e.msg }

// bad returns a badValue for the setting name: its origin, then
// format's text.
func (c *Config) bad(name, format string, args ...any) error {
	return &badValue{name, c.origin(name) + " " + fmt.Sprintf(format, args...)}
}

func (c *Config) validate() error {
	if err := c.validateActions(); err != nil {
		return err
	}
	if !c.PrintConfig && !c.List && !(c.Doctor && c.Name == "") {
		if err := c.validateRun(); err != nil {
			return err
		}
	}
	switch {
	case c.Prefix == "":
		// The library would put DefaultPrefix in its place: refuse what
		// cannot mean what it says.
		return c.bad("prefix", "is empty: a lock's key needs a prefix (the default is %s)", DefaultPrefix)
	case c.TTL < MinTTL:
		return c.bad("ttl", "%s is below the minimum of %s", c.TTL, MinTTL)
	case c.RedisTimeout <= 0:
		return c.bad("redis-timeout", "%s must be positive", c.RedisTimeout)
	case c.Wait < 0:
		return c.bad("wait", "%s is negative", c.Wait)
	case c.Jitter < 0:
		return c.bad("jitter", "%s is negative", c.Jitter)
	case c.ConflictExit < 0 || c.ConflictExit > 255:
		return c.bad("conflict-exit-code", "%d is outside 0-255", c.ConflictExit)
	case c.MinHold < 0:
		return c.bad("min-hold", "%s is negative", c.MinHold)
	case c.Slots < 1 || c.Slots > MaxSlots:
		return c.bad("slots", "%d is outside 1-%d", c.Slots, MaxSlots)
	case c.Slots > 1 && c.Topology() == Quorum:
		// A line and a set of slots need one authority; a quorum has none.
		return errors.New("--slots needs one Redis deployment, not a quorum of masters")
	case c.Slots > 1 && c.MinReplicas > 0:
		return errors.New("--slots and --min-replicas do not go together: a semaphore does not wait for replicas")
	case c.MinReplicas < 0:
		return c.bad("min-replicas", "%d is negative", c.MinReplicas)
	case c.Fence && c.Topology() == Quorum:
		// Counters on independent masters are not one sequence.
		return errors.New("--fence needs one Redis deployment, not a quorum of masters")
	case c.OnLost != OnLostTerm && c.OnLost != OnLostIgnore && c.OnLost != OnLostReacquire:
		return c.bad("on-lost", "%q: expected %s, %s or %s", c.OnLost, OnLostTerm, OnLostIgnore, OnLostReacquire)
	case c.OnLost == OnLostReacquire:
		if err := c.validateReacquire(); err != nil {
			return err
		}
	case c.LogFormat != LogText && c.LogFormat != LogJSON:
		return c.bad("log-format", "%q: expected %s or %s", c.LogFormat, LogText, LogJSON)
	case c.Quiet && c.Verbose:
		return fmt.Errorf("%s and %s contradict each other", c.origin("quiet"), c.origin("verbose"))
	case c.KillAfter < 0:
		return c.bad("kill-after", "%s is negative", c.KillAfter)
	case c.Leftovers != LeftoversWait && c.Leftovers != LeftoversKill:
		return c.bad("leftovers", "%q: expected %s or %s", c.Leftovers, LeftoversWait, LeftoversKill)
	case c.MaxRun < 0:
		return c.bad("max-run", "%s is negative", c.MaxRun)
	}
	if err := c.validateMonitoring(); err != nil { // monitoring.go
		return err
	}
	if err := c.validateCapture(); err != nil { // capture.go
		return err
	}
	if err := c.validatePausing(); err != nil { // pause.go
		return err
	}
	if err := c.validateStopping(); err != nil { // stopping.go
		return err
	}
	if err := c.validateJob(); err != nil { // job.go
		return err
	}
	if err := c.validateOncePer(); err != nil {
		return err
	}
	if err := c.validateReplace(); err != nil { // replace.go
		return err
	}
	if err := c.validateLockDelay(); err != nil { // lockdelay.go
		return err
	}
	return c.validateConnection()
}

// validateOncePer checks --once-per and the settings that go with it.
func (c *Config) validateOncePer() error {
	switch {
	case c.OncePer == 0 && c.OncePerOffset != 0:
		return fmt.Errorf("%s goes with --once-per", c.origin("once-per-offset"))
	case c.OncePer == 0:
	case c.OncePer < time.Second:
		return c.bad("once-per", "%s is below 1s", c.OncePer)
	case c.Slots > 1:
		return errors.New("--once-per and --slots do not go together: the holder of one slot does not keep the others from running")
	case c.Topology() == Quorum:
		return errors.New("--once-per needs one Redis deployment, not a quorum of masters")
	}
	if c.DoneExit < 0 || c.DoneExit > 255 {
		return c.bad("done-exit-code", "%d is outside 0-255", c.DoneExit)
	}
	return nil
}

// validateReacquire refuses --on-lost reacquire where it has no meaning.
func (c *Config) validateReacquire() error {
	switch {
	case c.NoRenew:
		return errors.New("--on-lost reacquire needs renewals to notice the loss; it does not go with --no-renew")
	case c.Slots > 1:
		// The freed slot's number may be another holder's by then, and
		// WITH_LOCK_SLOT would lie.
		return errors.New("--on-lost reacquire does not go with --slots: a semaphore's slot is not taken back")
	case c.Topology() == Quorum:
		return errors.New("--on-lost reacquire needs one Redis deployment: a quorum already survives a member's restart, putting its key back there")
	}
	return nil
}

// validateRun checks what a run or --status needs beyond the settings.
func (c *Config) validateRun() error {
	switch {
	case c.Name == "":
		return errors.New("lock name is empty")
	case strings.ContainsFunc(c.Name, unicode.IsControl):
		return fmt.Errorf("lock name %q contains control characters", c.Name)
	case c.action() == "" && c.Command[0] == "":
		return errors.New("command is empty")
	}
	return nil
}

// MaxSlots bounds --slots: an acquisition tries the slots one by one in
// one script, so its cost grows with N.
const MaxSlots = 1000

// DefaultRecordTTL is how long a last-run record is kept: a few weeks, so
// that the question "did it run last night?" has its answer after a long
// weekend or a holiday.
const DefaultRecordTTL = 30 * 24 * time.Hour

// DefaultHistorySize is how many runs of a name --history keeps: enough
// for a week and a half of a nightly job, small enough to cost nothing.
const DefaultHistorySize = 10

// MaxHistorySize bounds --history-size: the history is trimmed, and read
// by --history, in the release's script, so its cost grows with N.
const MaxHistorySize = 1000

// action is the flag of the one-name action requested (--status, --break),
// or "" when with-lock is to run a command.
func (c *Config) action() string {
	switch {
	case c.Status:
		return "--status"
	case c.Break:
		return "--break"
	case c.History:
		return "--history"
	case c.Check != "":
		return "--check"
	case c.Pause:
		return "--pause"
	case c.Resume:
		return "--resume"
	case c.Doctor:
		return "--doctor"
	}
	return ""
}

// validateActions refuses flags that contradict the action requested.
func (c *Config) validateActions() error {
	n := 0
	for _, on := range []bool{c.Status, c.List, c.Break, c.PrintConfig, c.History, c.Check != "", c.Pause, c.Resume, c.Doctor} {
		if on {
			n++
		}
	}
	switch {
	case n > 1:
		return errors.New("--status, --list, --break, --history, --check, --pause, --resume, --doctor and --print-config go alone: pick one")
	case c.JSON && !c.Status && !c.List && !c.PrintConfig && !c.History && c.Check == "" && !c.Doctor:
		return errors.New("--json goes with --status, --list, --history, --check, --doctor or --print-config")
	case c.All && !c.List:
		return errors.New("--all goes with --list")
	case c.Scan && !c.List:
		return errors.New("--scan goes with --list")
	case c.RecordTTL < time.Millisecond:
		return c.bad("record-ttl", "%s is below 1ms (turn records off with --no-record)", c.RecordTTL)
	case c.HistorySize < 0 || c.HistorySize > MaxHistorySize:
		return c.bad("history-size", "%d is outside 0-%d", c.HistorySize, MaxHistorySize)
	}
	return nil
}
