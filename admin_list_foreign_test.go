package withlock_test

import (
	"context"
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
// own lock, and never with the foreign token's secret part. On one Redis,
// and on a quorum where the foreign token is on a majority of the nodes.
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
			list, err := c.List(ctx, nil)
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
