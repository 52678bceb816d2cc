package withlock_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// An Acquire with Replace goes first in the fair line and asks the holder
// to stop: the holder's KeepAlive reports the loss, naming the replacer,
// yet keeps renewing, so the key stays the holder's past its TTL until its
// Release hands it to the replacer, ahead of a waiter queued earlier.
func TestReplaceAsksTheHolderToStopAndGoesFirst(t *testing.T) {
	t.Parallel()
	const ttl = 600 * time.Millisecond
	srv := redistest.Start(t)
	rdb := srv.Client()
	me := holder(t) // the replacer's Client is in this process
	holder := mustAcquire(t, withlock.New(rdb, nil), "replaced", ttl)
	ka := holder.KeepAlive(context.Background(), nil)
	defer ka.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), servedWithin)
	defer cancel()
	earlier := acquireAsync(ctx, waitClient(t, srv), "replaced", time.Minute)
	clitest.Eventually(t, promptly, "the earlier waiter never joined the line", func() bool { return inLine(t, rdb, holder.Key()) == 1 })
	replacer := acquireAsyncWith(ctx, waitClient(t, srv), "replaced", time.Minute, &withlock.LockOptions{Replace: true})

	select {
	case <-ka.Lost():
	case <-time.After(promptly):
		t.Fatal("the holder's KeepAlive never reported the replacement")
	}
	var lerr *withlock.LostError
	if err := ka.Err(); !errors.As(err, &lerr) || !errors.Is(err, withlock.ErrReplaced) || lerr.ReplacedBy != me {
		t.Fatalf("Err() = %v, want a LostError with ErrReplaced naming %s", err, me)
	}
	// Two TTLs after the loss the key is still the holder's: renewed.
	clitest.Eventually(t, promptly, "the replaced lock was not kept alive", func() bool {
		return time.Since(holder.Acquired()) > 2*ttl
	})
	if v := rdb.Get(ctx, holder.Key()).Val(); v != holder.Token() {
		t.Fatalf("the key holds %q two TTLs after the replacement, want the holder's token until it releases", v)
	}
	select {
	case o := <-replacer:
		t.Fatalf("the replacer was served (%v) before the holder released", o.err)
	default:
	}
	ka.Stop()
	if err := holder.Release(ctx); err != nil {
		t.Fatalf("Release of the replaced lock: %v", err)
	}
	o := wait(t, replacer, promptly, "the replacer after the holder's release")
	if o.err != nil {
		t.Fatalf("replacer: %v", o.err)
	}
	earlierServedAfterTheReplacer(t, earlier, o, "the replacer holds the lock")
}

// earlierServedAfterTheReplacer checks that the waiter queued before the
// replacer has not been served while the replacer's lock o is held (while
// says how), then releases o and lets that waiter take the lock and
// release it.
func earlierServedAfterTheReplacer(t *testing.T, earlier <-chan outcome, o outcome, while string) {
	t.Helper()
	select {
	case e := <-earlier:
		t.Errorf("the earlier waiter was served (%v) while %s", e.err, while)
	default:
	}
	ctx := context.Background()
	_ = o.lock.Release(ctx)
	if e := wait(t, earlier, promptly, "the earlier waiter after the replacer"); e.err == nil {
		_ = e.lock.Release(ctx)
	}
}

// Replace is refused, matching errors.ErrUnsupported, where the fair line
// cannot put the replacer first: a quorum, a name without a line; and
// where the acquisition itself is: a semaphore waiting for replicas.
func TestReplaceUnsupportedWithoutTheFairLine(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	nodes := []redis.UniversalClient{srv.Client(), redistest.Start(t).Client(), redistest.Start(t).Client()}
	q, err := withlock.NewQuorum(nodes, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		c    *withlock.Client
		opts withlock.LockOptions
	}{
		{"quorum", q, withlock.LockOptions{Replace: true}},
		{"semaphore waiting for replicas", semaphore(t, srv.Client(), 2), withlock.LockOptions{Replace: true, MinReplicas: 1}},
		{"name with } and no hash tag", withlock.New(srv.Client(), nil), withlock.LockOptions{Replace: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), promptly)
			defer cancel()
			l, err := tt.c.Acquire(ctx, "unsupported-"+tt.name, time.Minute, &tt.opts)
			if !errors.Is(err, errors.ErrUnsupported) {
				t.Errorf("Acquire with Replace: %v, want errors.ErrUnsupported", err)
			}
			if l != nil {
				_ = l.Release(ctx)
			}
		})
	}
}

// Through Sentinel, and on a Cluster with the marker and the line in the
// lock key's slot: the holder learns of the replacement at its renewal,
// and its release hands the lock to the replacer, for a name with a hash
// tag and one without, and for a semaphore's oldest holder.
func TestReplaceOnClusterAndThroughSentinel(t *testing.T) {
	t.Parallel()
	deployments := []struct {
		name   string
		client func(t *testing.T) redis.UniversalClient
	}{
		{"cluster", func(t *testing.T) redis.UniversalClient { return redistest.StartCluster(t, 3).Client() }},
		{"sentinel", func(t *testing.T) redis.UniversalClient { return redistest.StartSentinels(t).Client(nil) }},
	}
	for _, d := range deployments {
		t.Run(d.name, func(t *testing.T) {
			rdb := d.client(t)
			for _, name := range []string{"c-replace", "{tag}c-replace"} {
				holder := mustAcquire(t, withlock.New(rdb, nil), name, 600*time.Millisecond)
				ka := holder.KeepAlive(context.Background(), nil)
				replacer := withlock.New(rdb, nil)
				withlock.SetWaitTimings(replacer, longPoll, time.Minute)
				got := acquireAsyncWith(context.Background(), replacer, name, time.Minute, &withlock.LockOptions{Replace: true})
				select {
				case <-ka.Lost():
				case <-time.After(promptly):
					t.Fatalf("%s: the holder never learnt of the replacement", name)
				}
				if err := ka.Err(); !errors.Is(err, withlock.ErrReplaced) {
					t.Fatalf("%s: Err() = %v, want ErrReplaced", name, err)
				}
				ka.Stop()
				if err := holder.Release(context.Background()); err != nil {
					t.Fatalf("%s: Release: %v", name, err)
				}
				o := wait(t, got, promptly, name)
				if o.err != nil {
					t.Fatalf("%s: %v", name, o.err)
				}
				if v := rdb.Get(context.Background(), holder.Key()).Val(); v != o.lock.Token() {
					t.Errorf("%s: key holds %q, want the replacer's token", name, v)
				}
				_ = o.lock.Release(context.Background())
			}
			// A semaphore's slots and the marker share the name's slot too;
			// the fenced replacer draws in it.
			sem := semaphore(t, rdb, 2)
			oldest := mustAcquire(t, sem, "s-replace", time.Second)
			younger := mustAcquire(t, sem, "s-replace", time.Minute)
			replacer := semaphore(t, rdb, 2)
			withlock.SetWaitTimings(replacer, longPoll, time.Minute)
			o := replaceHeld(t, "s-replace", oldest, replacer, &withlock.LockOptions{Fence: true})
			if o.err != nil {
				t.Fatalf("semaphore: %v", o.err)
			}
			if o.lock.Slot() != oldest.Slot() || o.lock.Fence() == 0 {
				t.Errorf("semaphore: slot %d, fence %d; want the oldest's slot %d, fenced", o.lock.Slot(), o.lock.Fence(), oldest.Slot())
			}
			_ = o.lock.Release(context.Background())
			_ = younger.Release(context.Background())
		})
	}
}

// replaceHeld lets an Acquire of name with Replace and opts on replacer
// ask holder, which holds name, to stop, releases holder once its KeepAlive reports the
// replacement, and returns the replacer's outcome.
func replaceHeld(t *testing.T, name string, holder *withlock.Lock, replacer *withlock.Client, opts *withlock.LockOptions) outcome {
	t.Helper()
	ctx := context.Background()
	ka := holder.KeepAlive(ctx, nil)
	defer ka.Stop()
	o := *opts
	o.Replace = true
	got := acquireAsyncWith(ctx, replacer, name, time.Minute, &o)
	select {
	case <-ka.Lost():
	case <-time.After(promptly):
		t.Fatal("the holder never learnt of the replacement")
	}
	if err := ka.Err(); !errors.Is(err, withlock.ErrReplaced) {
		t.Fatalf("the holder's KeepAlive: %v, want ErrReplaced", err)
	}
	ka.Stop()
	if err := holder.Release(ctx); err != nil {
		t.Fatalf("Release of the replaced lock: %v", err)
	}
	return wait(t, got, promptly, "the replacer after the holder's release")
}

// A fenced replacer gets a fencing number above the replaced holder's,
// drawn once the lock was handed to it (the hand-over itself draws none),
// for a plain lock and a semaphore's slot, and a later fenced acquisition
// gets a higher one still.
func TestReplaceFencedGetsAHigherNumber(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	fenced := &withlock.LockOptions{Fence: true}
	for _, slots := range []int{1, 2} {
		name := fmt.Sprintf("fenced-replace-%d", slots)
		c := semaphore(t, rdb, slots)
		holder := mustAcquireWith(t, c, name, time.Second, fenced)
		for range slots - 1 { // every slot taken, the holder's first
			_ = mustAcquireWith(t, c, name, time.Minute, fenced)
		}
		o := replaceHeld(t, name, holder, semaphoreWaitClient(t, srv, slots), fenced)
		if o.err != nil {
			t.Fatalf("%d slots: replacer: %v", slots, o.err)
		}
		if o.lock.Fence() <= holder.Fence() {
			t.Errorf("%d slots: the replacer's fence %d is not above the replaced holder's %d", slots, o.lock.Fence(), holder.Fence())
		}
		if n, err := rdb.Get(context.Background(), withlock.FenceKey(c, name)).Int64(); err != nil || n != o.lock.Fence() {
			t.Errorf("%d slots: the fence counter is %d (%v), want the replacer's %d", slots, n, err, o.lock.Fence())
		}
		_ = o.lock.Release(context.Background())
		if l := mustAcquireWith(t, c, name, time.Minute, fenced); l.Fence() <= o.lock.Fence() {
			t.Errorf("%d slots: a later fence %d is not above the replacer's %d", slots, l.Fence(), o.lock.Fence())
		}
	}
}

// A replacer with MinReplicas waits for replicas once it has the lock, as
// an acquisition with them does: with enough it holds a lock the replica
// has; with too few the error matches ErrNotReplicated and the lock is
// not left the replacer's.
func TestReplaceWithMinReplicasWaitsForThem(t *testing.T) {
	t.Parallel()
	master := redistest.Start(t, "repl-diskless-sync-delay", "0")
	replica := redistest.Start(t, "replicaof", "127.0.0.1 "+strconv.Itoa(master.Port), "repl-diskless-sync-delay", "0")
	ctx := context.Background()
	clitest.Eventually(t, promptly, "the replica never synced", func() bool {
		info, _ := replica.Client().Info(ctx, "replication").Result()
		return strings.Contains(info, "master_link_status:up")
	})
	// WAIT ends as soon as enough replicas acknowledge: the one replica's
	// bound can be generous, the second one's, never met, is spent whole.
	for _, want := range []int{1, 2} {
		name := fmt.Sprintf("replicated-replace-%d", want)
		holder := mustAcquire(t, withlock.New(master.Client(), nil), name, time.Second)
		o := replaceHeld(t, name, holder, waitClient(t, master), &withlock.LockOptions{MinReplicas: want, ReplicaTimeout: []time.Duration{1: 5 * time.Second, 2: 200 * time.Millisecond}[want]})
		switch {
		case want == 1 && o.err != nil:
			t.Errorf("with 1 replica of 1: %v", o.err)
		case want == 1:
			if v := replica.Client().Get(ctx, o.lock.Key()).Val(); v != o.lock.Token() {
				t.Errorf("with 1 replica of 1: the replica holds %q, want the replacer's token", v)
			}
			_ = o.lock.Release(ctx)
		case !errors.Is(o.err, withlock.ErrNotReplicated) || o.lock != nil:
			t.Errorf("with 1 replica of 2: got a lock %v, err %v; want an error matching ErrNotReplicated", o.lock != nil, o.err)
		default:
			if v := master.Client().Get(ctx, "lock:"+name).Val(); v != "" {
				t.Errorf("with 1 replica of 2: the key holds %q after the failure, want it free", v)
			}
		}
	}
}

// mustAcquireWith is mustAcquire with options.
func mustAcquireWith(t *testing.T, c *withlock.Client, name string, ttl time.Duration, opts *withlock.LockOptions) *withlock.Lock {
	t.Helper()
	l, err := c.TryAcquire(context.Background(), name, ttl, opts)
	if err != nil {
		t.Fatalf("TryAcquire %s: %v", name, err)
	}
	return l
}

// A replacer of a semaphore whose slots are all taken asks the oldest
// holder to stop, and only that one, goes first in line and takes the slot
// that holder releases, ahead of a waiter queued earlier.
func TestReplaceStopsTheOldestHolderOfASemaphore(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	holders := semaphore(t, rdb, 3)
	var held []*withlock.Lock
	var kas []*withlock.KeepAlive
	for range 3 {
		l := mustAcquire(t, holders, "sreplace", time.Second)
		ka := l.KeepAlive(ctx, nil)
		defer ka.Stop()
		held, kas = append(held, l), append(kas, ka)
	}
	oldest := held[0]
	earlier := acquireAsync(ctx, semaphoreWaitClient(t, srv, 3), "sreplace", time.Minute)
	clitest.Eventually(t, promptly, "the earlier waiter never joined the line", func() bool { return inLine(t, rdb, oldest.Key()) == 1 })
	replacer := acquireAsyncWith(ctx, semaphoreWaitClient(t, srv, 3), "sreplace", time.Minute, &withlock.LockOptions{Replace: true})
	select {
	case <-kas[0].Lost():
	case <-time.After(promptly):
		t.Fatal("the oldest holder never learnt of the replacement")
	}
	if err := kas[0].Err(); !errors.Is(err, withlock.ErrReplaced) {
		t.Fatalf("the oldest holder: %v, want ErrReplaced", err)
	}
	// Only the oldest is asked: a renewal of the others says nothing.
	for i, l := range held[1:] {
		if err := l.Extend(ctx, time.Second); err != nil {
			t.Errorf("holder %d of the younger: Extend = %v, want nil", i+1, err)
		}
	}
	kas[0].Stop()
	if err := oldest.Release(ctx); err != nil {
		t.Fatal(err)
	}
	o := wait(t, replacer, promptly, "the replacer after the oldest holder's release")
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.lock.Slot() != oldest.Slot() {
		t.Errorf("the replacer holds slot %d, want the oldest holder's %d", o.lock.Slot(), oldest.Slot())
	}
	earlierServedAfterTheReplacer(t, earlier, o, "every slot is held")
}

// A semaphore's replacer that gets a slot another holder freed takes back
// its request to stop the oldest holder, which it no longer needs.
func TestReplaceOfASemaphoreServedByAnotherSlotLeavesTheOldestRunning(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	holders := semaphore(t, rdb, 2)
	oldest := mustAcquire(t, holders, "sother", time.Minute) // no renewal during the test
	younger := mustAcquire(t, holders, "sother", time.Minute)
	replacer := acquireAsyncWith(ctx, semaphoreWaitClient(t, srv, 2), "sother", time.Minute, &withlock.LockOptions{Replace: true})
	clitest.Eventually(t, promptly, "the replacer never joined the line", func() bool { return inLine(t, rdb, oldest.Key()) == 1 })
	if err := younger.Release(ctx); err != nil {
		t.Fatal(err)
	}
	o := wait(t, replacer, promptly, "the replacer after the younger holder's release")
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.lock.Slot() != younger.Slot() {
		t.Errorf("the replacer holds slot %d, want the younger holder's %d", o.lock.Slot(), younger.Slot())
	}
	if err := oldest.Extend(ctx, time.Minute); err != nil {
		t.Errorf("the oldest holder's renewal: %v, want nil (still asked to stop?)", err)
	}
	_ = o.lock.Release(ctx)
	_ = oldest.Release(ctx)
}

// semaphoreWaitClient is waitClient for a semaphore of n slots.
func semaphoreWaitClient(t *testing.T, srv *redistest.Server, n int) *withlock.Client {
	c := semaphore(t, srv.Client(), n)
	withlock.SetWaitTimings(c, longPoll, 100*time.Millisecond)
	return c
}
