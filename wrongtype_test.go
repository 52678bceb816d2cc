package withlock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
)

// A lock key or fence counter that another program uses is an error that
// names the key and what it holds, matches ErrWrongType and not
// ErrNotObtained, comes at once from a waiting Acquire, and writes nothing.
func TestForeignKeyIsWrongType(t *testing.T) {
	ctx := context.Background()
	fenced := &withlock.LockOptions{Fence: true}
	for _, tc := range []struct {
		name  string
		plant func(rdb *redis.Client) error // the other program's key
		opts  *withlock.LockOptions
		want  []string // in the message
	}{
		{"lock key is a list", func(rdb *redis.Client) error {
			return rdb.LPush(ctx, "lock:x", "a").Err()
		}, nil, []string{"key lock:x holds a list, not a lock", "another name or prefix"}},
		{"fenced, lock key is a hash", func(rdb *redis.Client) error {
			return rdb.HSet(ctx, "lock:x", "f", "v").Err()
		}, fenced, []string{"key lock:x holds a hash, not a lock"}},
		{"fence counter is text", func(rdb *redis.Client) error {
			return rdb.Set(ctx, "{lock:x}:fence", "abc", 0).Err()
		}, fenced, []string{`fence counter {lock:x}:fence holds "abc", not a number`}},
		{"fence counter is long text", func(rdb *redis.Client) error {
			return rdb.Set(ctx, "{lock:x}:fence", strings.Repeat("z", 100), 0).Err()
		}, fenced, []string{`holds "` + strings.Repeat("z", 32) + `"..., not a number`}},
		{"fence counter is a set", func(rdb *redis.Client) error {
			return rdb.SAdd(ctx, "{lock:x}:fence", "1").Err()
		}, fenced, []string{"fence counter {lock:x}:fence holds a set, not a number"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			locker, rdb, _ := setup(t)
			if err := tc.plant(rdb); err != nil {
				t.Fatal(err)
			}
			before := keysAndValues(t, rdb)
			check := func(how string, err error) {
				t.Helper()
				if !errors.Is(err, withlock.ErrWrongType) || errors.Is(err, withlock.ErrNotObtained) {
					t.Fatalf("%s = %v; want ErrWrongType, not ErrNotObtained", how, err)
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s: %q does not say %q", how, err, w)
					}
				}
			}
			_, err := locker.TryAcquire(ctx, "x", 10*time.Second, tc.opts)
			if after := keysAndValues(t, rdb); after != before {
				t.Errorf("TryAcquire changed the keys from %s to %s", before, after)
			}
			check("TryAcquire", err)

			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			start := time.Now()
			_, err = locker.Acquire(wctx, "x", 10*time.Second, tc.opts)
			check("Acquire", err)
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("Acquire took %s: it waited for a key that is no lock", d)
			}
			if after := keysAndValues(t, rdb); after != before {
				t.Errorf("Acquire changed the keys from %s to %s", before, after)
			}
		})
	}
}

// keysAndValues describes every key in rdb: name, type, and a string's value.
func keysAndValues(t *testing.T, rdb *redis.Client) string {
	t.Helper()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	// The index of names is written ahead of every acquisition's SET,
	// whatever its outcome (admin_index.go): not a change to the lock's keys.
	keys = slices.DeleteFunc(keys, func(k string) bool { return k == "{lock:}:names" })
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		typ := rdb.Type(ctx, k).Val()
		fmt.Fprintf(&b, "%s(%s", k, typ)
		if typ == "string" {
			fmt.Fprintf(&b, " %q", rdb.Get(ctx, k).Val())
		}
		b.WriteString(") ")
	}
	return b.String()
}
