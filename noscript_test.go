package withlock_test

// A long-lived Client sends the release script by its digest (EVALSHA)
// after its first release; a server that no longer has the script answers
// NOSCRIPT, and the Client sends it whole again. These tests make each way
// a server loses its script cache happen under held, renewed locks, and
// fail if a release or a renewal is lost to it. Each also checks, in INFO
// errorstats, that an EVALSHA really was refused NOSCRIPT, so that it
// exercises the resend rather than passing by luck of a warm cache.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// renewed is a held lock under a KeepAlive that counts its renewals.
type renewed struct {
	l  *withlock.Lock
	ka *withlock.KeepAlive

	ok       atomic.Int64 // renewals that succeeded
	mu       sync.Mutex
	failures []error // renewals that failed, in order
}

// holdRenewed takes name on c for ttl and renews it every interval.
func holdRenewed(t *testing.T, c *withlock.Client, name string, ttl, interval time.Duration) *renewed {
	t.Helper()
	r := &renewed{l: mustAcquire(t, c, name, ttl)}
	r.ka = r.l.KeepAlive(context.Background(), &withlock.KeepAliveOptions{
		Interval: interval,
		OnRenew: func(_ time.Duration, err error) {
			if err == nil {
				r.ok.Add(1)
				return
			}
			r.mu.Lock()
			r.failures = append(r.failures, err)
			r.mu.Unlock()
		},
	})
	t.Cleanup(r.ka.Stop)
	return r
}

// waitRenewals waits until n more renewals than so far have succeeded,
// failing the test if the lock is lost first, if that takes longer than
// within, or if any renewal was refused NOSCRIPT.
func (r *renewed) waitRenewals(t *testing.T, n int64, within time.Duration) {
	t.Helper()
	want := r.ok.Load() + n
	clitest.Eventually(t, within, fmt.Sprintf("%s: fewer than %d renewals succeeded (failures: %v)", r.l.Key(), n, r.failed()), func() bool {
		select {
		case <-r.ka.Lost():
			t.Fatalf("%s lost while renewed: %v (renewal failures: %v)", r.l.Key(), r.ka.Err(), r.failed())
		default:
		}
		return r.ok.Load() >= want
	})
	for _, err := range r.failed() {
		if redis.HasErrorPrefix(err, "NOSCRIPT") {
			t.Errorf("%s: a renewal was refused NOSCRIPT: %v", r.l.Key(), err)
		}
	}
}

func (r *renewed) failed() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]error(nil), r.failures...)
}

// stopAndRelease stops the renewals and releases the lock, which must
// succeed and leave its key gone from the server admin talks to.
func (r *renewed) stopAndRelease(t *testing.T, admin *redis.Client) {
	t.Helper()
	r.ka.Stop()
	if err := r.ka.Err(); err != nil {
		t.Fatalf("%s lost before its release: %v", r.l.Key(), err)
	}
	releaseAndCheckGone(t, r.l, admin)
}

func releaseAndCheckGone(t *testing.T, l *withlock.Lock, admin *redis.Client) {
	t.Helper()
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("Release of %s: %v", l.Key(), err)
	}
	if n, err := admin.Exists(context.Background(), l.Key()).Result(); err != nil || n != 0 {
		t.Fatalf("after its Release %s exists (%d, %v)", l.Key(), n, err)
	}
}

// releaseOnce takes name on c and releases it: a Client's first release
// sends the script whole, and every later one its digest.
func releaseOnce(t *testing.T, c *withlock.Client, name string) {
	t.Helper()
	if err := mustAcquire(t, c, name, time.Minute).Release(context.Background()); err != nil {
		t.Fatalf("Release of %s: %v", name, err)
	}
}

// errorReplies is how many error replies of each code (NOSCRIPT, NOPERM)
// the server gave since its last CONFIG RESETSTAT, from INFO errorstats.
func errorReplies(t *testing.T, rdb *redis.Client) map[string]int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "errorstats").Result()
	if err != nil {
		t.Fatalf("INFO errorstats: %v", err)
	}
	counts := map[string]int{}
	for _, line := range strings.Split(info, "\r\n") {
		code, n, ok := strings.Cut(strings.TrimPrefix(line, "errorstat_"), ":count=")
		if ok {
			counts[code], _ = strconv.Atoi(n)
		}
	}
	return counts
}

// checkResent checks what the server admin talks to answered since its
// last CONFIG RESETSTAT: refused wants EVALSHAs refused NOSCRIPT, each
// followed by the script sent whole (EVAL), and none otherwise.
func checkResent(t *testing.T, admin *redis.Client, what string, refused int) {
	t.Helper()
	calls := commandCallsExceptSetup(t, admin)
	if got := errorReplies(t, admin)["NOSCRIPT"]; got != refused {
		t.Errorf("%s: %d EVALSHAs refused NOSCRIPT, want %d (commands: %v)", what, got, refused, calls)
	}
	if calls["eval"] != refused {
		t.Errorf("%s: the script sent whole %d times, want %d (commands: %v)", what, calls["eval"], refused, calls)
	}
}

func scriptFlush(t *testing.T, rdb *redis.Client) {
	t.Helper()
	if err := rdb.ScriptFlush(context.Background()).Err(); err != nil {
		t.Fatalf("SCRIPT FLUSH: %v", err)
	}
}

// SCRIPT FLUSH while a Client holds locks under KeepAlive: every renewal
// after it succeeds, and each release after a flush is refused NOSCRIPT
// once, sends the script whole, and deletes its key.
func TestReleasesAndRenewalsSurviveScriptFlush(t *testing.T) {
	const ttl, interval = 3 * time.Second, 500 * time.Millisecond
	srv := redistest.Start(t)
	admin := srv.Client()
	c := withlock.New(srv.Client(), nil)
	releaseOnce(t, c, "warm-up")
	var held []*renewed
	for _, name := range []string{"a", "b", "c"} {
		held = append(held, holdRenewed(t, c, name, ttl, interval))
	}
	scriptFlush(t, admin)
	for _, r := range held {
		r.waitRenewals(t, 2, 4*ttl)
	}
	for i, r := range held {
		// Each release finds the script flushed: the first by the flush
		// above, the others by one just before them.
		if i > 0 {
			scriptFlush(t, admin)
		}
		resetStats(t, admin)
		r.stopAndRelease(t, admin)
		checkResent(t, admin, "release after SCRIPT FLUSH", 1)
	}
	// The resend put the script back: the next release goes by digest.
	resetStats(t, admin)
	releaseOnce(t, c, "after")
	checkResent(t, admin, "release after a resend", 0)
}

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
	for _, admin := range admins {
		resetStats(t, admin)
	}
	for i, r := range held {
		r.stopAndRelease(t, admins[i])
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
	// The TTL outlasts a failover on a loaded machine (the sentinels take
	// a second to see the master down, then elect and promote); renewals
	// fail until then and are retried.
	const ttl, interval = 30 * time.Second, time.Second
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
	r.waitRenewals(t, 2, ttl/2)
	resetStats(t, promoted)
	r.stopAndRelease(t, promoted)
	checkResent(t, promoted, "release on the promoted replica", 1)
}

// Servers since Redis 7.4 evict the least recently used of the scripts
// loaded by EVAL past 500 of them: 600 other scripts sent with EVAL between
// two releases of a Client push its release script out there, and the
// second release still succeeds, refused NOSCRIPT once. A server that
// evicts nothing (Redis 7.0) keeps the script, and the release goes by
// digest; the test says which it saw.
func TestReleaseAfterServerEvictsEvalScripts(t *testing.T) {
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
	resetStats(t, admin)
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
