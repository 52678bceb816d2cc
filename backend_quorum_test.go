package withlock_test

import (
	"context"
	"errors"
	"strings"
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
