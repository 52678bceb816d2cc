package config

import (
	"errors"
	"fmt"
	"time"
)

// Pausing is --pause and --resume: the maintenance switch of a name, in
// every host's runs at once.
type Pausing struct {
	Pause       bool          // --pause <name>: pause the name, run nothing
	PauseFor    time.Duration // --for: the pause ends by itself after this; 0: at --resume
	PauseReason string        // --reason: why, shown to every refused run
	Resume      bool          // --resume <name>: end its pause, run nothing
}

// MaxReason bounds --reason: it is printed by every refused run, on one line.
const MaxReason = 200

// validatePausing refuses --for and --reason without --pause, and what
// cannot be shown on one line.
func (c *Config) validatePausing() error {
	switch {
	case !c.Pause && (c.PauseFor != 0 || c.PauseReason != ""):
		return errors.New("--for and --reason go with --pause")
	case c.PauseFor < 0:
		return c.bad("for", "%s is negative", c.PauseFor)
	case c.PauseFor > 0 && c.PauseFor < time.Millisecond:
		return c.bad("for", "%s is below 1ms", c.PauseFor)
	case len(c.PauseReason) > MaxReason:
		return fmt.Errorf("--reason is %d bytes long; keep it under %d", len(c.PauseReason), MaxReason)
	}
	for _, r := range c.PauseReason {
		if r < ' ' || r == 0x7f {
			return errors.New("--reason holds a control character: give it on one line")
		}
	}
	return nil
}
