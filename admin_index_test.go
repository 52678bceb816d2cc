package withlock_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/redistest"
)

// List reads the index of the prefix's names instead of scanning: a name
// is in it from its first recorded release, or its holder's first renewal
// (Extend, as KeepAlive renews), also for a semaphore; the acquisition
// itself writes nothing more. Entries whose lock and records are all gone
// are pruned; Scan still finds what the index does not know.
func TestListReadsTheIndexOfNamesNotTheKeyspace(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	c := withlock.New(rdb, nil)
	sem, err := withlock.NewSemaphore(rdb, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 { // keys beside the locks, under the prefix too
		rdb.Set(ctx, fmt.Sprint("cache:", i), "x", time.Minute)
	}
	runOnce(t, c, "recorded", 3) // admin_records.go's test helper
	renewed, err := c.TryAcquire(ctx, "renewed", 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := renewed.Extend(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	slot, err := sem.TryAcquire(ctx, "{sem}", 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := slot.Extend(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	fresh, err := c.TryAcquire(ctx, "fresh", 10*time.Second, nil) // not renewed yet
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Release(ctx)
	rdb.Set(ctx, "lock:foreign", "elsewhere:1:abc", time.Minute) // another program's
	// A stale entry: indexed once, its lock and records gone since.
	runOnce(t, c, "gone", 0)
	rdb.Del(ctx, "{lock:gone}:last", "{lock:gone}:ok", "{lock:gone}:runs")

	names := func(list []*withlock.Status) []string {
		var out []string
		for _, st := range list {
			out = append(out, st.Key)
		}
		return out
	}
	mon := srv.Monitor()
	list, err := c.List(ctx, &withlock.ListOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(list), []string{"lock:recorded", "lock:renewed", "lock:{sem}"}; !slices.Equal(got, want) {
		t.Errorf("List from the index = %q, want %q", got, want)
	}
	for _, cmd := range mon.Commands() {
		if cmd.Args[0] == "scan" || cmd.Args[0] == "keys" {
			t.Errorf("List sent %s", cmd)
		}
	}
	if members := rdb.SMembers(ctx, "{lock:}:index").Val(); slices.Contains(members, "lock:gone") {
		t.Errorf("the stale entry lock:gone is still indexed: %q", members)
	}
	if held, err := c.List(ctx, nil); err != nil || !slices.Equal(names(held), []string{"lock:renewed", "lock:{sem}"}) {
		t.Errorf("List of the held = %q, %v; want the renewed lock and the semaphore", names(held), err)
	}
	scanned, err := c.List(ctx, &withlock.ListOptions{All: true, Scan: true})
	if want := []string{"lock:foreign", "lock:fresh", "lock:recorded", "lock:renewed", "lock:{sem}"}; err != nil || !slices.Equal(names(scanned), want) {
		t.Errorf("List with Scan = %q, %v; want %q", names(scanned), err, want)
	}
}

// Pruning checks each name again as it removes it: a name whose lock or
// records came back since List read it stays in the index.
func TestIndexPruningKeepsANameThatCameBack(t *testing.T) {
	rdb := startRedis(t)
	ctx := context.Background()
	c := withlock.New(rdb, nil)
	rdb.SAdd(ctx, "{lock:}:index", "lock:back", "lock:recorded", "lock:gone")
	rdb.Set(ctx, "lock:back", "otherhost:1:abc", time.Minute) // taken again meanwhile
	rdb.Set(ctx, "{lock:recorded}:last", "{}", time.Minute)
	if err := withlock.Unindex(ctx, c, "lock:back", "lock:recorded", "lock:gone"); err != nil {
		t.Fatal(err)
	}
	got := rdb.SMembers(ctx, "{lock:}:index").Val()
	slices.Sort(got)
	if want := []string{"lock:back", "lock:recorded"}; !slices.Equal(got, want) {
		t.Errorf("index after pruning = %q, want %q", got, want)
	}
}

// A holder that takes its lock back after Redis lost it (Reacquire) puts
// its name back into the index too, which Redis lost with the key.
func TestReacquiredLockIsIndexedAgain(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	c := kaClient(t, srv, time.Second)
	l, err := c.TryAcquire(ctx, "back", 2*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	rl := make(renewLog, 16) // keepalive_reacquire_test.go
	ka := l.KeepAlive(ctx, &withlock.KeepAliveOptions{Reacquire: true, OnRenew: rl.onRenew})
	defer ka.Stop()
	rl.waitFor(t, ka, nil, 5*time.Second) // the first renewal indexes it
	if !rdb.SIsMember(ctx, "{lock:}:index", l.Key()).Val() {
		t.Fatal("not indexed after the first renewal")
	}
	rdb.FlushAll(ctx)
	rl.waitFor(t, ka, withlock.ErrReacquired, 5*time.Second)
	rl.waitFor(t, ka, nil, 5*time.Second) // a renewal after the reacquisition
	if !rdb.SIsMember(ctx, "{lock:}:index", l.Key()).Val() {
		t.Error("the reacquired lock is not in the index after its next renewal")
	}
}
