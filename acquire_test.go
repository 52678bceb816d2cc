package withlock_test

// TryAcquire and Release: the key and our token, a busy lock, expiry, the
// prefix, replicas, and names refused; and the lease mark an acquisition
// sets and every release deletes (lease.go), further down.

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/lapse"
	"github.com/with-lock/with-lock/internal/redistest"
)

func tokenPattern(t *testing.T) *regexp.Regexp {
	return regexp.MustCompile(`^` + regexp.QuoteMeta(holder(t)) + `:[0-9a-z]+\.[0-9a-f]{32}$`)
}

// foreignToken is a token another process would have written.
const foreignToken = "otherhost:4242:0123456789abcdef0123456789abcdef"

func TestTryAcquireTakesTheKeyWithOurToken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	locker, rdb, _ := setup(t)
	before := time.Now()
	l := mustAcquire(t, locker, "job", 10*time.Second)
	after := time.Now()
	if withlock.LockName(l) != "job" || l.Key() != "lock:job" {
		t.Errorf("name, Key = %q, %q; want job, lock:job", withlock.LockName(l), l.Key())
	}
	if !tokenPattern(t).MatchString(l.Token()) {
		t.Errorf("token %q is not <host>:<pid>:<ms36>.<32 hex> with %s", l.Token(), holder(t))
	}
	if got := rdb.Get(ctx, "lock:job").Val(); got != l.Token() {
		t.Errorf("key holds %q, want the lock's token %q", got, l.Token())
	}
	if at := l.Acquired(); at.Before(before) || at.After(after) {
		t.Errorf("AcquiredAt %v not within the call [%v, %v]", at, before, after)
	}
	if l.Fence() != 0 {
		t.Errorf("Fence() = %d without LockOptions.Fence, want 0", l.Fence())
	}
}

func TestTokensAreUnique(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	locker, _, _ := setup(t)
	seen := map[string]bool{}
	for i := range 50 {
		l, err := locker.TryAcquire(ctx, fmt.Sprint("job", i), time.Minute, nil)
		if err != nil {
			t.Fatalf("TryAcquire: %v", err)
		}
		r := randomPart(l.Token())
		if seen[r] {
			t.Fatalf("random part %s repeated after %d tokens", r, i)
		}
		seen[r] = true
	}
}

func TestTryAcquireBusy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name       string
		value      string // what the key holds
		ttl        time.Duration
		wantHolder string
		wantTTL    bool
	}{
		{"other owner", foreignToken, 20 * time.Second, "otherhost:4242", true},
		{"not a token", "garbage", 20 * time.Second, "unknown", true},
		{"no expiry", foreignToken, 0, "otherhost:4242", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			locker, rdb, _ := setup(t)
			rdb.Set(ctx, "lock:job", tc.value, tc.ttl)
			l, err := locker.TryAcquire(ctx, "job", 10*time.Second, nil)
			if !errors.Is(err, withlock.ErrNotObtained) || l != nil {
				t.Fatalf("TryAcquire on a held lock = %v, %v; want nil, ErrNotObtained", l, err)
			}
			var held *withlock.NotObtainedError
			if !errors.As(err, &held) {
				t.Fatalf("error %T is not a *NotObtainedError", err)
			}
			if held.Key != "lock:job" || held.Holder.ID != tc.wantHolder {
				t.Errorf("NotObtainedError Key, Holder = %q, %q; want lock:job, %q", held.Key, held.Holder.ID, tc.wantHolder)
			}
			if tc.wantTTL && (held.Holder.TTL <= 0 || held.Holder.TTL > tc.ttl) {
				t.Errorf("NotObtainedError.Holder.TTL = %v, want in (0, %v]", held.Holder.TTL, tc.ttl)
			}
			if !tc.wantTTL && (held.Holder.TTL != -1 || !strings.Contains(err.Error(), "no expiry")) {
				t.Errorf("NotObtainedError.Holder.TTL = %v for a key without expiry, want -1 (as Status says), and %q to say so", held.Holder.TTL, err)
			}
			if strings.Contains(err.Error(), randomPart(foreignToken)) {
				t.Errorf("error %q shows the holder's secret", err)
			}
			if got := rdb.Get(ctx, "lock:job").Val(); got != tc.value {
				t.Errorf("busy TryAcquire changed the key to %q", got)
			}
		})
	}

	t.Run("our own other lock", func(t *testing.T) {
		locker, _, _ := setup(t)
		first := mustAcquire(t, locker, "job", 10*time.Second)
		_, err := locker.TryAcquire(ctx, "job", 10*time.Second, nil)
		var held *withlock.NotObtainedError
		if !errors.As(err, &held) || held.Holder.ID != holder(t) {
			t.Fatalf("second TryAcquire = %v; want a *NotObtainedError naming %s", err, holder(t))
		}
		if strings.Contains(err.Error(), randomPart(first.Token())) || strings.Contains(held.Holder.ID, randomPart(first.Token())) {
			t.Errorf("error %q shows the holder's secret", err)
		}
	})
}

// Redis answered the SET NX, then stopped before the round trip that reads
// the holder: the try is refused with the holder unknown, not failed as if
// Redis were unreachable.
func TestTryAcquireRefusedIsNotObtainedWhenTheHolderCannotBeRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	srv.Client().Set(ctx, "lock:job", foreignToken, time.Minute)
	// A second: the SET's own reply must come within it on a loaded machine;
	// the holder's read then waits it out.
	rdb := srv.ClientWith(&redis.Options{MaxRetries: -1, ReadTimeout: time.Second})
	var stopped atomic.Bool
	rdb.AddHook(stopAfterSet{func() {
		if !stopped.Swap(true) {
			srv.Signal(syscall.SIGSTOP)
		}
	}})
	defer srv.Signal(syscall.SIGCONT)
	l, err := withlock.New(rdb, nil).TryAcquire(ctx, "job", 10*time.Second, nil)
	var held *withlock.NotObtainedError
	if !stopped.Load() || l != nil || !errors.As(err, &held) || held.Holder.ID != "unknown" {
		t.Fatalf("TryAcquire = %v, %v (Redis stopped after the SET: %v); want a *NotObtainedError, holder unknown", l, err, stopped.Load())
	}
}

// stopAfterSet is a go-redis hook that calls stop once a pipeline that
// holds a SET has its replies.
type stopAfterSet struct{ stop func() }

func (stopAfterSet) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (stopAfterSet) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h stopAfterSet) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if slices.ContainsFunc(cmds, func(c redis.Cmder) bool { return c.Name() == "set" }) {
			h.stop()
		}
		return err
	}
}

func TestTryAcquireConcurrentOneWins(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	locker, _, _ := setup(t)
	var wg sync.WaitGroup
	results := make(chan error, 20)
	for range 20 {
		wg.Go(func() {
			_, err := locker.TryAcquire(ctx, "job", 10*time.Second, nil)
			results <- err
		})
	}
	wg.Wait()
	close(results)
	won := 0
	for err := range results {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, withlock.ErrNotObtained):
			t.Errorf("TryAcquire: %v", err)
		}
	}
	if won != 1 {
		t.Errorf("%d of 20 concurrent TryAcquire won, want 1", won)
	}
}

// TestSetExpiry checks the one SET on the wire (EX for whole seconds, PX
// otherwise, always NX), after the index's write, and that the key's PTTL
// matches the TTL asked for. The Client has acquired once before: its first
// acquisition also asks INFO memory.
func TestSetExpiry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		ttl      time.Duration
		unit     string
		value    string
		min, max time.Duration // the PTTL right after
	}{
		{30 * time.Second, "ex", "30", 29 * time.Second, 30 * time.Second},
		{2 * time.Second, "ex", "2", time.Second, 2 * time.Second},
		{1500 * time.Millisecond, "px", "1500", time.Second, 1500 * time.Millisecond},
		{500 * time.Millisecond, "px", "500", time.Millisecond, 500 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.ttl.String(), func(t *testing.T) {
			locker, rdb, srv := setup(t)
			if _, err := locker.TryAcquire(ctx, "first", time.Minute, nil); err != nil {
				t.Fatal(err) // a Client's first acquisition also asks INFO memory (TestOnlyTheFirstAcquisitionAsksTheEvictionPolicy)
			}
			mon := srv.Monitor()
			l := mustAcquire(t, locker, "job", tc.ttl)
			// The Client's first acquisition of the name also writes it
			// into the index of names, ahead of the SET (admin_index.go).
			index := []string{"hset", "{lock:}:names", "lock:job", ""}
			want := []string{"set", "lock:job", l.Token(), tc.unit, tc.value, "nx"}
			if cmds := withoutHandshake(mon.Commands()); len(cmds) != 2 || !slices.Equal(cmds[0].Args, index) || !slices.Equal(cmds[1].Args, want) {
				t.Errorf("commands sent = %v, want exactly %q and %q", cmds, index, want)
			}
			pttl := rdb.PTTL(ctx, "lock:job").Val()
			if pttl <= tc.min || pttl > tc.max {
				t.Errorf("PTTL after TryAcquire(%v) = %v, want in (%v, %v]", tc.ttl, pttl, tc.min, tc.max)
			}
		})
	}
	t.Run("below 1ms", func(t *testing.T) {
		locker, rdb, _ := setup(t)
		_, err := locker.TryAcquire(ctx, "job", time.Microsecond, nil)
		if err == nil || errors.Is(err, withlock.ErrNotObtained) {
			t.Errorf("TryAcquire with 1µs = %v, want an argument error", err)
		}
		if rdb.Exists(ctx, "lock:job").Val() != 0 {
			t.Error("a rejected TTL still created the key")
		}
	})
}

func TestPrefix(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client()
	for _, tc := range []struct {
		opts *withlock.Options
		want string
	}{
		{nil, "lock:job"},
		{&withlock.Options{}, "lock:job"},
		{&withlock.Options{Prefix: "jobs/"}, "jobs/job"},
	} {
		locker := withlock.New(rdb, tc.opts)
		if got := locker.Key("job"); got != tc.want {
			t.Errorf("Key with %+v = %q, want %q", tc.opts, got, tc.want)
		}
		l, err := locker.TryAcquire(ctx, "job", time.Second, nil)
		if err != nil {
			t.Fatalf("TryAcquire with %+v: %v", tc.opts, err)
		}
		if l.Key() != tc.want || rdb.Get(ctx, tc.want).Val() != l.Token() {
			t.Errorf("lock with %+v at %q, want the token at %q", tc.opts, l.Key(), tc.want)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRelease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name   string
		meddle func(rdb *redis.Client) // what happens to the key while we hold it
		want   error
		after  string // the key's value after Release; "" for gone
	}{
		{"ours", func(*redis.Client) {}, nil, ""},
		{"deleted", func(rdb *redis.Client) { rdb.Del(ctx, "lock:job") }, withlock.ErrLockNotHeld, ""},
		{"taken over", func(rdb *redis.Client) { rdb.Set(ctx, "lock:job", foreignToken, time.Minute) }, withlock.ErrLockNotHeld, foreignToken},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			locker, rdb, _ := setup(t)
			l := mustAcquire(t, locker, "job", 10*time.Second)
			tc.meddle(rdb)
			if err := l.Release(ctx); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("Release = %v, want %v", err, tc.want)
			}
			if got := rdb.Get(ctx, "lock:job").Val(); got != tc.after {
				t.Errorf("key after Release = %q, want %q", got, tc.after)
			}
			if tc.after != "" {
				if pttl := rdb.PTTL(ctx, "lock:job").Val(); pttl <= 50*time.Second {
					t.Errorf("the other owner's TTL became %v, want it left at about 1m", pttl)
				}
			}
			// Whatever happened, a second Release finds the lock not ours.
			if err := l.Release(ctx); !errors.Is(err, withlock.ErrLockNotHeld) {
				t.Errorf("second Release = %v, want ErrLockNotHeld", err)
			}
		})
	}

	t.Run("expired", func(t *testing.T) {
		locker, rdb, _ := setup(t)
		l := mustAcquire(t, locker, "job", 50*time.Millisecond)
		waitGone(t, rdb, "lock:job")
		if err := l.Release(ctx); !errors.Is(err, withlock.ErrLockNotHeld) {
			t.Errorf("Release after expiry = %v, want ErrLockNotHeld", err)
		}
	})
}

// withoutHandshake leaves out the HELLO go-redis sends on a new connection.
func withoutHandshake(cmds []redistest.Command) []redistest.Command {
	return slices.DeleteFunc(cmds, func(c redistest.Command) bool { return c.Args[0] == "hello" })
}

// waitGone polls until key no longer exists.
func waitGone(t *testing.T, rdb *redis.Client, key string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for rdb.Exists(context.Background(), key).Val() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%s still exists after 10s", key)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A lock that fewer replicas than MinReplicas acknowledge is given up: the
// error matches ErrNotReplicated, says how many acknowledged out of how many
// were required, and the key is gone.
func TestNotReplicatedSaysGotAndWantAndReleases(t *testing.T) {
	t.Parallel()
	locker, rdb, _ := setup(t) // a server without replicas
	ctx := context.Background()
	opts := &withlock.LockOptions{MinReplicas: 1, ReplicaTimeout: 50 * time.Millisecond}
	l, err := locker.TryAcquire(ctx, "replicated", time.Minute, opts)
	if !errors.Is(err, withlock.ErrNotReplicated) || l != nil {
		t.Fatalf("TryAcquire = %v, %v; want an error matching ErrNotReplicated", l, err)
	}
	if !strings.Contains(err.Error(), "acknowledged by 0 of the 1 replicas required") {
		t.Errorf("error %q does not say 0 of 1 replicas acknowledged", err)
	}
	if n := rdb.Exists(ctx, locker.Key("replicated")).Val(); n != 0 {
		t.Errorf("the key is still there after the failed acquisition")
	}
}

// A lock called "" is refused with ErrEmptyName by every entry point, on a
// plain lock, a semaphore and a quorum, and touches no key: its key would
// be the bare prefix, one lock shared by every caller that forgot a name.
func TestEmptyNameIsRefused(t *testing.T) {
	t.Parallel()
	rdb := startRedis(t)
	ctx := context.Background()
	sem, err := withlock.NewSemaphore(rdb, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	quorum, err := withlock.NewQuorum([]redis.UniversalClient{rdb, redistest.Start(t).Client(), redistest.Start(t).Client()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		client *withlock.Client
	}{{"lock", withlock.New(rdb, nil)}, {"semaphore", sem}, {"quorum", quorum}} {
		for _, call := range []struct {
			name string
			do   func(*withlock.Client) error
		}{
			{"TryAcquire", func(l *withlock.Client) error { _, err := l.TryAcquire(ctx, "", time.Second, nil); return err }},
			{"Acquire", func(l *withlock.Client) error { _, err := l.Acquire(ctx, "", time.Second, nil); return err }},
			{"Do", func(l *withlock.Client) error {
				return l.Do(ctx, "", time.Second, nil, func(context.Context, *withlock.Lock) error {
					t.Error("Do ran fn for an empty name")
					return nil
				})
			}},
			{"Do waiting", func(l *withlock.Client) error {
				return l.Do(ctx, "", time.Second, &withlock.DoOptions{Wait: true}, func(context.Context, *withlock.Lock) error {
					t.Error("Do ran fn for an empty name")
					return nil
				})
			}},
			{"Status", func(l *withlock.Client) error { _, err := l.Status(ctx, ""); return err }},
			{"Break", func(l *withlock.Client) error { _, err := l.Break(ctx, ""); return err }},
		} {
			t.Run(c.name+"/"+call.name, func(t *testing.T) {
				if err := call.do(c.client); !errors.Is(err, withlock.ErrEmptyName) {
					t.Errorf("err = %v, want ErrEmptyName", err)
				}
				if n := rdb.DBSize(ctx).Val(); n != 0 {
					keys, _ := rdb.Keys(ctx, "*").Result()
					t.Errorf("keys written: %q", keys)
				}
			})
		}
	}
}

// The lease mark: a lapsed lease told from a released one.

// detecting returns opts (new ones for nil) with internal/lapse's Detect.
func detecting(opts *withlock.LockOptions) *withlock.LockOptions {
	if opts == nil {
		opts = &withlock.LockOptions{}
	}
	lapse.Detect(opts)
	return opts
}

var detect = detecting(nil)

// untilGone polls until key has expired, within a deadline far above the
// TTLs the tests give.
func untilGone(t *testing.T, rdb *redis.Client, key string) {
	t.Helper()
	deadline := time.Now().Add(promptly)
	for rdb.Exists(context.Background(), key).Val() == 1 {
		if time.Now().After(deadline) {
			t.Fatalf("%s still exists after %s", key, promptly)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// lapse.Lapsed tells a lease that ended by a release (or never was) from one
// that expired, whoever held it and however it was released.
func TestLapsedTellsAnExpiredLeaseFromAReleasedOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const short = 150 * time.Millisecond
	for _, tc := range []struct {
		name   string
		before func(t *testing.T, c *withlock.Client, rdb *redis.Client, key string)
		want   bool
	}{
		{"free", func(*testing.T, *withlock.Client, *redis.Client, string) {}, false},
		{"released", func(t *testing.T, c *withlock.Client, _ *redis.Client, _ string) {
			l := mustTake(t, c, time.Minute, detect)
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"expired", func(t *testing.T, c *withlock.Client, rdb *redis.Client, key string) {
			mustTake(t, c, short, detect)
			untilGone(t, rdb, key)
		}, true},
		{"released after its min-hold", func(t *testing.T, c *withlock.Client, rdb *redis.Client, key string) {
			l := mustTake(t, c, time.Minute, detecting(&withlock.LockOptions{MinHold: short}))
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
			untilGone(t, rdb, key)
		}, false},
		{"expired, then taken and released", func(t *testing.T, c *withlock.Client, rdb *redis.Client, key string) {
			mustTake(t, c, short, detect)
			untilGone(t, rdb, key)
			l := mustTake(t, c, time.Minute, detect)
			if !lapse.Lapsed(l) {
				t.Error("the lease after the expiry does not say it lapsed")
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}, false},
		// A holder without lapse.Detect: a try with it marks the lease.
		{"expired under a holder that marks no lease, tried meanwhile", func(t *testing.T, c *withlock.Client, rdb *redis.Client, key string) {
			mustTake(t, c, short, nil)
			if _, err := c.TryAcquire(ctx, "job", time.Minute, detect); !errors.Is(err, withlock.ErrNotObtained) {
				t.Fatalf("try on a held lock: %v", err)
			}
			untilGone(t, rdb, key)
		}, true},
		{"released by a holder that marks no lease, tried meanwhile", func(t *testing.T, c *withlock.Client, _ *redis.Client, _ string) {
			l := mustTake(t, c, time.Minute, nil)
			if _, err := c.TryAcquire(ctx, "job", time.Minute, detect); !errors.Is(err, withlock.ErrNotObtained) {
				t.Fatalf("try on a held lock: %v", err)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, rdb, _ := setup(t)
			tc.before(t, c, rdb, c.Key("job"))
			trips := &tripLog{}
			rdb.AddHook(trips)
			l := mustTake(t, c, time.Minute, detect)
			if lapse.Lapsed(l) != tc.want {
				t.Errorf("Lapsed = %v, want %v", lapse.Lapsed(l), tc.want)
			}
			// The lease mark rides in the SET's round trip.
			if got := trips.reset(); len(got) != 1 || !slices.Contains(got[0], "set") {
				t.Errorf("the acquisition took round trips %q, want one with the SETs", got)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if n := rdb.Exists(ctx, "{lock:job}:lease").Val(); n != 0 {
				t.Error("the release left the lease mark")
			}
		})
	}
}

// mustTake takes lock "job" or fails the test.
func mustTake(t *testing.T, c *withlock.Client, ttl time.Duration, opts *withlock.LockOptions) *withlock.Lock {
	t.Helper()
	l, err := c.TryAcquire(context.Background(), "job", ttl, opts)
	if err != nil {
		t.Fatalf("TryAcquire: %v", err)
	}
	return l
}

// A waiter handed the lock by the fair line learns how the lease before it
// ended: a release's hand-over is no lapse, whichever Client releases; the
// line's check handing on an expired key, or a break handing on a key
// whose holder may still run, is one.
func TestWaiterHandedTheLockLearnsWhetherTheLeaseLapsed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		sameOwner bool // the holder's Client is the waiter's: its release hands over as a Client with waiters of its own
		end       func(c *withlock.Client, h *withlock.Lock) error
		lapsed    bool
	}{
		{"released", false, func(_ *withlock.Client, h *withlock.Lock) error { return h.Release(ctx) }, false},
		{"released by the waiter's own Client", true, func(_ *withlock.Client, h *withlock.Lock) error { return h.Release(ctx) }, false},
		{"expired", false, func(*withlock.Client, *withlock.Lock) error { return nil }, true},
		{"broken", false, func(c *withlock.Client, _ *withlock.Lock) error {
			_, err := c.Break(ctx, "job")
			return err
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			waiter := waitClient(t, srv)
			holder := withlock.New(srv.Client(), nil)
			if tc.sameOwner {
				holder = waiter
			}
			// Long enough for the waiter to join the line first on a
			// loaded machine: the expired case waits it out.
			h, err := holder.TryAcquire(ctx, "job", 2*time.Second, detect)
			if err != nil {
				t.Fatal(err)
			}
			wctx, cancel := context.WithTimeout(ctx, promptly)
			defer cancel()
			got := make(chan outcome, 1)
			go func() {
				l, err := waiter.Acquire(wctx, "job", time.Minute, detect)
				got <- outcome{lock: l, err: err}
			}()
			// The waiter is in line once its entry is there.
			deadline := time.Now().Add(promptly)
			for srv.Client().LLen(ctx, "{lock:job}:q").Val() == 0 {
				if time.Now().After(deadline) {
					t.Fatal("the waiter never joined the line")
				}
				time.Sleep(5 * time.Millisecond)
			}
			if err := tc.end(holder, h); err != nil {
				t.Fatal(err)
			}
			o := <-got
			if o.err != nil {
				t.Fatalf("Acquire: %v", o.err)
			}
			if lapse.Lapsed(o.lock) != tc.lapsed {
				t.Errorf("Lapsed = %v after the holder's lease was %s, want %v", lapse.Lapsed(o.lock), tc.name, tc.lapsed)
			}
			if err := o.lock.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Where no lease mark can be kept, lapse.Detect's acquisition is refused, not ignored.
func TestLapseDetectionIsRefusedWhereNoMarkIsKept(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := startRedis(t)
	sem, err := withlock.NewSemaphore(rdb, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	quorum, err := withlock.NewQuorum([]redis.UniversalClient{rdb, startRedis(t), startRedis(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		what string
		c    *withlock.Client
		name string
	}{
		{"a semaphore", sem, "job"},
		{"a quorum", quorum, "job"},
		{"a name with '}' and no hash tag", withlock.New(rdb, nil), "a}b"},
	} {
		for _, wait := range []bool{false, true} {
			acquire := tc.c.TryAcquire
			if wait {
				acquire = tc.c.Acquire
			}
			l, err := acquire(ctx, tc.name, time.Minute, detect)
			if !errors.Is(err, errors.ErrUnsupported) {
				t.Errorf("%s (wait %v): lapse.Detect gave %v, %v; want errors.ErrUnsupported", tc.what, wait, l, err)
			}
		}
	}
	if n := rdb.DBSize(ctx).Val(); n != 0 {
		keys := rdb.Keys(ctx, "*").Val()
		t.Errorf("refused acquisitions left keys %q", keys)
	}
}
