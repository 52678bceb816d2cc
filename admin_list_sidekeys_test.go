package withlock_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	withlock "github.com/with-lock/with-lock"
)

// List shows locks, never their fencing counters or last-run records, even
// where those match the prefix's SCAN pattern: beside a name with a hash tag
// ("lock:{tag}x:fence"), a name with '}' and no tag ("lock:a}b:fence:<n>"),
// and under a prefix that is a hash tag ("{jobs}:x:last"). With All, a free
// name with a record is listed once, under its lock key. From the index of
// names and with Scan alike.
func TestListSkipsFenceAndRecordKeys(t *testing.T) {
	rdb := startRedis(t)
	ctx := context.Background()
	fenced := &withlock.LockOptions{Fence: true}
	held, done := []string{"{tag}held", "a}held", "plain-held"}, []string{"{tag}done", "a}done"}
	for _, prefix := range []string{"lock:", "{jobs}:"} {
		c := withlock.New(rdb, &withlock.Options{Prefix: prefix})
		for _, name := range done {
			l, err := c.TryAcquire(ctx, name, time.Minute, fenced)
			if err != nil {
				t.Fatal(err)
			}
			if err := errors.Join(l.ReleaseAndRecord(ctx, withlock.Run{}, time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
		for _, name := range held {
			l, err := c.TryAcquire(ctx, name, time.Minute, fenced)
			if err != nil {
				t.Fatal(err)
			}
			if err := errors.Join(l.ReleaseAndRecord(ctx, withlock.Run{}, time.Hour)); err != nil {
				t.Fatal(err)
			}
			l, err = c.TryAcquire(ctx, name, time.Minute, fenced)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release(ctx)
		}
		keys := func(names ...[]string) []string {
			var out []string
			for _, n := range slices.Concat(names...) {
				out = append(out, c.Key(n))
			}
			slices.Sort(out)
			return out
		}
		inRedis := rdb.Keys(ctx, "*"+strings.Trim(prefix, "{}:")+"*").Val()
		for _, tc := range []struct {
			opts *withlock.ListOptions
			want []string
		}{
			{nil, keys(held)},
			{&withlock.ListOptions{All: true}, keys(held, done)},
			{&withlock.ListOptions{Scan: true}, keys(held)},
			{&withlock.ListOptions{All: true, Scan: true}, keys(held, done)},
		} {
			list, err := c.List(ctx, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, st := range list {
				got = append(got, st.Key)
				if !st.Held && st.LastRun == nil {
					t.Errorf("prefix %q: List shows %s free and without a record", prefix, st.Key)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("prefix %q, %+v: List = %q, want %q (keys in Redis: %q)", prefix, tc.opts, got, tc.want, inRedis)
			}
		}
	}
}
