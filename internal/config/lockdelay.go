package config

import (
	"errors"

	"github.com/with-lock/with-lock/internal/keys"
)

// validateLockDelay checks --lock-delay against the settings it cannot
// serve. The lapse is told by a lease mark beside the lock's key, which
// every release deletes (internal/lapse): one
// deployment's plain lock keeps it; a semaphore's slots and a quorum's
// independent masters do not. The wait holds the lock, so it needs the
// renewal.
func (c *Config) validateLockDelay() error {
	switch {
	case c.LockDelay < 0:
		return c.bad("lock-delay", "%s is negative", c.LockDelay)
	case c.LockDelay == 0:
		return nil
	case c.Slots > 1:
		return errors.New("--lock-delay and --slots do not go together: a semaphore's slots keep no lease mark to tell an expired holder from a released one")
	case c.Topology() == Quorum:
		return errors.New("--lock-delay needs one Redis deployment, not a quorum of masters: the lease mark that tells an expiry from a release is kept beside the key on one")
	case c.NoRenew:
		return errors.New("--lock-delay holds the lock while it waits, which needs renewal: it does not go with --no-renew")
	case c.Name != "" && !keys.HasLine(c.Prefix+c.Name):
		return errors.New("--lock-delay: the key " + c.Prefix + c.Name + " has '}' but no hash tag, which leaves no room for the lease mark beside it; put a hash tag {...} in the name")
	}
	return nil
}
