package config

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// DefaultKillAfter is how long a command may take to stop after SIGTERM,
// once its lock is lost, before it gets SIGKILL.
const DefaultKillAfter = 5 * time.Second

// What --on-lost can say.
const (
	OnLostTerm   = "term"   // stop the command: SIGTERM, then SIGKILL
	OnLostIgnore = "ignore" // warn and let the command finish
)

// RenewConfig is what happens while the command runs and after: renewal,
// loss of the lock, min-hold, fencing; and --status, which runs no command.
type RenewConfig struct {
	NoRenew   bool          // --no-renew: the TTL is fixed, as in a plain SET NX EX
	OnLost    string        // OnLostTerm or OnLostIgnore
	KillAfter time.Duration // SIGKILL this long after SIGTERM on loss
	MinHold   time.Duration // keep the lock at least this long after acquiring it
	Fence     bool          // draw a fencing number: WITH_LOCK_FENCE
	Status    bool          // --status <name>: print the lock's state, run nothing
	JSON      bool          // --json: print --status as JSON
}

func addRenewFlags(fs *pflag.FlagSet, c *RenewConfig) {
	fs.BoolVar(&c.NoRenew, "no-renew", false, "do not renew the lock while the command runs")
	fs.StringVar(&c.OnLost, "on-lost", OnLostTerm, "`MODE` on a lost lock: term stops the command (exit 125), ignore only warns")
	fs.DurationVar(&c.KillAfter, "kill-after", DefaultKillAfter, "after --on-lost term's SIGTERM, SIGKILL the command after `DUR`")
	fs.DurationVar(&c.MinHold, "min-hold", 0, "keep the lock at least `DUR` after acquiring it, even if the command ends sooner")
	fs.BoolVar(&c.Fence, "fence", false, "give the command a fencing number, increasing per acquisition, in WITH_LOCK_FENCE")
	fs.BoolVar(&c.Status, "status", false, "print who holds lock <name> and exit: 0 held, 1 free (no command)")
	fs.BoolVar(&c.JSON, "json", false, "with --status, print JSON")
}

func (c *RenewConfig) validate() error {
	switch {
	case c.OnLost != OnLostTerm && c.OnLost != OnLostIgnore:
		return fmt.Errorf("--on-lost %q: expected %s or %s", c.OnLost, OnLostTerm, OnLostIgnore)
	case c.KillAfter < 0:
		return fmt.Errorf("--kill-after %s is negative", c.KillAfter)
	case c.MinHold < 0:
		return fmt.Errorf("--min-hold %s is negative", c.MinHold)
	case c.JSON && !c.Status:
		return errors.New("--json goes with --status")
	}
	return nil
}

// parseStatus finishes Parse for --status, which takes a lock name and no
// command.
func (c *Config) parseStatus(rest []string) (*Config, error) {
	if len(rest) != 1 {
		return nil, fmt.Errorf("%w: --status takes one lock name and no command", ErrUsage)
	}
	c.Name = rest[0]
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	return c, nil
}
