package withlock_test

// The quorum (NewQuorum): a majority decides each call; its members slow,
// down, busy or late.

import (
	"context"
	"errors"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/redistest"
)

// quorumNodes starts three independent masters and a quorum client on them.
func quorumNodes(t *testing.T) ([]*redistest.Server, []*redis.Client, *withlock.Client) {
	t.Helper()
	return quorumNodesWith(t, 2*time.Second)
}

// quorumNodesWith is quorumNodes whose nodes' clients never retry and time
// out dials, reads and writes after timeout.
func quorumNodesWith(t *testing.T, timeout time.Duration) ([]*redistest.Server, []*redis.Client, *withlock.Client) {
	t.Helper()
	var servers []*redistest.Server
	var admins []*redis.Client
	var nodes []redis.UniversalClient
	for range 3 {
		s := redistest.Start(t)
		servers = append(servers, s)
		admins = append(admins, s.Client())
		nodes = append(nodes, s.ClientWith(&redis.Options{MaxRetries: -1, DialerRetries: 1,
			DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout}))
	}
	c, err := withlock.NewQuorum(nodes, nil)
	if err != nil {
		t.Fatal(err)
	}
	return servers, admins, c
}

// onNodes returns the value of key on each node ("" when missing or the
// node is down).
func onNodes(admins []*redis.Client, key string) []string {
	vals := make([]string, len(admins))
	for i, a := range admins {
		vals[i], _ = a.Get(context.Background(), key).Result()
	}
	return vals
}

func count(vals []string, want string) int {
	n := 0
	for _, v := range vals {
		if v == want {
			n++
		}
	}
	return n
}

func TestQuorum(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	servers, admins, c := quorumNodes(t)

	t.Run("all up: the key is on every node, and released from every node", func(t *testing.T) {
		l := mustAcquire(t, c, "all", 10*time.Second)
		if got := onNodes(admins, l.Key()); count(got, l.Token()) != 3 {
			t.Fatalf("key on nodes = %q, want our token on all 3", got)
		}
		if ttl, err := l.TTL(ctx); err != nil || ttl <= 0 || ttl > 10*time.Second {
			t.Fatalf("TTL = %v, %v; want in (0, 10s]", ttl, err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if got := onNodes(admins, l.Key()); count(got, "") != 3 {
			t.Fatalf("after release: %q", got)
		}
	})

	t.Run("a majority held by another owner is busy, and leaves no key of ours", func(t *testing.T) {
		owner := mustAcquire(t, c, "busy", 10*time.Second)
		defer owner.Release(ctx)
		// One node is free (the owner lost it): still no majority for us.
		admins[0].Del(ctx, owner.Key())
		_, err := c.TryAcquire(ctx, "busy", 10*time.Second, nil)
		var held *withlock.NotObtainedError
		if !errors.As(err, &held) || !errors.Is(err, withlock.ErrNotObtained) {
			t.Fatalf("err = %v, want *NotObtainedError", err)
		}
		if held.Holder.ID != withlock.HolderOf(owner.Token()) || held.Holder.TTL <= 0 {
			t.Fatalf("held = %+v, want holder %s with a TTL", held, withlock.HolderOf(owner.Token()))
		}
		if v := onNodes(admins, owner.Key())[0]; v != "" {
			t.Fatalf("the failed attempt left %q on node 1", v)
		}
	})

	t.Run("a foreign key on a minority does not stop us and survives our release", func(t *testing.T) {
		admins[2].Set(ctx, "lock:minority", "other:1:x", time.Minute)
		l := mustAcquire(t, c, "minority", 10*time.Second)
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if got := onNodes(admins, "lock:minority"); got[2] != "other:1:x" || got[0] != "" || got[1] != "" {
			t.Fatalf("after release: %q", got)
		}
	})

	t.Run("no validity time left: refused and released", func(t *testing.T) {
		// The allowed clock drift alone exceeds a 1ms TTL.
		_, err := c.TryAcquire(ctx, "validity", time.Millisecond, nil)
		if !errors.Is(err, withlock.ErrNoQuorum) || errors.Is(err, withlock.ErrNotObtained) {
			t.Fatalf("err = %v, want ErrNoQuorum", err)
		}
	})

	t.Run("fencing is refused on a quorum", func(t *testing.T) {
		_, err := c.TryAcquire(ctx, "fence", time.Second, &withlock.LockOptions{Fence: true})
		if !errors.Is(err, errors.ErrUnsupported) {
			t.Fatalf("err = %v, want errors.ErrUnsupported", err)
		}
	})

	t.Run("a lock that lost its majority is not held", func(t *testing.T) {
		l := mustAcquire(t, c, "lost", 10*time.Second)
		admins[0].Del(ctx, l.Key())
		admins[1].Set(ctx, l.Key(), "thief:1:x", time.Minute)
		if err := l.Extend(ctx, 10*time.Second); !errors.Is(err, withlock.ErrLockNotHeld) {
			t.Fatalf("Extend = %v, want ErrLockNotHeld", err)
		}
		if got := onNodes(admins, l.Key()); got[0] != "" {
			t.Fatalf("Extend without a majority recreated the key: %q", got)
		}
		if _, err := l.TTL(ctx); !errors.Is(err, withlock.ErrLockNotHeld) {
			t.Fatalf("TTL = %v, want ErrLockNotHeld", err)
		}
		if err := l.Release(ctx); !errors.Is(err, withlock.ErrLockNotHeld) {
			t.Fatalf("Release = %v, want ErrLockNotHeld", err)
		}
		if got := onNodes(admins, l.Key())[1]; got != "thief:1:x" {
			t.Fatalf("the other owner's key became %q", got)
		}
	})

	t.Run("Acquire waits for a quorum lock to be released", func(t *testing.T) {
		owner := mustAcquire(t, c, "wait", 10*time.Second)
		// Closed just before the release is sent: the waiter may win the
		// lock before Release itself returns, but never before it starts.
		releasing := make(chan struct{})
		go func() {
			time.Sleep(200 * time.Millisecond) // lets the waiter find it busy
			close(releasing)
			_ = owner.Release(ctx)
		}()
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		l, err := c.Acquire(wctx, "wait", 10*time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-releasing:
		default:
			t.Fatal("Acquire returned before the owner released")
		}
		_ = l.Release(ctx)
	})

	t.Run("Status: held only when one token is on a majority", func(t *testing.T) {
		l := mustAcquire(t, c, "status", 10*time.Second)
		admins[0].PExpire(ctx, l.Key(), 3*time.Second) // the quorum-th longest is then the shorter of the other two
		st, err := c.Status(ctx, "status")
		if err != nil {
			t.Fatal(err)
		}
		if !st.Held || st.Holder.ID != withlock.HolderOf(l.Token()) || st.Holder.TTL <= 3*time.Second || st.Holder.TTL > 10*time.Second {
			t.Fatalf("Status = %+v, want held by %s with 3s < TTL <= 10s", st, withlock.HolderOf(l.Token()))
		}
		admins[1].Set(ctx, l.Key(), "thief:1:x", time.Minute) // ours on 2 nodes, one of them expiring soon
		admins[2].Del(ctx, l.Key())                           // ours on a minority now
		if st, err = c.Status(ctx, "status"); err != nil || st.Held {
			t.Fatalf("Status = %+v, %v; want free when no token is on a majority", st, err)
		}
		_ = l.Release(ctx)
		admins[1].Del(ctx, l.Key())
	})

	// The remaining subtests stop and restart nodes; they run last.
	t.Run("restarted nodes: Extend keeps the majority and repairs the lost key", func(t *testing.T) {
		l := mustAcquire(t, c, "restart", 10*time.Second)
		servers[0].Restart() // no persistence: the key is gone there
		// A renewal repairs the nodes that answered it in time; one that
		// missed it (a slow reconnect on a loaded machine) is left to the
		// next, as KeepAlive's regular renewals would.
		eventually(t, "Extend puts the key back on the restarted node", func() bool {
			if err := l.Extend(ctx, 10*time.Second); err != nil {
				t.Fatalf("Extend after one restart: %v", err)
			}
			return onNodes(admins, l.Key())[0] == l.Token()
		})
		servers[1].Restart() // a second node loses it: the repaired one keeps the majority
		if err := l.Extend(ctx, 10*time.Second); err != nil {
			t.Fatalf("Extend after a second restart: %v", err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if got := onNodes(admins, l.Key()); count(got, "") != 3 {
			t.Fatalf("after release: %q", got)
		}
	})

	t.Run("one node down: still works", func(t *testing.T) {
		servers[2].Kill()
		defer servers[2].Restart()
		l := mustAcquire(t, c, "one-down", 10*time.Second)
		steps := map[string]func() error{
			"Extend":  func() error { return l.Extend(ctx, 10*time.Second) },
			"TTL":     func() error { _, err := l.TTL(ctx); return err },
			"Release": func() error { return l.Release(ctx) },
		}
		for _, step := range []string{"Extend", "TTL", "Release"} {
			if err := steps[step](); err != nil {
				t.Fatalf("%s with one node down: %v", step, err)
			}
		}
	})

	t.Run("two nodes down: ErrNoQuorum, and nothing left behind", func(t *testing.T) {
		servers[1].Kill()
		servers[2].Kill()
		if _, err := c.Status(ctx, "status"); !errors.Is(err, withlock.ErrNoQuorum) {
			t.Fatalf("Status with one node of three = %v, want ErrNoQuorum", err)
		}
		if _, err := c.History(ctx, "status", 0); !errors.Is(err, withlock.ErrNoQuorum) {
			t.Fatalf("History with one node of three = %v, want ErrNoQuorum", err)
		}
		if _, err := c.List(ctx, nil); !errors.Is(err, withlock.ErrNoQuorum) {
			t.Fatalf("List with one node of three = %v, want ErrNoQuorum", err)
		}
		defer servers[1].Restart()
		defer servers[2].Restart()
		_, err := c.TryAcquire(ctx, "two-down", 10*time.Second, nil)
		if !errors.Is(err, withlock.ErrNoQuorum) || errors.Is(err, withlock.ErrNotObtained) {
			t.Fatalf("err = %v, want ErrNoQuorum", err)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Fatalf("error spans several lines: %q", err)
		}
		if v := onNodes(admins[:1], "lock:two-down")[0]; v != "" {
			t.Fatalf("the surviving node kept %q", v)
		}
	})
}

// A node that was busy with another owner's short claim when the lock was
// taken gets our key the moment that claim expires, not at the next
// renewal: after that the lock survives the loss of either other node.
//
// Not parallel: the other owner's key must outlive the acquisition and
// expire well before the first renewal, which a loaded machine blurs.
func TestQuorumKeepAliveRepairsABusyNodeOnceItIsFree(t *testing.T) {
	ctx := context.Background()
	servers, admins, c := quorumNodes(t)
	const ttl = 3 * time.Second
	const interval = ttl / 3 // KeepAlive's default
	const foreign = 400 * time.Millisecond
	key := c.Key("repair-busy")
	admins[2].Set(ctx, key, "other:1:abc", foreign)
	freeAt := time.Now().Add(foreign)
	l := mustAcquire(t, c, "repair-busy", ttl)
	if got := onNodes(admins, key); count(got, l.Token()) != 2 || got[2] != "other:1:abc" {
		t.Fatalf("key on nodes = %q, want ours on nodes 1 and 2, the other owner's on node 3", got)
	}
	ka := l.KeepAlive(ctx, nil)
	defer ka.Stop()

	regular := l.Acquired().Add(interval) // the first regular renewal
	for onNodes(admins[2:], key)[0] != l.Token() {
		if time.Now().After(regular) {
			t.Fatalf("node 3 lacks our key at the first regular renewal, %s after the other owner's key expired",
				time.Since(freeAt).Round(time.Millisecond))
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Logf("node 3 repaired %s after the other owner's key expired (regular renewal due %s later)",
		time.Since(freeAt).Round(time.Millisecond), time.Until(regular).Round(time.Millisecond))
	if d := admins[2].PTTL(ctx, key).Val(); d <= 0 || d > ttl {
		t.Errorf("repaired key's PTTL = %s, want within (0, %s]", d, ttl)
	}

	servers[1].Kill()
	killedAt := time.Now()
	// A TTL and a renewal past the kill: only renewals on the two
	// surviving nodes can have kept the lock.
	for time.Since(killedAt) < ttl+interval {
		select {
		case <-ka.Lost():
			t.Fatalf("lost %s after node 2 was killed: %v", time.Since(killedAt).Round(time.Millisecond), ka.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	// Not node 2: an admin client retries a dead server for seconds.
	if got := onNodes([]*redis.Client{admins[0], admins[2]}, key); count(got, l.Token()) != 2 {
		t.Fatal("nodes 1 and 3 do not both hold our key")
	}
	ka.Stop()
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// Once the majority is gone, a node that becomes free is never given our
// key: the lock is presumed lost at its local deadline instead.
func TestQuorumKeepAliveNeverRepairsWithoutMajority(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	servers, admins, c := quorumNodes(t)
	const ttl = 1200 * time.Millisecond
	const foreign = 150 * time.Millisecond
	key := c.Key("repair-minority")
	admins[2].Set(ctx, key, "other:1:abc", foreign)
	l := mustAcquire(t, c, "repair-minority", ttl)
	servers[1].Kill() // ours on node 1 only: a minority, before node 3 is free
	killedAt := time.Now()
	ka := l.KeepAlive(ctx, nil)
	defer ka.Stop()
	lostAt := waitLost(t, ka, 3*ttl)
	t.Logf("majority lost: loss reported %s after the kill (TTL %s, margin %s): %v",
		lostAt.Sub(killedAt).Round(time.Millisecond), ttl, withlock.DefaultMargin(ttl), ka.Err())
	if !errors.Is(ka.Err(), withlock.ErrNoQuorum) {
		t.Errorf("Err() = %v, want a presumed loss carrying ErrNoQuorum", ka.Err())
	}
	if lostAt.Sub(l.Acquired()) >= ttl {
		t.Errorf("loss reported %s after acquisition, not before the TTL (%s)", lostAt.Sub(l.Acquired()), ttl)
	}
	if v := onNodes(admins[2:], key)[0]; v == l.Token() {
		t.Fatal("node 3 was given our key while we held only a minority")
	}
}

// A quorum whose members differ: a slow or stopped member, and records on a
// majority.

// slowTimeout is the nodes' read timeout in the slow-member tests: a call
// that waited for the stopped member would take that long.
const slowTimeout = 3 * time.Second

// A quorum does not wait for a member that does not answer once a majority
// has: acquiring, renewing and releasing each return in well under the
// member's timeout. Its claim, which the member runs when it resumes, does
// not leave our key there: a claim answering after the lock was released,
// or after the acquisition failed, removes its key, and a release the
// member did not confirm is queued for it.
func TestQuorumSlowMemberCostsNothingAndKeepsNoKeyOfOurs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		warm bool // the member already has a connection: the claim itself reaches it, not a handshake
		busy bool // another owner holds the other two: the acquisition fails
	}{
		{"stopped before its first connection", false, false},
		{"stopped with a connection open", true, false},
		{"stopped with a connection open, while the others refuse", true, true},
		// The clean-up queued for the member runs before the claim, which
		// waits behind the handshake of its new connection: only the
		// claim's own clean-up, on its late answer, removes its key.
		{"stopped before its first connection, while the others refuse", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			servers, admins, c := quorumNodesWith(t, slowTimeout)
			if tc.warm {
				if err := mustAcquire(t, c, "warm-up", time.Minute).Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if tc.busy {
				for _, a := range admins[:2] {
					a.Set(ctx, "lock:job", foreignToken, time.Minute)
				}
			}
			slow := servers[2]
			mon := slow.Monitor()
			slow.Signal(syscall.SIGSTOP)
			resumed := false
			resume := func() {
				if !resumed {
					resumed = true
					slow.Signal(syscall.SIGCONT)
				}
			}
			defer resume()

			took := func(what string, f func() error) error {
				t.Helper()
				start := time.Now()
				err := f()
				if d := time.Since(start); d >= slowTimeout/2 {
					t.Errorf("%s took %s with one member stopped; want under %s", what, d, slowTimeout/2)
				}
				return err
			}
			var l *withlock.Lock
			err := took("TryAcquire", func() (err error) {
				l, err = c.TryAcquire(ctx, "job", time.Minute, nil)
				return err
			})
			var token string
			switch {
			case tc.busy && !errors.Is(err, withlock.ErrNotObtained):
				t.Fatalf("TryAcquire with two members held by another owner: %v; want ErrNotObtained", err)
			case tc.busy:
			case err != nil:
				t.Fatalf("TryAcquire with one member stopped: %v", err)
			default:
				token = l.Token()
				if err := took("Extend", func() error { return l.Extend(ctx, time.Minute) }); err != nil {
					t.Errorf("Extend: %v", err)
				}
				if err := took("Release", func() error { return l.Release(ctx) }); err != nil {
					t.Errorf("Release: %v", err)
				}
			}
			resume()

			// The member runs our claim once it resumes, and then removes
			// it again: by the release queued for it, or by the claim's
			// own clean-up when its late answer comes.
			deadline := time.Now().Add(2 * slowTimeout)
			var claimed, key string
			for {
				for _, cmd := range mon.Commands() {
					// EVAL script 1 lock:job token 60000: a claim for a
					// minute (a release's second argument is 0).
					a := cmd.Args
					if len(a) == 6 && strings.EqualFold(a[0], "eval") && a[3] == "lock:job" && a[5] == "60000" {
						claimed = a[4]
					}
				}
				key, _ = admins[2].Get(ctx, "lock:job").Result()
				if claimed != "" && key != claimed || time.Now().After(deadline) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if claimed == "" {
				t.Fatal("the stopped member never ran our claim once resumed: this tested nothing")
			}
			if token != "" && claimed != token {
				t.Fatalf("the member ran a claim for %q, not our lock's token", claimed)
			}
			if key == claimed {
				t.Errorf("the member that answered late keeps our key, PTTL %s", admins[2].PTTL(ctx, "lock:job").Val())
			}
			if tc.busy {
				for i, a := range admins[:2] {
					if v := a.Get(ctx, "lock:job").Val(); v != foreignToken {
						t.Errorf("node %d: the other owner's key became %q", i+1, v)
					}
				}
			}
		})
	}
}

// On a quorum a run's record counts as stored when a majority of the nodes
// stored it: with one of three down, ReleaseAndRecord succeeds and Status
// reads the run; with two down, both the release's and the record's errors
// match ErrNoQuorum.
func TestQuorumRecordIsStoredWhenAMajorityStoresIt(t *testing.T) {
	t.Parallel()
	servers, admins, c := quorumNodes(t)
	ctx := context.Background()
	l := onEveryNode(t, admins, mustAcquire(t, c, "rec", time.Minute))
	servers[2].Kill()
	if err := errors.Join(l.ReleaseAndRecord(ctx, withlock.Run{ExitCode: 4}, recordTTL)); err != nil {
		t.Errorf("ReleaseAndRecord with 2 of 3 nodes up = %v, want it stored", err)
	}
	st, err := c.Status(ctx, "rec")
	if err != nil {
		t.Fatal(err)
	}
	if st.LastRun == nil || st.LastRun.ExitCode != 4 {
		t.Errorf("Status after recording on 2 of 3 nodes: last run %+v, want exit 4", st.LastRun)
	}

	l = onEveryNode(t, admins[:2], mustAcquire(t, c, "rec", time.Minute))
	servers[1].Kill()
	err = l.ReleaseAndRecord(ctx, withlock.Run{ExitCode: 5}, recordTTL)
	if !errors.Is(err, withlock.ErrNoQuorum) || !errors.Is(err, withlock.ErrNotReleased) || !errors.Is(err, withlock.ErrNotRecorded) {
		t.Errorf("ReleaseAndRecord with 1 of 3 nodes up = %v; want ErrNoQuorum for both the release (ErrNotReleased) and the record (ErrNotRecorded)", err)
	}
	// The one node up has it all the same: a record is written wherever it can be.
	if v := admins[0].Exists(ctx, "{lock:rec}:last").Val(); v != 1 {
		t.Errorf("the node that was up has no record")
	}
}

// On a quorum Status shows the newest record of the nodes: a node that kept
// an older run's record (it missed the last one) does not hide the last run.
func TestQuorumStatusShowsTheNewestRecord(t *testing.T) {
	t.Parallel()
	_, admins, c := quorumNodes(t)
	ctx := context.Background()
	var older string
	for code := range 2 {
		l := mustAcquire(t, c, "newest", time.Minute)
		if err := errors.Join(l.ReleaseAndRecord(ctx, withlock.Run{ExitCode: code}, recordTTL)); err != nil {
			t.Fatal(err)
		}
		if code == 0 {
			older = admins[2].Get(ctx, "{lock:newest}:last").Val()
		}
	}
	for _, i := range []int{0, 2} { // the first and the last node missed the last run
		if err := admins[i].Set(ctx, "{lock:newest}:last", older, recordTTL).Err(); err != nil {
			t.Fatal(err)
		}
	}
	st, err := c.Status(ctx, "newest")
	if err != nil {
		t.Fatal(err)
	}
	if st.LastRun == nil || st.LastRun.ExitCode != 1 {
		t.Errorf("Status with the last run's record on one node of three: last run %+v, want the newest, exit 1", st.LastRun)
	}
}

// quorumAdminTimeout is the nodes' read timeout in the admin tests with a
// stopped member: a call that waited for it would take that long.
// quorumAdminBound is how long each call may take: generous for a loaded
// machine, and still well under the timeout.
const (
	quorumAdminTimeout = 20 * time.Second
	quorumAdminBound   = 10 * time.Second
)

// within runs f and fails the test unless it returns within
// quorumAdminBound.
func within[T any](t *testing.T, what string, f func() (T, error)) (T, error) {
	t.Helper()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-time.After(quorumAdminBound):
		t.Fatalf("%s did not return within %s with one member stopped", what, quorumAdminBound)
	}
	panic("unreachable")
}

// With one of three members stopped, Status, List and Break answer from
// the other two without waiting for it, as with every member up, and
// name it in Status.Unanswered, which is empty while every member answers.
func TestQuorumAdminAnswersFromAMajorityWithAMemberStopped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	servers, admins, c := quorumNodesWith(t, quorumAdminTimeout)
	mustAcquire(t, c, "job", time.Minute)
	me := holder(t)
	if st, err := c.Status(ctx, "job"); err != nil {
		t.Fatalf("Status with every member up: %v", err)
	} else if st.Unanswered != nil {
		t.Fatalf("Status with every member up: Unanswered %v, want none", st.Unanswered)
	}
	servers[2].Signal(syscall.SIGSTOP)
	defer servers[2].Signal(syscall.SIGCONT) // a second SIGCONT does nothing
	check := func(what string, st *withlock.Status, held bool) {
		t.Helper()
		if st.Held != held || held && st.Holder.ID != me {
			t.Errorf("%s: held %v by %q, want held %v by %q", what, st.Held, st.Holder.ID, held, me)
		}
		if !slices.Equal(st.Unanswered, []int{3}) {
			t.Errorf("%s: Unanswered %v, want [3]", what, st.Unanswered)
		}
	}

	st, err := within(t, "Status", func() (*withlock.Status, error) { return c.Status(ctx, "job") })
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	check("Status", st, true)

	list, err := within(t, "List", func() ([]*withlock.Status, error) { return c.List(ctx, nil) })
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(list) != 1 || list[0].Key != "lock:job" {
		t.Fatalf("List: %d locks, want lock:job only", len(list))
	}
	check("List", list[0], true)

	st, err = within(t, "Break", func() (*withlock.Status, error) { return c.Break(ctx, "job") })
	if err != nil {
		t.Fatalf("Break: %v", err)
	}
	check("Break", st, true)
	if got := onNodes(admins[:2], "lock:job"); !slices.Equal(got, []string{"", ""}) {
		t.Errorf("after Break the members that answered hold %q", got)
	}

	st, err = within(t, "Status after Break", func() (*withlock.Status, error) { return c.Status(ctx, "job") })
	if err != nil {
		t.Fatalf("Status after Break: %v", err)
	}
	check("Status after Break", st, false)
	servers[2].Signal(syscall.SIGCONT)
}

// onEveryNode returns l once its key is on each of admins' nodes. An
// acquisition needs only a majority, and a node that answers after the
// race's grace (a loaded machine) is left without the key until a renewal
// repairs it, as KeepAlive would: a test that then stops a node that holds
// it must first know that the others do.
func onEveryNode(t *testing.T, admins []*redis.Client, l *withlock.Lock) *withlock.Lock {
	t.Helper()
	ctx := context.Background()
	eventually(t, "the lock's key on every node", func() bool {
		if count(onNodes(admins, l.Key()), l.Token()) == len(admins) {
			return true
		}
		if err := l.Extend(ctx, time.Minute); err != nil {
			t.Fatalf("Extend: %v", err)
		}
		return false
	})
	return l
}

// A contender that finds one node down, the lock held on another, and the
// third slower to answer than the race's grace waits for the third
// (settleGrace): held on two of three is busy (ErrNotObtained, the CLI's
// 75), not a quorum that cannot be reached (ErrNoQuorum, 69).
func TestQuorumContenderTellsBusyFromUnreachableWithANodeDownAndOneSlow(t *testing.T) {
	t.Parallel()
	servers, admins, c := quorumNodes(t)
	ctx := context.Background()
	for _, a := range admins[1:] {
		if err := a.Set(ctx, "lock:split", foreignToken, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	servers[0].Kill()
	// The third node answers 120 ms late: past lateGrace, within settleGrace.
	if err := admins[2].Do(ctx, "CLIENT", "PAUSE", 120, "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	_, err := c.TryAcquire(ctx, "split", time.Minute, nil)
	if !errors.Is(err, withlock.ErrNotObtained) || errors.Is(err, withlock.ErrNoQuorum) {
		t.Errorf("TryAcquire with the lock held on the two nodes up, one slow: %v; want ErrNotObtained, not ErrNoQuorum", err)
	}
}
