package withlock_test

// Status: who holds a lock and since when, the leftovers note of the
// present holder, and a key another program uses; further down, List.

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
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/keys"
	"github.com/with-lock/with-lock/internal/lapse"
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

// List: a lock from the moment it is taken, a foreign token, and the keys
// it skips (another program's, side keys, line keys).

// List shows a lock whose key holds a token that is not ours: one from
// another host in our format, with its host:pid, and a value in no format
// at all without expiry, held by "unknown" and never expiring; beside our
// own lock, and never with the foreign token's secret part. On one Redis
// with Scan (another program's key is in no index of names), and on a
// quorum, which scans, where the foreign token is on a majority of the
// nodes.
func TestListShowsForeignToken(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// List shows locks, never their fencing counters, last-run records or lease marks, even
// where those match the prefix's SCAN pattern: beside a name with a hash tag
// ("lock:{tag}x:fence"), a name with '}' and no tag ("lock:a}b:fence:<n>"),
// and under a prefix that is a hash tag ("{jobs}:x:last"). With All, a free
// name with a record is listed once, under its lock key. From the index of
// names and with Scan alike.
func TestListSkipsFenceAndRecordKeys(t *testing.T) {
	t.Parallel()
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
			// Held with a lease mark beside it, where the key has room.
			opts := &withlock.LockOptions{Fence: true}
			if keys.HasLine(c.Key(name)) {
				lapse.Detect(opts)
			}
			l, err = c.TryAcquire(ctx, name, time.Minute, opts)
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

// listed reports whether lister's List shows key held with token's holder.
func listed(t *testing.T, lister *withlock.Client, key, token string) bool {
	t.Helper()
	list, err := lister.List(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range list {
		if st.Key == key {
			if !st.Held {
				return false
			}
			if len(st.Holders) > 0 {
				return slices.ContainsFunc(st.Holders, func(h withlock.Holder) bool { return h.ID == withlock.HolderOf(token) })
			}
			return st.Holder.ID == withlock.HolderOf(token)
		}
	}
	return false
}

// A lock is listed from the moment it is taken, before any renewal and
// once the index of names holds other names, whatever the acquisition's
// options and however it was taken: by a fresh Client's SET, fenced, with
// a min-hold, a semaphore's slot, a waiter handed the lock by the release
// in the fair line, and a waiter of the same Client handed it by its
// Release outside the line. On one Redis, where List reads the index, and
// on a quorum, where it scans.
func TestListShowsALockFromTheMomentItIsTaken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client()
	lister := withlock.New(rdb, nil)
	runOnce(t, lister, "earlier", 0) // the index holds a name
	take := func(opts *withlock.LockOptions) func(t *testing.T, name string) *withlock.Lock {
		return func(t *testing.T, name string) *withlock.Lock {
			l, err := withlock.New(srv.Client(), nil).TryAcquire(ctx, name, time.Minute, opts)
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
	}
	// handed has a first Client hold name, a waiter of c wait for it, and
	// the holder release it to the waiter.
	handed := func(holder, c *withlock.Client, inLine func(name string) bool) func(t *testing.T, name string) *withlock.Lock {
		return func(t *testing.T, name string) *withlock.Lock {
			h := mustAcquire(t, holder, name, time.Minute)
			ch := acquireAsync(ctx, c, name, time.Minute)
			deadline := time.Now().Add(promptly)
			for !inLine(name) {
				if time.Now().After(deadline) {
					t.Fatal("the waiter never queued")
				}
				time.Sleep(5 * time.Millisecond)
			}
			if err := h.Release(ctx); err != nil {
				t.Fatal(err)
			}
			return served(t, ch, "the waiter")
		}
	}
	fairLine := func(name string) bool { return inLine(t, rdb, lister.Key(name)) == 1 }
	local := waitClient(t, srv)
	localQueue := func(name string) bool { return withlock.WaitingWithoutLine(local, name) == 1 }
	for _, tc := range []struct {
		name string
		take func(t *testing.T, name string) *withlock.Lock
	}{
		{"plain", take(nil)},
		{"fenced", take(&withlock.LockOptions{Fence: true})},
		{"min-hold", take(&withlock.LockOptions{MinHold: time.Hour})},
		{"slot", func(t *testing.T, name string) *withlock.Lock {
			return mustAcquire(t, semaphore(t, srv.Client(), 2), name, time.Minute)
		}},
		{"handed-in-line", handed(withlock.New(srv.Client(), nil), waitClient(t, srv), fairLine)},
		{"a}handed-locally", handed(local, local, localQueue)}, // '}' without a hash tag: no line
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.take(t, tc.name)
			if !listed(t, lister, l.Key(), l.Token()) {
				t.Errorf("%s is held by %s but not listed", l.Key(), withlock.HolderOf(l.Token()))
			}
		})
	}

	t.Run("quorum", func(t *testing.T) {
		_, _, c := quorumNodes(t)
		l := mustAcquire(t, c, "young", time.Minute)
		if !listed(t, c, l.Key(), l.Token()) {
			t.Errorf("the quorum's List misses %s", l.Key())
		}
	})
}

// A waiter that rejoins the fair line (its entry was skipped while its
// Client seemed dead, say) writes its name into the index again with its
// entry, when its Client's write is no longer recent: the release then hands
// it the lock without a SET of its own, and the lock is listed.
func TestAWaiterThatRejoinsTheLineWritesItsNameAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client()
	holder := withlock.New(rdb, nil)
	waiter := withlock.New(srv.Client(), nil)
	withlock.SetWaitTimings(waiter, 50*time.Millisecond, time.Second)
	h := mustAcquire(t, holder, "rejoin", time.Minute)
	ch := acquireAsync(ctx, waiter, "rejoin", time.Minute)
	queue := lineBaseOf(h.Key()) + ":q"
	var entry string
	eventually(t, "the waiter queued", func() bool {
		entry = rdb.LIndex(ctx, queue, 0).Val()
		return entry != ""
	})
	// Its entry goes as a release skipping a dead waiter's would; its
	// Client's write goes stale, and the index loses the name.
	// Both in one MULTI: a waiter that rejoined between the two would have
	// its new name deleted by the HDEL.
	withlock.SetIndexTimings(waiter, time.Millisecond, withlock.PruneAfter)
	if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.LRem(ctx, queue, 1, entry)
		p.HDel(ctx, indexOf, h.Key())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the waiter rejoined", func() bool { return rdb.LLen(ctx, queue).Val() == 1 })
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l := served(t, ch, "the waiter")
	if !listed(t, holder, l.Key(), l.Token()) {
		t.Errorf("%s, handed to a waiter that rejoined the line, is not listed", l.Key())
	}
}

// eventually polls cond until it holds, failing after promptly.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(promptly); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, promptly)
		}
	}
}

// List shows locks only: not the fair line of a hash-tagged name, nor the
// liveness key of the Client waiting in it.
func TestListSkipsLineKeys(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	c := waitClient(t, srv)
	holder := mustAcquire(t, c, "{tag}busy", time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := acquireAsync(ctx, waitClient(t, srv), "{tag}busy", time.Minute)
	clitest.Eventually(t, promptly, "waiter never in line", func() bool { return inLine(t, rdb, holder.Key()) == 1 })
	keys := rdb.Keys(ctx, "lock:*").Val()
	list, err := c.List(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Key != holder.Key() {
		var shown []string
		for _, st := range list {
			shown = append(shown, st.Key)
		}
		t.Errorf("List = %q among keys %q, want only %s", shown, keys, holder.Key())
	}
	cancel()
	if o := wait(t, got, promptly, "waiter"); o.err == nil {
		t.Error("the waiter got the lock")
	}
}
