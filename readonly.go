package withlock

import (
	"fmt"

	"github.com/redis/go-redis/v9"
)

// opError wraps the error of operation op on a held lock. A READONLY reply
// also matches ErrLockNotHeld: the server that held our key was demoted, and
// with asynchronous replication the promoted replica may never have received
// the key, so for all the owner knows someone else holds the lock now. This
// is the conservative choice: stop relying on the lock (a keep-alive stops
// the job) rather than carry on through a failover that may have lost it.
func opError(op, key string, err error) error {
	if redis.IsReadOnlyError(err) {
		return fmt.Errorf("%s %s: %w: the server was demoted to a replica (%w)", op, key, ErrLockNotHeld, err)
	}
	return fmt.Errorf("%s %s: %w", op, key, err)
}
