package withlock_test

// What the server may do to held locks: evict them (and whether its policy
// says so), or run out of memory.

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/redistest"
)

// A Client learns from its first acquisition whether its server may evict
// held locks, and Status says it at every call: any maxmemory-policy but
// noeviction, once a maxmemory is set.
func TestEvictionPolicyOfTheServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	admin := srv.Client()
	for _, tc := range []struct {
		maxmemory, policy string
		want              string
	}{
		{"100mb", "volatile-lru", "volatile-lru"},
		{"100mb", "allkeys-lru", "allkeys-lru"},
		{"100mb", "volatile-ttl", "volatile-ttl"},
		{"100mb", "allkeys-random", "allkeys-random"},
		{"100mb", "noeviction", ""},
		{"0", "allkeys-lru", ""}, // no limit: nothing is ever evicted
	} {
		t.Run(tc.maxmemory+" "+tc.policy, func(t *testing.T) {
			if err := admin.ConfigSet(ctx, "maxmemory", tc.maxmemory).Err(); err != nil {
				t.Fatal(err)
			}
			if err := admin.ConfigSet(ctx, "maxmemory-policy", tc.policy).Err(); err != nil {
				t.Fatal(err)
			}
			sem, err := withlock.NewSemaphore(srv.Client(), 2, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				name   string
				locker *withlock.Client
				opts   *withlock.LockOptions
			}{
				{"plain", withlock.New(srv.Client(), nil), nil},
				{"fenced", withlock.New(srv.Client(), nil), &withlock.LockOptions{Fence: true}},
				{"semaphore", sem, nil},
			} {
				if got := c.locker.EvictionPolicy(); got != "" {
					t.Errorf("%s: EvictionPolicy before any acquisition = %q, want \"\"", c.name, got)
				}
				l, err := c.locker.TryAcquire(ctx, c.name, time.Minute, c.opts)
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				if got := c.locker.EvictionPolicy(); got != tc.want {
					t.Errorf("%s: EvictionPolicy = %q, want %q", c.name, got, tc.want)
				}
				st, err := c.locker.Status(ctx, c.name)
				if err != nil || st.EvictionPolicy != tc.want || !st.Held {
					t.Errorf("%s: Status = %+v, %v; want held, EvictionPolicy %q", c.name, st, err, tc.want)
				}
				if err := l.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// The question rides in the first acquisition's round trip, after the SET,
// and is never asked again by that Client: a long-lived Client's later
// acquisitions are the one SET each.
func TestOnlyTheFirstAcquisitionAsksTheEvictionPolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t, "maxmemory", "100mb", "maxmemory-policy", "volatile-lru")
	locker := withlock.New(srv.Client(), nil)
	mon := srv.Monitor()
	for i := range 3 {
		l := mustAcquire(t, locker, "job", time.Minute)
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		var sent []string
		for _, c := range withoutHandshake(mon.Commands()) {
			if c.Client != "lua" {
				sent = append(sent, c.Args[0])
			}
		}
		want := []string{"set", "evalsha"} // after the first release, the script's digest
		if i == 0 {
			// The name's write into the index of names too (admin_index.go).
			want = []string{"hset", "set", "info", "eval"}
		}
		if !slices.Equal(sent, want) {
			t.Errorf("acquisition %d sent %q, want %q", i+1, sent, want)
		}
	}
	if got := locker.EvictionPolicy(); got != "volatile-lru" {
		t.Errorf("EvictionPolicy = %q, want volatile-lru", got)
	}
}

// Where the server does not say, nothing is said and nothing fails: an ACL
// user without +info, or INFO renamed away.
func TestEvictionPolicyUnsaidWhereInfoIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acl := redistest.Start(t, "maxmemory", "100mb", "maxmemory-policy", "volatile-lru")
	conf := filepath.Join(t.TempDir(), "renamed.conf") // a directive of three words needs a file
	if err := os.WriteFile(conf, []byte("rename-command INFO \"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	renamed := redistest.Start(t, "maxmemory", "100mb", "maxmemory-policy", "volatile-lru", "include", conf)
	for _, tc := range []struct {
		name string
		rdb  *redis.Client
	}{
		{"an ACL without +info", aclClient(t, acl, "-@all +set +get +pttl +eval +evalsha +del +publish +hello +ping")},
		{"INFO renamed away", renamed.Client()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.rdb.Info(ctx, "memory").Err(); err == nil {
				t.Fatal("INFO answered: the set-up does not refuse it")
			}
			locker := withlock.New(tc.rdb, nil)
			l := mustAcquire(t, locker, "job", time.Minute)
			if got := locker.EvictionPolicy(); got != "" {
				t.Errorf("EvictionPolicy = %q, want \"\"", got)
			}
			st, err := locker.Status(ctx, "job")
			if err != nil || !st.Held || st.EvictionPolicy != "" {
				t.Errorf("Status = %+v, %v; want held, no EvictionPolicy", st, err)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatalf("Release: %v", err)
			}
		})
	}
}

// A server that may evict does evict a held lock under memory pressure,
// though its TTL is far from over: the reason for EvictionPolicy.
func TestAnEvictingServerEvictsAHeldLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t, "maxmemory", "4mb", "maxmemory-policy", "volatile-lru")
	locker := withlock.New(srv.Client(), nil)
	l := mustAcquire(t, locker, "job", time.Hour)
	if got := locker.EvictionPolicy(); got != "volatile-lru" {
		t.Errorf("EvictionPolicy = %q, want volatile-lru", got)
	}
	srv.FillUntilEvicted(l.Key())
	if _, err := withlock.New(srv.Client(), nil).TryAcquire(ctx, "job", time.Minute, nil); err != nil {
		t.Fatalf("a second owner: %v, want the lock: the first one's was evicted", err)
	}
	if err := l.Extend(ctx, time.Hour); err == nil {
		t.Error("Extend of the evicted lock succeeded")
	}
}

// A Redis whose used memory is above its maxmemory (noeviction) refuses
// writes, but still answers reads: Status (a plain lock's and a
// semaphore's), List, and a holder's renewal and release all work, while a
// new acquisition is refused with Redis's OOM error.
func TestStatusAnswersWhenRedisIsOutOfMemory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t, "maxmemory", "4mb", "maxmemory-policy", "noeviction")
	locker := withlock.New(srv.Client(), nil)
	sem, err := withlock.NewSemaphore(srv.Client(), 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := mustAcquire(t, locker, "job", time.Minute)
	sl := mustAcquire(t, sem, "backup", time.Minute)
	srv.FillUntilOOM()

	if _, err := locker.TryAcquire(ctx, "other", time.Minute, nil); !redis.IsOOMError(err) {
		t.Errorf("TryAcquire when out of memory: %v, want Redis's OOM error", err)
	}
	st, err := locker.Status(ctx, "job")
	if err != nil || !st.Held || st.Holder.ID != withlock.HolderOf(l.Token()) || st.Holder.TTL <= 0 {
		t.Errorf("Status of a held lock: %+v, %v; want it held by %s", st, err, withlock.HolderOf(l.Token()))
	}
	st, err = sem.Status(ctx, "backup")
	if err != nil || st.Slots != 2 || len(st.Holders) != 1 || st.Holders[0].Slot != sl.Slot() {
		t.Errorf("Status of a semaphore: %+v, %v; want 2 slots, slot %d held", st, err, sl.Slot())
	}
	if ls, err := locker.List(ctx, nil); err != nil || len(ls) != 2 {
		t.Errorf("List: %d locks, %v; want 2", len(ls), err)
	}
	if err := l.Extend(ctx, time.Minute); err != nil {
		t.Errorf("Extend: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Errorf("Release: %v", err)
	}
	if err := sl.Release(ctx); err != nil {
		t.Errorf("Release of a slot: %v", err)
	}
	if st, err := locker.Status(ctx, "job"); err != nil || st.Held {
		t.Errorf("Status after the release: %+v, %v; want free", st, err)
	}
}
