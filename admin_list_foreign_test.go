package withlock_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/redistest"
)

// List shows a lock whose key holds a token that is not ours: one from
// another host in our format, with its host:pid, and a value in no format
// at all without expiry, held by "unknown" and never expiring; beside our
// own lock, and never with the foreign token's secret part. On one Redis
// with Scan (another program's key is in no index of names), and on a
// quorum, which scans, where the foreign token is on a majority of the
// nodes.
func TestListShowsForeignToken(t *testing.T) {
	const (
		other  = "otherhost:4242:0123456789abcdef0123456789abcdef"
		secret = "0123456789abcdef0123456789abcdef"
	)
	ctx := context.Background()
	single := func(t *testing.T) (*withlock.Client, []*redis.Client) {
		srv := redistest.Start(t)
		return withlock.New(srv.Client(), nil), []*redis.Client{srv.Client()}
	}
	quorum := func(t *testing.T) (*withlock.Client, []*redis.Client) {
		_, admins, c := quorumNodes(t)
		return c, admins[:2] // a majority of the three
	}
	for _, tc := range []struct {
		name  string
		start func(*testing.T) (*withlock.Client, []*redis.Client)
	}{{"OneRedis", single}, {"Quorum", quorum}} {
		t.Run(tc.name, func(t *testing.T) {
			c, nodes := tc.start(t)
			ours, err := c.TryAcquire(ctx, "ours", time.Minute, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ours.Release(ctx)
			for _, rdb := range nodes {
				if err := rdb.Set(ctx, c.Key("other"), other, 30*time.Second).Err(); err != nil {
					t.Fatal(err)
				}
				if err := rdb.Set(ctx, c.Key("odd"), "no-format", 0).Err(); err != nil {
					t.Fatal(err)
				}
			}
			list, err := c.List(ctx, &withlock.ListOptions{Scan: true})
			if err != nil {
				t.Fatal(err)
			}
			byKey := map[string]*withlock.Status{}
			var keys []string
			for _, st := range list {
				byKey[st.Key] = st
				keys = append(keys, st.Key)
				if strings.Contains(st.Holder.ID, secret) {
					t.Errorf("List shows the secret of %s's token: %+v", st.Key, st)
				}
			}
			if len(list) != 3 {
				t.Errorf("List = %q, want 3 locks (ours, other, odd)", keys)
			}
			if st := byKey[c.Key("ours")]; st == nil || !st.Held || st.Holder.ID != withlock.HolderOf(ours.Token()) {
				t.Errorf("our lock in List: %+v", st)
			}
			if st := byKey[c.Key("other")]; st == nil || !st.Held || st.Holder.ID != "otherhost:4242" ||
				st.Holder.TTL <= 0 || st.Holder.TTL > 30*time.Second || !st.Holder.Since.IsZero() {
				t.Errorf("another host's lock in List: %+v, want held by otherhost:4242, TTL in (0,30s], no since", st)
			}
			if st := byKey[c.Key("odd")]; st == nil || !st.Held || st.Holder.ID != "unknown" || st.Holder.TTL != -1 || !st.Holder.Since.IsZero() {
				t.Errorf("a value in no format in List: %+v, want held by unknown, TTL -1, no since", st)
			}
		})
	}
}

// An acquisition that found another program's value where its lock.go (a
// fence counter that is text, a lock key that is a list) wrote its name
// into the index of names all the same, ahead of its SET. List skips such
// a name and lists the rest, and prunes the entry as any other once none
// of the name's own keys is left: the list's is, the fence counter's is not.
func TestListSkipsANameWhoseKeysAnotherProgramUses(t *testing.T) {
	rdb := startRedis(t)
	ctx := context.Background()
	c := withlock.New(rdb, nil)
	rdb.Set(ctx, "{lock:fz}:fence", "abc", 0)
	rdb.LPush(ctx, "lock:lst", "a")
	for _, name := range []string{"fz", "lst"} {
		if _, err := c.TryAcquire(ctx, name, time.Minute, &withlock.LockOptions{Fence: true}); !errors.Is(err, withlock.ErrWrongType) {
			t.Fatalf("TryAcquire %s = %v, want ErrWrongType", name, err)
		}
	}
	ours := mustAcquire(t, c, "ours", time.Minute)
	defer ours.Release(ctx)
	list, err := c.List(ctx, nil)
	if got := keysOf(list); err != nil || !slices.Equal(got, []string{"lock:ours"}) {
		t.Errorf("List = %q, %v; want our lock alone", got, err)
	}
	if v := rdb.HGet(ctx, indexOf, "lock:fz").Val(); v == "" {
		t.Error("lock:fz, none of whose keys is left, was not marked out of use")
	}
	if v, err := rdb.HGet(ctx, indexOf, "lock:lst").Result(); err != nil || v != "" {
		t.Errorf("lock:lst, whose key another program uses, is %q, %v in the index; want it in use", v, err)
	}
}
