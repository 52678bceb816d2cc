package withlock

// Recheck: the lock read at once on a server that has just become the
// master, outside the renewal schedule, so that a failover to a replica
// that lacked the key stops the work before another owner can start.

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Recheck reads the lock's key on rdb now, without waiting for the next
// renewal. rdb is meant to be a client of the master a Sentinel failover
// has just promoted (its +promoted-slave or +switch-master event names
// it): replication is asynchronous, and a replica promoted right after the
// lock was taken may lack its key, so another owner can take the lock
// there at once while this one would run on until its next renewal — up
// to a renewal interval.
//
// It returns nil when the key holds the lock's token on rdb. When the key
// holds another token or none, the lock is lost there and then, as if a
// renewal had found it so: Lost is closed, Err returns a *LostError whose
// Err matches ErrLockNotHeld and whose Promoted is addr, Context is
// cancelled, renewal stops; and Recheck returns that error. Any other
// error is the failure to ask rdb (the new master may not answer yet): the
// KeepAlive is unchanged, and the caller may try again until Deadline.
//
// With KeepAliveOptions.Reacquire, a key that is gone is not a loss: the
// renewal that follows takes the lock back. A lock of a quorum or a
// semaphore's slot is not read on one server: Recheck returns
// errors.ErrUnsupported. After Stop, or once the lock is lost, it returns
// Err and asks nothing.
func (k *KeepAlive) Recheck(ctx context.Context, rdb redis.UniversalClient, addr string) error {
	l := k.lock
	if _, ok := l.c.b.(*single); !ok {
		return fmt.Errorf("recheck %s: %w: only a lock of one Redis deployment is read on one server", l.key, errors.ErrUnsupported)
	}
	if k.ctx.Err() != nil {
		return k.Err()
	}
	holder, _, err := inspect(ctx, rdb, l.key)
	switch {
	case err != nil:
		return fmt.Errorf("recheck %s on %s: %w", l.key, addr, err)
	case holder == l.token, holder == "" && k.reacquire:
		return nil
	}
	k.stop() // before the loss is told: no renewal after it
	k.loseTo(&LostError{Key: l.key, Err: ErrLockNotHeld, Promoted: addr})
	return k.Err()
}
