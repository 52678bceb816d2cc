package withlock_test

// A long-lived Client sends the release script by its digest (EVALSHA)
// after its first release; a server that no longer has the script answers
// NOSCRIPT, and the Client sends it whole again. The tests here empty the
// script cache with SCRIPT FLUSH under held, renewed locks and fail if a
// release or a renewal is lost to it; the tests further down lose the
// cache the other ways a server does. Where a release goes by digest they
// also check, in INFO errorstats, that an EVALSHA really was refused
// NOSCRIPT: the test exercises the resend, not a warm cache.

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
	r.ka = r.l.KeepAlive(context.Background(), &withlock.KeepAliveOptions{Interval: interval, OnRenew: r.count})
	t.Cleanup(r.ka.Stop)
	return r
}

// count is the KeepAlive's OnRenew.
func (r *renewed) count(_ time.Duration, err error) {
	if err == nil {
		r.ok.Add(1)
		return
	}
	r.mu.Lock()
	r.failures = append(r.failures, err)
	r.mu.Unlock()
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

// stop stops the renewals, which must not have lost the lock.
func (r *renewed) stop(t *testing.T) {
	t.Helper()
	r.ka.Stop()
	if err := r.ka.Err(); err != nil {
		t.Fatalf("%s lost before its release: %v", r.l.Key(), err)
	}
}

// stopAndRelease stops the renewals, then counts the commands of the
// server admin talks to from zero (resetStats) and releases the lock,
// which must succeed and leave its key gone there: the counts then hold
// the release alone, no renewal's EVAL.
func (r *renewed) stopAndRelease(t *testing.T, admin *redis.Client) {
	t.Helper()
	r.stop(t)
	resetStats(t, admin)
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
	t.Parallel()
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
	// Every renewal stops first: one left running would count its EVAL
	// beside a release's.
	for _, r := range held {
		r.stop(t)
	}
	for i, r := range held {
		// Each release finds the script flushed: the first by the flush
		// above, the others by one just before them.
		if i > 0 {
			scriptFlush(t, admin)
		}
		resetStats(t, admin)
		releaseAndCheckGone(t, r.l, admin)
		checkResent(t, admin, "release after SCRIPT FLUSH", 1)
	}
	// The resend put the script back: the next release goes by digest.
	resetStats(t, admin)
	releaseOnce(t, c, "after")
	checkResent(t, admin, "release after a resend", 0)
}

// Servers word NOSCRIPT differently (Redis "NOSCRIPT No matching script.
// Please use EVAL.", Valkey 8 "NOSCRIPT No matching script."), and go-redis
// hands the reply over as the server sent it where it does not normalize
// it to redis.ErrNoScript: a release recognizes it by its code alone. The
// server here is real and refuses the EVALSHA; noScriptWording only words
// that refusal as another server does.
func TestReleaseRecognizesNoScriptByItsCode(t *testing.T) {
	t.Parallel()
	for _, text := range []string{
		"NOSCRIPT No matching script. Please use EVAL.",
		"NOSCRIPT No matching script.",
		"NOSCRIPT",
	} {
		t.Run(text, func(t *testing.T) {
			srv := redistest.Start(t)
			admin := srv.Client()
			c := withlock.New(noScriptWording{srv.Client(), text}, nil)
			releaseOnce(t, c, "warm-up")
			scriptFlush(t, admin)
			resetStats(t, admin)
			releaseAndCheckGone(t, mustAcquire(t, c, "job", time.Minute), admin)
			checkResent(t, admin, "release after SCRIPT FLUSH", 1)
		})
	}
}

// noScriptWording is a client whose EVALSHA's NOSCRIPT reply reads text.
type noScriptWording struct {
	*redis.Client
	text string
}

func (c noScriptWording) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	cmd := c.Client.EvalSha(ctx, sha1, keys, args...)
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		cmd.SetErr(serverReply(c.text))
	}
	return cmd
}

// serverReply is an error reply of a server, as go-redis types one.
type serverReply string

func (e serverReply) Error() string { return string(e) }
func (serverReply) RedisError()     {}

// Every kind of lock keeps its renewals and its release through SCRIPT
// FLUSH, whether its scripts go by digest or whole: a fenced lock, a
// semaphore's slot, a quorum's lock (flushed on every member), and a lock
// released with its run's record (the CLI's release).
func TestEveryLockKindSurvivesScriptFlush(t *testing.T) {
	t.Parallel()
	const ttl, interval = 3 * time.Second, 500 * time.Millisecond
	ctx := context.Background()
	release := func(l *withlock.Lock) error { return l.Release(ctx) }
	for _, tc := range []struct {
		name    string
		servers int
		client  func(t *testing.T, rdbs []redis.UniversalClient) *withlock.Client
		opts    *withlock.LockOptions
		release func(l *withlock.Lock) error
		key     func(l *withlock.Lock) string // the key the release deletes
	}{
		{"fenced lock", 1, clientOnFirst, &withlock.LockOptions{Fence: true}, release, (*withlock.Lock).Key},
		{"semaphore slot", 1, func(t *testing.T, rdbs []redis.UniversalClient) *withlock.Client {
			return semaphore(t, rdbs[0], 2)
		}, nil, release, func(l *withlock.Lock) string { return fmt.Sprintf("{%s}:s:%d", l.Key(), l.Slot()) }},
		{"quorum lock", 3, func(t *testing.T, rdbs []redis.UniversalClient) *withlock.Client {
			c, err := withlock.NewQuorum(rdbs, nil)
			if err != nil {
				t.Fatalf("NewQuorum: %v", err)
			}
			return c
		}, nil, release, (*withlock.Lock).Key},
		{"lock released with its record", 1, clientOnFirst, nil, func(l *withlock.Lock) error {
			return l.ReleaseAndRecord(ctx, withlock.Run{}, time.Hour)
		}, (*withlock.Lock).Key},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var admins []*redis.Client
			var rdbs []redis.UniversalClient
			for range tc.servers {
				srv := redistest.Start(t)
				admins, rdbs = append(admins, srv.Client()), append(rdbs, srv.Client())
			}
			c := tc.client(t, rdbs)
			warm, err := c.TryAcquire(ctx, "warm-up", time.Minute, tc.opts)
			if err == nil {
				err = tc.release(warm)
			}
			if err != nil {
				t.Fatalf("warm-up: %v", err)
			}
			l, err := c.TryAcquire(ctx, "job", ttl, tc.opts)
			if err != nil {
				t.Fatalf("TryAcquire: %v", err)
			}
			r := &renewed{l: l}
			r.ka = l.KeepAlive(ctx, &withlock.KeepAliveOptions{Interval: interval, OnRenew: r.count})
			t.Cleanup(r.ka.Stop)
			for _, admin := range admins {
				scriptFlush(t, admin)
			}
			r.waitRenewals(t, 2, 4*ttl)
			r.ka.Stop()
			for i, admin := range admins {
				if n, err := admin.Exists(ctx, tc.key(l)).Result(); err != nil || n != 1 {
					t.Fatalf("server %d: before the release %s is missing (%d, %v)", i, tc.key(l), n, err)
				}
			}
			if err := tc.release(l); err != nil {
				t.Fatalf("release after SCRIPT FLUSH: %v", err)
			}
			for i, admin := range admins {
				if n, err := admin.Exists(ctx, tc.key(l)).Result(); err != nil || n != 0 {
					t.Errorf("server %d: after the release %s exists (%d, %v)", i, tc.key(l), n, err)
				}
			}
		})
	}
}

// clientOnFirst is a Client on the first of rdbs.
func clientOnFirst(_ *testing.T, rdbs []redis.UniversalClient) *withlock.Client {
	return withlock.New(rdbs[0], nil)
}

// A long-lived Client's releases and renewals where a server lacks the
// release script without anyone flushing it: a Cluster master that never
// had it or lost it, a promoted replica, a restarted server, and a server
// that evicted it.
// The helpers are noscript_test.go's.

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
