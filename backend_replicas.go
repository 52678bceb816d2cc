package withlock

// Acquisition acknowledged by replicas (LockOptions.MinReplicas): SET then
// WAIT on one connection.

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// defaultReplicaTimeout is how long an acquisition with
// LockOptions.MinReplicas waits for acknowledgements when
// LockOptions.ReplicaTimeout is 0.
const defaultReplicaTimeout = time.Second

// acquireReplicated takes l on s and then sends WAIT on the same
// connection, since WAIT counts acknowledgements of that connection's own
// writes. It returns whether the key was set (false: someone holds it);
// the fencing number, if any, is in l.fence.
//
// WAIT makes the key survive a failover to one of the acknowledging
// replicas. It does not make Redis strongly consistent: Sentinel or Cluster
// may still promote a replica that had not acknowledged, and a lock that
// was only on the old master is then lost. It narrows the window, nothing
// more.
func (s *single) acquireReplicated(ctx context.Context, l *Lock, opts *LockOptions) (bool, error) {
	conn, err := stickyConn(ctx, s.rdb, l.key)
	if err != nil {
		return false, fmt.Errorf("acquire %s: %w", l.key, err)
	}
	defer conn.Close()
	// A lost reply may still hide a key that landed: set cleans it up, and
	// held looks for our token before calling the lock busy.
	if ok, err := s.set(ctx, conn, l, opts.Fence); err != nil || !ok {
		return ok, err
	}
	timeout := opts.ReplicaTimeout
	if timeout <= 0 {
		timeout = defaultReplicaTimeout
	}
	acks, err := conn.Wait(ctx, opts.MinReplicas, timeout).Result()
	if err == nil && acks >= int64(opts.MinReplicas) {
		return true, nil
	}
	// Give the key up rather than run on a lock that a failover may lose,
	// through the pool: a WAIT that timed out leaves conn unusable.
	s.abandon(ctx, l, err == nil) // WAIT answered: wait for the deletion too
	if err != nil {
		return false, fmt.Errorf("wait for replicas of %s: %w", l.key, err)
	}
	return false, &notReplicatedError{key: l.key, want: opts.MinReplicas, got: int(acks)}
}

// stickyConn returns one connection to the master that owns key: a plain or
// Sentinel client's own, or in a Cluster the connection of the key's master.
// Close returns it to its pool.
func stickyConn(ctx context.Context, rdb redis.UniversalClient, key string) (*redis.Conn, error) {
	switch c := rdb.(type) {
	case *redis.Client:
		return c.Conn(), nil
	case *redis.ClusterClient:
		node, err := c.MasterForKey(ctx, key)
		if err != nil {
			return nil, err
		}
		return node.Conn(), nil
	default:
		return nil, fmt.Errorf("MinReplicas needs a *redis.Client or *redis.ClusterClient, not %T", rdb)
	}
}
