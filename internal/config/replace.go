package config

import (
	"errors"
	"time"
)

// replaceWaitMargin is what the default wait of --replace allows beyond
// the holder's TTL and --kill-after: the release's round trip, the line's
// check after a crashed holder's expiry (about 1.25 s), a loaded machine.
const replaceWaitMargin = 5 * time.Second

// validateReplace checks --replace against the settings it cannot serve,
// and gives it its default wait: long enough for the holder to read the
// marker at its next renewal (within a third of the TTL), have its job
// stopped (SIGKILL at --kill-after) and release, or, if it is gone, for
// its key to expire.
func (c *Config) validateReplace() error {
	if !c.Replace {
		return nil
	}
	// The replacing run goes first in the fair line: what has no line is
	// refused rather than let a third run slip in. --slots stops the
	// oldest holder; --fence and --min-replicas are served once the lock
	// is handed over (the library's LockOptions.Replace).
	if c.Topology() == Quorum {
		return errors.New("--replace needs one Redis deployment, not a quorum of masters: a quorum has no fair line to put the replacing run first in")
	}
	switch {
	case c.Wait > 0:
	case c.source("wait") == fromFlag:
		return errors.New("--replace waits for the holder to stop: give -w a positive DUR, or leave it out for --ttl + --kill-after + 5s")
	default:
		c.Wait = c.TTL + c.KillAfter + replaceWaitMargin
	}
	return nil
}
