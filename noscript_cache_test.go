package withlock_test

// A long-lived Client's releases and renewals where a server lacks the
// release script without anyone flushing it: a Cluster master that never
// had it or lost it, a promoted replica, a restarted server, and a server
// that evicted it.
// The helpers are noscript_test.go's.

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// namePerNode returns a lock name for each node of cl, names[i] in a slot
// of cl.Nodes[i].
func namePerNode(t *testing.T, cl *redistest.Cluster) []string {
	t.Helper()
	names := make([]string, len(cl.Nodes))
	left := len(names)
	for i := 0; left > 0; i++ {
		if i == 1000 {
			t.Fatalf("no name in a slot of every node among a thousand: %q", names)
		}
		name := fmt.Sprint("job-", i)
		node := cl.NodeFor("lock:" + name)
		for j, s := range cl.Nodes {
			if s == node && names[j] == "" {
				names[j] = name
				left--
			}
		}
	}
	return names
}

// A Cluster Client whose releases go by digest releases keys on masters
// that never had the script, and on one whose scripts were flushed while
// the Client held and renewed locks on every master: the master without
// the script refuses one EVALSHA and gets the script whole, the others
// none.
func TestClusterReleasesOnNodesWithoutTheScript(t *testing.T) {
	t.Parallel()
	const ttl, interval = 3 * time.Second, 500 * time.Millisecond
	cl := redistest.StartCluster(t, 3)
	c := withlock.New(cl.Client(), nil)
	names := namePerNode(t, cl)
	admins := make([]*redis.Client, len(cl.Nodes))
	for i, s := range cl.Nodes {
		admins[i] = s.Client()
	}

	// The first release, on the first node, sends the script whole; the
	// next ones by digest, to nodes that never got it.
	for i, name := range names {
		resetStats(t, admins[i])
		releaseAndCheckGone(t, mustAcquire(t, c, name, time.Minute), admins[i])
		if i > 0 {
			checkResent(t, admins[i], "release on a node that never had the script", 1)
		}
	}

	var held []*renewed
	for _, name := range names {
		held = append(held, holdRenewed(t, c, name, ttl, interval))
	}
	scriptFlush(t, admins[0])
	for _, r := range held {
		r.waitRenewals(t, 2, 4*ttl)
	}
	// Every renewal stops first: one left running would count its EVAL
	// beside a release's.
	for _, r := range held {
		r.stop(t)
	}
	for _, admin := range admins {
		resetStats(t, admin)
	}
	for i, r := range held {
		releaseAndCheckGone(t, r.l, admins[i])
	}
	checkResent(t, admins[0], "release on the node whose scripts were flushed", 1)
	for _, admin := range admins[1:] {
		checkResent(t, admin, "release on a node that kept the script", 0)
	}
}

// A Sentinel failover promotes a replica, which never had the scripts its
// master ran (scripts reach replicas as their effects): a Client holding a
// renewed lock across it keeps renewing it on the new master, and its
// release there is refused NOSCRIPT once, resends the script and deletes
// the key.
func TestReleaseAndRenewalOnPromotedReplicaWithoutTheScript(t *testing.T) {
	t.Parallel()
	// The TTL outlasts a failover on a loaded machine many times over
	// (the sentinels take a second to see the master down, then a few to
	// elect and promote); renewals fail until then and are retried.
	const ttl, interval = time.Minute, time.Second
	ctx := context.Background()
	g := redistest.StartSentinels(t)
	promoted := g.Replica.Client()
	c := withlock.New(g.Client(nil), nil)
	releaseOnce(t, c, "warm-up")
	r := holdRenewed(t, c, "job", ttl, interval)
	clitest.Eventually(t, 10*time.Second, "the replica never received the lock's key", func() bool {
		return promoted.Get(ctx, r.l.Key()).Val() == r.l.Token()
	})

	g.Master.Kill()
	g.WaitMaster(g.Replica.Addr())
	r.waitRenewals(t, 2, ttl/3)
	r.stopAndRelease(t, promoted)
	checkResent(t, promoted, "release on the promoted replica", 1)
}

// A server restarted without persistence has neither the lock's key nor
// the script cache: a KeepAlive with Reacquire takes the key back, and the
// release on the restarted server is refused NOSCRIPT once, resends the
// script and deletes the key.
func TestReleaseAfterRestartWithoutTheScript(t *testing.T) {
	t.Parallel()
	// The margin (a tenth of the TTL and 100ms) outlasts a restart on a
	// loaded machine, during which renewals fail.
	const ttl, interval = 10 * time.Second, 500 * time.Millisecond
	ctx := context.Background()
	srv := redistest.Start(t)
	admin := srv.Client()
	c := withlock.New(srv.Client(), nil)
	releaseOnce(t, c, "warm-up")
	r := &renewed{l: mustAcquire(t, c, "job", ttl)}
	var reacquired atomic.Int64
	r.ka = r.l.KeepAlive(ctx, &withlock.KeepAliveOptions{
		Interval: interval, OnRenew: r.count, Reacquire: true,
		OnReacquire: func(time.Duration) { reacquired.Add(1) },
	})
	t.Cleanup(r.ka.Stop)

	srv.Restart()
	clitest.Eventually(t, ttl, "the KeepAlive never took the key back after the restart", func() bool {
		return reacquired.Load() > 0
	})
	r.waitRenewals(t, 2, ttl)
	r.stopAndRelease(t, admin)
	checkResent(t, admin, "release on the restarted server", 1)
}

// Redis since 7.4 and Valkey 8 evict the least recently used of the
// scripts loaded by EVAL past 500 of them: 600 other scripts sent with
// EVAL between two releases of a Client push its release script out
// there, and the second release still succeeds, refused NOSCRIPT once. A
// server that evicts nothing (Redis 7.0) keeps the script, and the
// release goes by digest; the test says which it saw.
func TestReleaseAfterServerEvictsEvalScripts(t *testing.T) {
	t.Parallel()
	const ttl, interval, others = 3 * time.Second, 500 * time.Millisecond, 600
	ctx := context.Background()
	srv := redistest.Start(t)
	admin := srv.Client()
	c := withlock.New(srv.Client(), nil)
	releaseOnce(t, c, "warm-up")
	r := holdRenewed(t, c, "job", ttl, interval)

	// A script sent after the release script: evicted, it shows the
	// release script, used less recently, evicted as well.
	marker := redis.NewScript("return 'sent after the release script'")
	if err := marker.Eval(ctx, admin, nil).Err(); err != nil {
		t.Fatalf("EVAL of the marker script: %v", err)
	}
	if _, err := admin.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range others {
			p.Eval(ctx, fmt.Sprintf("return 'other script %d'", i), nil)
		}
		return nil
	}); err != nil {
		t.Fatalf("EVAL of %d other scripts: %v", others, err)
	}
	exists, err := admin.ScriptExists(ctx, marker.Hash()).Result()
	if err != nil {
		t.Fatalf("SCRIPT EXISTS: %v", err)
	}
	evicted := !exists[0]
	stats, _ := admin.Info(ctx, "stats").Result()
	t.Logf("after %d more scripts loaded with EVAL, the server evicted the release script: %v (INFO stats %s)",
		others, evicted, infoField(stats, "evicted_scripts"))

	r.waitRenewals(t, 2, 4*ttl)
	r.stopAndRelease(t, admin)
	refused := 0
	if evicted {
		refused = 1
	}
	checkResent(t, admin, "release after 600 other scripts", refused)
}

// infoField is "name:value" of the INFO field name in info, or says it is
// absent.
func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\r\n") {
		if strings.HasPrefix(line, name+":") {
			return line
		}
	}
	return "has no " + name
}
