package withlock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/redistest"
)

// On a Cluster, List reads the index of names on the master of its slot
// and the locks it names on theirs, without a SCAN: a lock on each master
// is listed, a lock just taken is listed, a released one is not, a paused
// name is listed, and a renewal, a recorded run and a semaphore's slot, whose scripts cannot
// write the index on a Cluster, write it beside them. Pruning keeps its
// promises there though it cannot check and change in one script.
func TestClusterListReadsTheIndexOfNames(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	ctx := context.Background()
	rdb := cl.Client()
	c := withlock.New(rdb, nil)

	t.Run("every master's locks, from the moment they are taken, without a SCAN", func(t *testing.T) {
		onNode := map[*redistest.Server]string{}
		for i := 0; len(onNode) < 3 && i < 100; i++ {
			name := fmt.Sprint("spread-", i)
			if node := cl.NodeFor(c.Key(name)); onNode[node] == "" {
				onNode[node] = name
			}
		}
		if len(onNode) != 3 {
			t.Fatalf("names landed on %d masters, want 3", len(onNode))
		}
		var trips tripLog
		lister := cl.Client()
		lister.AddHook(&trips)
		lc := withlock.New(lister, nil)
		var want []string
		var held []*withlock.Lock
		for _, name := range onNode {
			l := mustAcquire(t, c, name, time.Minute)
			defer l.Release(ctx)
			held = append(held, l)
			want = append(want, l.Key())
			slices.Sort(want)
			// Listed at once: the acquisition wrote the index in its
			// round trip.
			list, err := lc.List(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := keysOf(list); !slices.Equal(got, want) {
				t.Errorf("List right after %s was taken = %q, want %q", l.Key(), got, want)
			}
		}
		for _, trip := range trips.reset() {
			for _, name := range trip {
				if name == "scan" || name == "keys" {
					t.Errorf("List sent %s", name)
				}
			}
		}
		if err := held[0].Release(ctx); err != nil {
			t.Fatal(err)
		}
		list, err := lc.List(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		want = slices.DeleteFunc(want, func(k string) bool { return k == held[0].Key() })
		if got := keysOf(list); !slices.Equal(got, want) {
			t.Errorf("List after %s was released = %q, want %q", held[0].Key(), got, want)
		}
	})

	t.Run("a paused name is listed", func(t *testing.T) {
		if _, err := c.Pause(ctx, "paused", withlock.Pause{}); err != nil {
			t.Fatal(err)
		}
		defer c.Resume(ctx, "paused")
		list, err := c.List(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if i := slices.Index(keysOf(list), c.Key("paused")); i < 0 || list[i].Paused == nil {
			t.Errorf("List = %q, want the paused name, paused", keysOf(list))
		}
	})

	t.Run("a renewal, a recorded run and a semaphore's slot write the index beside their scripts", func(t *testing.T) {
		sem, err := withlock.NewSemaphore(rdb, 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		renewed := mustAcquire(t, c, "renewed", time.Minute)
		defer renewed.Release(ctx)
		slot := mustAcquire(t, sem, "{sem}", time.Minute)
		defer slot.Release(ctx)
		runOnce(t, c, "recorded", 3) // admin_records_test.go
		rdb.HDel(ctx, indexOf, renewed.Key(), slot.Key(), c.Key("recorded"))
		if err := renewed.Extend(ctx, time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := slot.Extend(ctx, time.Minute); err != nil {
			t.Fatal(err)
		}
		l := mustAcquire(t, c, "recorded", time.Minute) // trusted: no write of its own
		if err := l.ReleaseAndRecord(ctx, withlock.Run{ExitCode: 3}, time.Minute); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{renewed.Key(), slot.Key(), c.Key("recorded")} {
			if !rdb.HExists(ctx, indexOf, key).Val() {
				t.Errorf("%s is not in the index", key)
			}
		}
		list, err := c.List(ctx, &withlock.ListOptions{All: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{renewed.Key(), slot.Key(), c.Key("recorded")} {
			if !slices.Contains(keysOf(list), key) {
				t.Errorf("List --all = %q misses %s", keysOf(list), key)
			}
		}
	})

	// WAIT counts the writes of one connection, so MinReplicas sends the
	// SET on a connection to the key's master: the name goes to the
	// index's master through the Cluster client all the same. (These
	// masters have no replica: the acquisition then gives the lock up.)
	t.Run("an acquisition with MinReplicas writes the index on its master", func(t *testing.T) {
		name := ""
		for i := 0; name == "" && i < 100; i++ {
			if n := fmt.Sprint("replicated-", i); cl.NodeFor(c.Key(n)) != cl.NodeFor(indexOf) {
				name = n
			}
		}
		_, err := c.TryAcquire(ctx, name, time.Minute, &withlock.LockOptions{MinReplicas: 1, ReplicaTimeout: 10 * time.Millisecond})
		if !errors.Is(err, withlock.ErrNotReplicated) {
			t.Fatalf("acquisition with a replica on masters without one: %v", err)
		}
		if !rdb.HExists(ctx, indexOf, c.Key(name)).Val() {
			t.Errorf("%s is not in the index", c.Key(name))
		}
	})
	t.Run("pruning removes only names long out of use", func(t *testing.T) {
		pruningRemovesOnlyNamesLongOutOfUse(t, rdb)
	})
	// Pruning reads an entry, then the name's keys on their masters, then
	// marks or removes the entry on the index's master: an entry changed
	// between the first step and the last (written, so marked again) stays.
	t.Run("a name whose entry changed after pruning read it stays", func(t *testing.T) {
		key := c.Key("rewritten")
		ms := rdb.Time(ctx).Val().UnixMilli() - withlock.PruneAfter.Milliseconds() - 1000
		old, older := strconv.FormatInt(ms, 10), strconv.FormatInt(ms-1000, 10)
		for _, tc := range []struct {
			now, seen string // the entry now, and as pruning read it
			want      bool   // in the index after
		}{
			{"", older, true},  // written since the mark was read
			{old, older, true}, // written and marked again since
			{old, old, false},  // unchanged, and old enough
		} {
			rdb.HSet(ctx, indexOf, key, tc.now)
			if err := withlock.PruneSeen(ctx, c, key, tc.seen); err != nil {
				t.Fatal(err)
			}
			if got := rdb.HExists(ctx, indexOf, key).Val(); got != tc.want {
				t.Errorf("entry %q, read as %q: in the index after pruning %v, want %v", tc.now, tc.seen, got, tc.want)
			}
		}
	})
	t.Run("pruning never drops a name in use", func(t *testing.T) {
		pruningNeverDropsANameInUse(t, rdb, cl.Client())
	})
}
