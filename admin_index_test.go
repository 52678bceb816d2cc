package withlock_test

// The index of names List reads: written with the acquisitions, pruned of
// names out of use, on one Redis and on a Cluster.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/redistest"
)

// indexOf is the index of names of the default prefix.
const indexOf = "{lock:}:names"

// keysOf returns the keys of list, in its order.
func keysOf(list []*withlock.Status) []string {
	var out []string
	for _, st := range list {
		out = append(out, st.Key)
	}
	return out
}

// List reads the index of the prefix's names instead of scanning: a name is
// in it from its acquisition on (a fresh lock never renewed, a semaphore's
// slot, a recorded run), whatever else is in Redis. Another program's key
// under the prefix is in no index: Scan finds it.
func TestListReadsTheIndexOfNamesNotTheKeyspace(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	c := withlock.New(rdb, nil)
	sem, err := withlock.NewSemaphore(rdb, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 { // keys beside the locks
		rdb.Set(ctx, fmt.Sprint("cache:", i), "x", time.Minute)
	}
	runOnce(t, c, "recorded", 3) // admin_records.go's test helper
	fresh := mustAcquire(t, c, "fresh", 10*time.Second)
	defer fresh.Release(ctx)
	slot := mustAcquire(t, sem, "{sem}", 10*time.Second)
	defer slot.Release(ctx)
	rdb.Set(ctx, "lock:foreign", "elsewhere:1:abc", time.Minute) // another program's

	mon := srv.Monitor()
	list, err := c.List(ctx, &withlock.ListOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := keysOf(list), []string{"lock:fresh", "lock:recorded", "lock:{sem}"}; !slices.Equal(got, want) {
		t.Errorf("List from the index = %q, want %q", got, want)
	}
	for _, cmd := range mon.Commands() {
		if cmd.Args[0] == "scan" || cmd.Args[0] == "keys" {
			t.Errorf("List sent %s", cmd)
		}
	}
	if held, err := c.List(ctx, nil); err != nil || !slices.Equal(keysOf(held), []string{"lock:fresh", "lock:{sem}"}) {
		t.Errorf("List of the held = %q, %v; want the fresh lock and the semaphore", keysOf(held), err)
	}
	scanned, err := c.List(ctx, &withlock.ListOptions{All: true, Scan: true})
	if want := []string{"lock:foreign", "lock:fresh", "lock:recorded", "lock:{sem}"}; err != nil || !slices.Equal(keysOf(scanned), want) {
		t.Errorf("List with Scan = %q, %v; want %q", keysOf(scanned), err, want)
	}
}

// A long-lived Client writes a name into the index once per period, in
// the round trip of its SET and ahead of it; its other acquisitions of the
// name are one SET. A write Redis refused (an ACL without HSET) is not
// sent again within the period either.
func TestAClientWritesANameIntoTheIndexOncePerPeriod(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		rdb  *redis.Client
		hset string // how Redis answers HSET
	}{
		{"allowed", srv.Client(), ""},
		{"refused", aclClient(t, srv, "~* &* +@all -hset"), "NOPERM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var trips tripLog
			tc.rdb.AddHook(&trips)
			c := withlock.New(tc.rdb, nil)
			// A Client's first acquisition also asks INFO memory
			// (client.go), after the SET in the same round trip:
			// another name's, here.
			first := mustAcquire(t, c, "first", time.Minute)
			if got := trips.reset(); len(got) != 1 || !slices.Equal(got[0], []string{"hset", "set", "info"}) {
				t.Errorf("the Client's first acquisition sent %q, want one round trip of hset, set, info", got)
			}
			if err := first.Release(ctx); err != nil {
				t.Fatal(err)
			}
			acquire := func() []string {
				trips.reset()
				l := mustAcquire(t, c, "job", time.Minute)
				got := trips.reset()
				if err := l.Release(ctx); err != nil {
					t.Fatal(err)
				}
				if len(got) != 1 {
					t.Fatalf("the acquisition took %d round trips: %q", len(got), got)
				}
				return got[0]
			}
			if got := acquire(); !slices.Equal(got, []string{"hset", "set"}) {
				t.Errorf("first acquisition sent %q in its round trip, want hset, set", got)
			}
			if tc.hset != "" && !strings.Contains(trips.lastErr, tc.hset) {
				t.Errorf("HSET answered %q, want %s", trips.lastErr, tc.hset)
			}
			if got := acquire(); !slices.Equal(got, []string{"set"}) {
				t.Errorf("second acquisition sent %q, want set alone", got)
			}
			withlock.SetIndexTimings(c, time.Millisecond, withlock.PruneAfter)
			time.Sleep(2 * time.Millisecond) // past the shortened period
			if got := acquire(); !slices.Equal(got, []string{"hset", "set"}) {
				t.Errorf("an acquisition in the next period sent %q, want hset, set", got)
			}
		})
	}
}

// tripLog records the names of the commands a client sends, by round trip
// (but a new connection's handshake), and the last HSET error.
type tripLog struct {
	mu      sync.Mutex
	trips   [][]string
	lastErr string
}

func (l *tripLog) reset() [][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.trips
	l.trips = nil
	return t
}

func (l *tripLog) add(cmds []redis.Cmder) {
	var names []string
	for _, c := range cmds {
		names = append(names, c.Name())
	}
	l.mu.Lock()
	l.trips = append(l.trips, names)
	l.mu.Unlock()
}

func (l *tripLog) note(cmds []redis.Cmder) {
	for _, c := range cmds {
		if c.Name() == "hset" && c.Err() != nil {
			l.mu.Lock()
			l.lastErr = c.Err().Error()
			l.mu.Unlock()
		}
	}
}

func (l *tripLog) DialHook(next redis.DialHook) redis.DialHook { return next }
func (l *tripLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if n := cmd.Name(); n != "hello" && n != "client" { // a new connection's handshake
			l.add([]redis.Cmder{cmd})
		}
		return next(ctx, cmd)
	}
}
func (l *tripLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		l.add(cmds)
		err := next(ctx, cmds)
		l.note(cmds)
		return err
	}
}

// Pruning removes a name only once List has seen it out of use (no lock
// key, record, last success or waiter in its line) for PruneAfter by
// Redis's clock: the first sight marks the entry, a later one that long
// after removes it; a name in use keeps its entry however old its mark,
// and a write clears the mark.
func TestIndexPruningRemovesOnlyNamesLongOutOfUse(t *testing.T) {
	t.Parallel()
	pruningRemovesOnlyNamesLongOutOfUse(t, startRedis(t))
}

// pruningRemovesOnlyNamesLongOutOfUse is TestIndexPruningRemovesOnlyNamesLongOutOfUse
// on rdb.
func pruningRemovesOnlyNamesLongOutOfUse(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	c := withlock.New(rdb, nil)
	now := func() int64 { return rdb.Time(ctx).Val().UnixMilli() }
	old := strconv.FormatInt(now()-withlock.PruneAfter.Milliseconds()-1000, 10)
	recent := strconv.FormatInt(now()-1000, 10)
	for _, tc := range []struct {
		key, mark string
		inUse     func(key string) // nil: out of use
		want      string           // the entry after pruning: "" gone, "mark" a fresh mark, "same" unchanged
	}{
		{"lock:held", old, func(k string) { rdb.Set(ctx, k, "otherhost:1:abc", time.Minute) }, "same"},
		{"lock:recorded", old, func(k string) { rdb.Set(ctx, "{"+k+"}:last", "{}", time.Minute) }, "same"},
		{"lock:succeeded", old, func(k string) { rdb.Set(ctx, "{"+k+"}:ok", "{}", time.Minute) }, "same"},
		{"lock:awaited", old, func(k string) { rdb.RPush(ctx, lineBaseOf(k)+":q", "entry") }, "same"},
		{"lock:{tag}awaited", old, func(k string) { rdb.RPush(ctx, lineBaseOf(k)+":q", "entry") }, "same"},
		{"lock:written", "", nil, "mark"},
		{"lock:marked-lately", recent, nil, "same"},
		{"lock:long-out-of-use", old, nil, ""},
		{"lock:a}b", old, nil, ""},
	} {
		rdb.HSet(ctx, indexOf, tc.key, tc.mark)
		if tc.inUse != nil {
			tc.inUse(tc.key)
		}
		before := now()
		if err := withlock.Unindex(ctx, c, tc.key); err != nil {
			t.Fatal(err)
		}
		v, err := rdb.HGet(ctx, indexOf, tc.key).Result()
		var got string
		switch {
		case err == redis.Nil:
			got = ""
		case err != nil:
			t.Fatal(err)
		case v == tc.mark:
			got = "same"
		default:
			if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms >= before && ms <= now() {
				got = "mark"
			} else {
				got = "bad mark " + v
			}
		}
		if got != tc.want {
			t.Errorf("%s marked %q: after pruning %q, want %q", tc.key, tc.mark, got, tc.want)
		}
	}
	// A write clears a mark, old or not.
	rdb.HSet(ctx, indexOf, "lock:again", old)
	mustAcquire(t, c, "again", time.Minute).Release(ctx)
	if err := withlock.Unindex(ctx, c, "lock:again"); err != nil {
		t.Fatal(err)
	}
	if !rdb.HExists(ctx, indexOf, "lock:again").Val() {
		t.Error("a name written since its old mark was removed at the next pruning")
	}
}

// However List and acquisitions interleave, pruning never drops a name in
// use: before every acquisition of a long-lived Client, which writes a
// name once per period and trusts that write until the period ends, the
// name is in the index once the acquisition is done, while another Client
// lists (and prunes) all along. Names are taken in bursts, within a period
// of each other, and left out of use between bursts long enough to be
// pruned. The timings are shortened a thousandfold, keeping their ratio.
func TestIndexPruningNeverDropsANameInUse(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	pruningNeverDropsANameInUse(t, srv.Client(), srv.Client())
}

// pruningNeverDropsANameInUse is TestIndexPruningNeverDropsANameInUse with
// the lister on rdb and the taker on takes, another client of the same
// deployment.
func pruningNeverDropsANameInUse(t *testing.T, rdb, takes redis.UniversalClient) {
	ctx := context.Background()
	every, unused := withlock.IndexEvery/1000, withlock.PruneAfter/1000
	var trips tripLog
	takes.AddHook(&trips)
	taker, lister := withlock.New(takes, nil), withlock.New(rdb, nil)
	withlock.SetIndexTimings(taker, every, unused)
	withlock.SetIndexTimings(lister, every, unused)
	names := []string{"a", "b", "c", "d", "e", "f"}

	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			if _, err := lister.List(ctx, nil); err != nil {
				t.Error(err)
				return
			}
		}
	})
	rng := rand.New(rand.NewPCG(1, 2))
	var missing []string
	pruned, trusted := 0, 0
	for end := time.Now().Add(5 * unused); time.Now().Before(end); {
		name := names[rng.IntN(len(names))]
		for range 1 + rng.IntN(5) {
			key := taker.Key(name)
			if !rdb.HExists(ctx, indexOf, key).Val() {
				pruned++
			}
			trips.reset()
			l, err := taker.TryAcquire(ctx, name, time.Minute, nil)
			if err != nil {
				t.Fatal(err)
			}
			if sent := trips.reset(); len(sent) == 1 && slices.Equal(sent[0], []string{"set"}) {
				trusted++
			}
			if !rdb.HExists(ctx, indexOf, key).Val() {
				missing = append(missing, name)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Duration(rng.Int64N(int64(every / 2))))
		}
		time.Sleep(time.Duration(rng.Int64N(int64(unused / 2))))
	}
	close(stop)
	wg.Wait()
	t.Logf("%d names found pruned before an acquisition, %d acquisitions trusted an earlier write", pruned, trusted)
	if len(missing) > 0 {
		t.Errorf("held but not in the index, %d times: %q", len(missing), missing)
	}
	if pruned == 0 || trusted == 0 {
		t.Errorf("nothing was pruned (%d) or no acquisition trusted an earlier write (%d): this tested nothing", pruned, trusted)
	}
}

// A holder that takes its lock back after Redis lost it (Reacquire) writes
// its name into the index again at its next renewal: Redis lost the entry
// with the key.
func TestReacquiredLockIsIndexedAgain(t *testing.T) {
	t.Parallel()
	c, rdb := kaSetup(t)
	ctx := context.Background()
	l, err := c.TryAcquire(ctx, "back", 2*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rdb.HExists(ctx, indexOf, l.Key()).Val() {
		t.Fatal("not indexed by its acquisition")
	}
	rl := make(renewLog, 16) // keepalive_test.go
	ka := l.KeepAlive(ctx, rl.options())
	defer ka.Stop()
	rl.waitFor(t, ka, nil, 5*time.Second)
	rdb.FlushAll(ctx)
	rl.waitFor(t, ka, errReacquired, 5*time.Second)
	rl.waitFor(t, ka, nil, 5*time.Second) // a renewal after the reacquisition
	if !rdb.HExists(ctx, indexOf, l.Key()).Val() {
		t.Error("the reacquired lock is not in the index after its next renewal")
	}
}

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
