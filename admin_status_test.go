package withlock_test

// Status: who holds a lock and since when, the leftovers note of the
// present holder, and a key another program uses.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/leftovers"
	"github.com/with-lock/with-lock/internal/redistest"
)

func TestStatusOfALock(t *testing.T) {
	t.Parallel()
	locker, rdb := kaSetup(t)
	ctx := context.Background()

	st, err := locker.Status(ctx, "st")
	if err != nil {
		t.Fatal(err)
	}
	if st.Held || st.Holder.ID != "" || st.Holder.TTL != 0 || st.Fence != 0 || st.Key != "lock:st" {
		t.Errorf("free lock: %+v", st)
	}

	l, err := locker.TryAcquire(ctx, "st", 5*time.Second, &withlock.LockOptions{Fence: true})
	if err != nil {
		t.Fatal(err)
	}
	st, err = locker.Status(ctx, "st")
	if err != nil {
		t.Fatal(err)
	}
	if !st.Held || st.Holder.ID != withlock.HolderOf(l.Token()) || st.Holder.TTL <= 0 || st.Holder.TTL > 5*time.Second || st.Fence != l.Fence() {
		t.Errorf("held lock: %+v, want holder %s, TTL in (0,5s], fence %d", st, withlock.HolderOf(l.Token()), l.Fence())
	}
	if strings.Contains(st.Holder.ID, l.Token()[len(st.Holder.ID):]) {
		t.Errorf("holder %q shows the token's secret part", st.Holder.ID)
	}
	host, pid, ok := strings.Cut(st.Holder.ID, ":")
	if !ok || host == "" || pid == "" {
		t.Errorf("holder %q is not host:pid", st.Holder.ID)
	} else if _, err := strconv.Atoi(pid); err != nil {
		t.Errorf("holder %q: pid not a number", st.Holder.ID)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// A key written by someone else, without expiry.
	if err := rdb.Set(ctx, "lock:st", "no-format", 0).Err(); err != nil {
		t.Fatal(err)
	}
	st, err = locker.Status(ctx, "st")
	if err != nil {
		t.Fatal(err)
	}
	if !st.Held || st.Holder.ID != "unknown" || st.Holder.TTL != -1 || st.Fence != l.Fence() {
		t.Errorf("foreign key without expiry: %+v", st)
	}
}

// The token carries the time its acquisition began, so Status can say
// since when a lock is held; a token without it (an older version's)
// shows no time rather than a wrong one.
func TestStatusSinceIsWhenTheHolderAcquired(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locker := kaClient(t, srv, time.Second)
	ctx := context.Background()
	before := time.Now().Truncate(time.Millisecond)
	l := mustAcquire(t, locker, "since", 5*time.Second)
	after := time.Now()
	st, err := locker.Status(ctx, "since")
	if err != nil {
		t.Fatal(err)
	}
	if st.Holder.Since.Before(before) || st.Holder.Since.After(after) {
		t.Errorf("Since %v, want within the TryAcquire call [%v, %v]", st.Holder.Since, before, after)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for _, old := range []string{foreignToken, "otherhost:4242:zz.0123", "no-format"} {
		srv.Client().Set(ctx, "lock:since", old, time.Minute)
		if st, err := locker.Status(ctx, "since"); err != nil || !st.Held || !st.Holder.Since.IsZero() {
			t.Errorf("key holding %q: Status %+v, %v; want held with a zero Since", old, st, err)
		}
	}
}

// Status shows a leftovers note only while its writer holds the lock: not
// once another holder has taken it, though the note is still there; a
// holder that lost the lock cannot write one nor delete the present
// holder's; the present holder's ReleaseAndRecord deletes it. On one
// deployment and on a quorum, where the note is on every node.
func TestStatusShowsLeftoversOnlyOfThePresentHolder(t *testing.T) {
	t.Parallel()
	t.Run("single", func(t *testing.T) {
		rdb := redistest.Start(t).Client()
		leftoversOfThePresentHolder(t, withlock.New(rdb, nil), []*redis.Client{rdb})
	})
	t.Run("quorum", func(t *testing.T) {
		_, admins, c := quorumNodes(t)
		leftoversOfThePresentHolder(t, c, admins)
	})
}

func leftoversOfThePresentHolder(t *testing.T, c *withlock.Client, nodes []*redis.Client) {
	ctx := context.Background()
	// noted is on how many nodes the note is.
	noted := func() (n int) {
		for _, rdb := range nodes {
			n += int(rdb.Exists(ctx, "{lock:left}:left").Val())
		}
		return n
	}
	left := leftovers.Note{ExitCode: 3, Exited: time.Now().Add(-time.Second).Round(0), Processes: 2}

	l := mustAcquire(t, c, "left", 5*time.Second)
	if err := leftovers.Store(ctx, l, left); err != nil {
		t.Fatal(err)
	}
	st, err := c.Status(ctx, "left")
	if err != nil {
		t.Fatal(err)
	}
	if got := leftovers.Of(st); got == nil || got.ExitCode != 3 || got.Processes != 2 || !got.Exited.Equal(left.Exited) {
		t.Errorf("leftovers.Of(Status) = %+v, want %+v", got, left)
	}
	if ttl := nodes[0].PTTL(ctx, "{lock:left}:left").Val(); ttl <= 0 || ttl > 5*time.Second || noted() != len(nodes) {
		t.Errorf("the note lives %s on %d of %d nodes: want the lock's remaining time on all", ttl, noted(), len(nodes))
	}

	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := leftovers.Store(ctx, l, left); !errors.Is(err, withlock.ErrLockNotHeld) {
		t.Errorf("leftovers.Store after the release: %v, want ErrLockNotHeld", err)
	}
	next := mustAcquire(t, c, "left", 5*time.Second)
	if noted() != len(nodes) {
		t.Fatal("the first holder's note is gone: the check below would prove nothing")
	}
	if err := leftovers.Store(ctx, l, left); !errors.Is(err, withlock.ErrLockNotHeld) {
		t.Errorf("leftovers.Store by the last holder while another holds the lock: %v, want ErrLockNotHeld", err)
	}
	if st, err := c.Status(ctx, "left"); err != nil || leftovers.Of(st) != nil {
		t.Errorf("Status of the next holder = %+v, %v: want no leftovers (the note is the last holder's)", st, err)
	}

	if err := leftovers.Store(ctx, next, left); err != nil {
		t.Fatal(err)
	}
	if err := l.ReleaseAndRecord(ctx, withlock.Run{ExitCode: 3}, time.Minute); !errors.Is(err, withlock.ErrLockNotHeld) {
		t.Errorf("ReleaseAndRecord by the last holder: %v, want ErrLockNotHeld", err)
	}
	if noted() != len(nodes) {
		t.Error("a holder that no longer holds the lock deleted the present holder's note")
	}
	if err := next.ReleaseAndRecord(ctx, withlock.Run{ExitCode: 3}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := noted(); n != 0 {
		t.Errorf("ReleaseAndRecord left the leftovers note behind on %d nodes", n)
	}
}

// A lock key or fence counter that another program uses is an error that
// names the key and what it holds, matches ErrWrongType and not
// ErrNotObtained, comes at once from a waiting Acquire, and writes nothing.
func TestForeignKeyIsWrongType(t *testing.T) {
	t.Parallel()
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
