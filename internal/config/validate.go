package config

// Checking a parsed Config: values out of range, settings that contradict
// each other, actions given with what they cannot go with. Every error
// names the setting as the user gave it (flag, variable or config file).

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
)

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
