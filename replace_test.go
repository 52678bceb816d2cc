package withlock_test

import (
	"context"
	"errors"
	"os"
	"strconv"
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
	const ttl = 600 * time.Millisecond
	srv := redistest.Start(t)
	rdb := srv.Client()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
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
	if err := ka.Err(); !errors.As(err, &lerr) || !errors.Is(err, withlock.ErrReplaced) || lerr.ReplacedBy != host+":"+strconv.Itoa(os.Getpid()) {
		t.Fatalf("Err() = %v, want a LostError with ErrReplaced naming %s:%d", err, host, os.Getpid())
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
	select {
	case e := <-earlier:
		t.Errorf("the earlier waiter was served (%v) while the replacer holds the lock", e.err)
	default:
	}
	_ = o.lock.Release(ctx)
	if e := wait(t, earlier, promptly, "the earlier waiter after the replacer"); e.err == nil {
		_ = e.lock.Release(ctx)
	}
}

// Replace is refused, matching errors.ErrUnsupported, where the fair line
// cannot put the replacer first: a quorum, a semaphore, a fenced
// acquisition.
func TestReplaceUnsupportedWithoutTheFairLine(t *testing.T) {
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
		{"semaphore", semaphore(t, srv.Client(), 2), withlock.LockOptions{Replace: true}},
		{"fence", withlock.New(srv.Client(), nil), withlock.LockOptions{Replace: true, Fence: true}},
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
// tag and one without.
func TestReplaceOnClusterAndThroughSentinel(t *testing.T) {
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
		})
	}
}
