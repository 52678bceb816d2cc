package withlock

// Recheck: the lock read at once on a server that has just become the
// master, outside the renewal schedule, so that a failover to a replica
// that lacked the key stops the work before another owner can start.

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// recheckEvery is how often a server given to KeepAliveOptions.Recheck is
// asked again while it does not answer.
const recheckEvery = 50 * time.Millisecond

// rechecks reads the lock on each server that comes on ch until ctx is done
// or the lock is lost. A server that does not answer is asked again every
// recheckEvery until the local deadline, unless another comes meanwhile:
// the later announcement names the newer master.
func (k *KeepAlive) rechecks(ctx context.Context, ch <-chan redis.UniversalClient) {
	defer k.rechecking.Done()
	var rdb redis.UniversalClient // asked again at retry, while it does not answer
	retry := time.NewTimer(0)
	<-retry.C
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case rdb = <-ch:
		case <-retry.C:
		}
		if rdb == nil {
			continue
		}
		switch answered, lost := k.recheck(ctx, rdb); {
		case lost:
			return
		case answered || !time.Now().Before(k.Deadline()):
			rdb = nil // the deadline speaks for a server that never answered
		default:
			retry.Reset(recheckEvery)
		}
	}
}

// recheck reads the lock's key on rdb once. It loses the lock when rdb
// holds another token or none (unless Reacquire, whose next renewal takes
// a vanished key back), and reports whether rdb answered and whether the
// lock was lost.
func (k *KeepAlive) recheck(ctx context.Context, rdb redis.UniversalClient) (answered, lost bool) {
	l := k.lock
	if _, ok := l.c.b.(*single); !ok {
		return true, false // a quorum's or a semaphore's lock is not on one server
	}
	actx, cancel := context.WithDeadline(ctx, k.Deadline())
	holder, _, err := inspect(actx, rdb, l.key)
	cancel()
	switch {
	case err != nil || ctx.Err() != nil:
		return false, false
	case holder == l.token || holder == "" && k.reacquire:
		return true, false
	}
	k.stop() // before the loss is told: no renewal after it
	k.loseTo(&LostError{Key: l.key, Err: ErrLockNotHeld, Promoted: addrOf(rdb)})
	return true, true
}

// addrOf is the address of a client of one server, or "".
func addrOf(rdb redis.UniversalClient) string {
	if c, ok := rdb.(*redis.Client); ok {
		return c.Options().Addr
	}
	return ""
}
