package withlock

// What a Client learns of its Redis server with its first acquisition:
// whether the server may evict a held lock (its maxmemory-policy), and
// every backend's part of asking it (evictionAsker).

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/pipeline"
	"github.com/with-lock/with-lock/internal/serverinfo"
)

// EvictionPolicy returns the maxmemory-policy of c's Redis server, as c's
// first acquisition learnt it, when that server may evict held locks: its
// maxmemory is set and its policy is not noeviction, so under memory
// pressure it may delete a lock's key before its TTL, and another owner
// then takes a lock that is still in use. Set maxmemory-policy noeviction
// on a server that keeps locks.
//
// It returns "" when the server may not evict, until the first acquisition
// has had its answer, and when the server does not say: an ACL user
// without +info, INFO renamed away. A Client asks once, in the round trip
// of its first acquisition (INFO memory after the SET), and never again;
// Status asks at every call (Status.EvictionPolicy). A Cluster's or a
// quorum's acquisitions do not ask: their Client returns "".
func (c *Client) EvictionPolicy() string {
	if a, ok := c.b.(evictionAsker); ok {
		return a.evictionPolicy()
	}
	return ""
}

// evictionAsker is a backend whose first acquisition asks its server's
// eviction policy: one deployment, plain or semaphore, but not a Cluster.
type evictionAsker interface {
	evictionPolicy() string
}

var (
	_ evictionAsker = (*single)(nil)
	_ evictionAsker = (*semaphore)(nil)
)

func (s *single) evictionPolicy() string { return s.server.learnt() }

func (s *semaphore) evictionPolicy() string { return s.one.evictionPolicy() }

// serverCheck is what a backend on one deployment learns of its server
// with its first acquisition.
type serverCheck struct {
	asked  atomic.Bool            // an acquisition has asked, or will not
	policy atomic.Pointer[string] // the evicting policy it learnt; nil for none
}

// due claims the question for the acquisition about to be sent on rdb: true
// once, for the first. Every later acquisition pays one atomic load. A
// Cluster is never asked: its pipelines send a command without a key to
// any master, not the lock key's, and go-redis may refuse to pipeline INFO
// there at all.
func (sc *serverCheck) due(rdb redis.UniversalClient) bool {
	if sc.asked.Load() {
		return false
	}
	if _, ok := rdb.(*redis.ClusterClient); ok {
		sc.asked.Store(true)
		return false
	}
	return sc.asked.CompareAndSwap(false, true)
}

// pipelined sends what send queues and INFO memory after it, in one round
// trip on rdb, and learns the server's eviction policy from INFO's reply.
// INFO's failure (NOPERM, an unknown command) is said nowhere: the
// commands of send have their own replies.
func (sc *serverCheck) pipelined(ctx context.Context, rdb pipeSetter, send func(redis.Pipeliner)) {
	var info *redis.StringCmd
	_ = pipeline.Send(ctx, rdb, func(p redis.Pipeliner) { // each command has its error
		send(p)
		info = p.Info(ctx, "memory")
	})
	if text, err := info.Result(); err == nil {
		if policy := serverinfo.EvictingPolicy(text); policy != "" {
			sc.policy.Store(&policy)
		}
	}
}

// learnt is the evicting policy learnt, or "".
func (sc *serverCheck) learnt() string {
	if p := sc.policy.Load(); p != nil {
		return *p
	}
	return ""
}
