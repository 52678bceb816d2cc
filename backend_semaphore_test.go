package withlock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/redistest"
)

// At no moment do more than N Clients hold a semaphore of N slots, however
// many wait, whether they wait in the fair line or, fenced, for release
// messages; and all N slots are used.
func TestSlotsNeverExceedN(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	const slots, clients = 3, 16
	for _, tc := range []struct {
		name string
		opts *withlock.LockOptions
	}{
		{"in the line", nil},
		{"fenced", &withlock.LockOptions{Fence: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var holding, most, total atomic.Int64
			stop := time.Now().Add(time.Second)
			var wg sync.WaitGroup
			for range clients {
				c := semaphore(t, srv.Client(), slots)
				wg.Go(func() {
					for time.Now().Before(stop) {
						ctx, cancel := context.WithTimeout(context.Background(), promptly)
						l, err := c.Acquire(ctx, "sem", time.Minute, tc.opts)
						cancel()
						if err != nil {
							t.Error(err)
							return
						}
						n := holding.Add(1)
						total.Add(1)
						if n > slots {
							t.Errorf("%d holders at once, want at most %d", n, slots)
						}
						for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
						}
						if l.Slot() < 1 || l.Slot() > slots {
							t.Errorf("Slot() = %d, want 1..%d", l.Slot(), slots)
						}
						time.Sleep(time.Millisecond)
						holding.Add(-1)
						if err := l.Release(context.Background()); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			t.Logf("%d acquisitions, at most %d holders at once", total.Load(), most.Load())
			if most.Load() != slots {
				t.Errorf("at most %d holders at once, want all %d slots used", most.Load(), slots)
			}
		})
	}
}

// KeepAlive (here through Do) renews a slot and the marker with it: a run
// longer than its TTL keeps its slot, and the name stays a semaphore.
//
// Not parallel: it holds a bound in time, kept clear of the parallel
// tests' load.
func TestSlotsKeepAliveRenewsSlotAndMarker(t *testing.T) {
	rdb := startRedis(t)
	ctx := context.Background()
	// A second's TTL: renewals every 333ms with the local deadline 800ms
	// after each, which a loaded machine keeps to.
	err := semaphore(t, rdb, 2).Do(ctx, "ka", time.Second, nil, func(ctx context.Context, l *withlock.Lock) error {
		select {
		case <-time.After(2 * time.Second): // the run's work: two TTLs
		case <-ctx.Done():
			return ctx.Err()
		}
		if _, err := withlock.New(rdb, nil).TryAcquire(ctx, "ka", time.Minute, nil); !errors.Is(err, withlock.ErrSlotsMismatch) {
			t.Errorf("a plain TryAcquire during the run: %v, want ErrSlotsMismatch", err)
		}
		// Both in one MULTI: a renewal between two separate reads would
		// show a fresh slot beside a marker read a moment before it.
		var markCmd, slotCmd *redis.DurationCmd
		if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			markCmd = p.PTTL(ctx, l.Key())
			slotCmd = p.PTTL(ctx, slotKeyOf(l.Key(), l.Slot()))
			return nil
		}); err != nil {
			return fmt.Errorf("reading the TTLs: %w", err)
		}
		if mark, slot := markCmd.Val(), slotCmd.Val(); slot <= 0 || mark < slot {
			t.Errorf("marker PTTL %s, slot PTTL %s: want the slot renewed and the marker no shorter", mark, slot)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if rdb.Exists(ctx, "lock:ka").Val() != 0 {
		t.Error("the marker outlived the run")
	}
}

// A name in use with another number of slots (a plain lock is one) is
// refused at once by TryAcquire and Acquire, naming both numbers.
func TestSlotsMismatchRefused(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	tests := []struct {
		have, want int
		says       []string
	}{
		{3, 5, []string{"in use with 3 slots, not 5"}},
		{1, 3, []string{"held as a plain lock", "a semaphore of 3 slots"}},
		{3, 1, []string{"in use with 3 slots", "not a plain lock"}},
	}
	for _, tc := range tests {
		name := fmt.Sprintf("mismatch-%d-%d", tc.have, tc.want)
		t.Run(name, func(t *testing.T) {
			l := mustAcquire(t, semaphore(t, srv.Client(), tc.have), name, time.Minute)
			c := semaphore(t, srv.Client(), tc.want)
			for _, op := range []string{"TryAcquire", "Acquire"} {
				ctx, cancel := context.WithTimeout(context.Background(), promptly)
				start := time.Now()
				var err error
				if op == "TryAcquire" {
					_, err = c.TryAcquire(ctx, name, time.Minute, nil)
				} else {
					_, err = c.Acquire(ctx, name, time.Minute, nil)
				}
				cancel()
				var se *withlock.SlotsError
				if !errors.Is(err, withlock.ErrSlotsMismatch) || !errors.As(err, &se) {
					t.Fatalf("%s = %v, want a *SlotsError", op, err)
				}
				if se.Have != tc.have || se.Want != tc.want || se.Key != l.Key() {
					t.Errorf("%s: %+v, want Key %s, Have %d, Want %d", op, se, l.Key(), tc.have, tc.want)
				}
				for _, s := range tc.says {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("%s: %q does not say %q", op, err, s)
					}
				}
				if d := time.Since(start); d > time.Second {
					t.Errorf("%s took %s, want an answer at once", op, d)
				}
			}
			if err := l.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// NewSemaphore with one slot is the plain lock: the same commands on the
// wire, tokens aside.
func TestSlotsOneIsThePlainLock(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	one, err := withlock.NewSemaphore(srv.Client(), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := withlock.NewSemaphore(srv.Client(), 0, nil); err == nil {
		t.Error("NewSemaphore with 0 slots succeeded")
	}
	var sent [2][]string
	for i, c := range []*withlock.Client{withlock.New(srv.Client(), nil), one} {
		ctx := context.Background()
		mon := srv.Monitor()
		l, err := c.TryAcquire(ctx, "one", time.Minute, &withlock.LockOptions{Fence: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Extend(ctx, time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := l.TTL(ctx); err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if l.Slot() != 0 {
			t.Errorf("Slot() = %d, want 0 for a plain lock", l.Slot())
		}
		for _, cmd := range withoutHandshake(mon.Commands()) {
			line := strings.ReplaceAll(strings.Join(cmd.Args, " "), l.Token(), "TOKEN")
			sent[i] = append(sent[i], strings.ReplaceAll(line, fmt.Sprint(l.Fence()), "FENCE"))
		}
	}
	if !slices.Equal(sent[0], sent[1]) || len(sent[0]) == 0 {
		t.Errorf("NewSemaphore(1) sent\n%q\nNew sent\n%q", sent[1], sent[0])
	}
}

// Every fenced acquisition of a semaphore draws a number greater than all
// earlier ones of the name, whichever slot it gets, from the name's one
// counter.
func TestSlotsFenceStrictlyIncreases(t *testing.T) {
	t.Parallel()
	rdb := startRedis(t)
	c := semaphore(t, rdb, 3)
	ctx := context.Background()
	fenced := &withlock.LockOptions{Fence: true}
	var last int64
	for round := range 5 {
		var held []*withlock.Lock
		for range 3 {
			l, err := c.TryAcquire(ctx, "fenced", time.Minute, fenced)
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			if l.Fence() <= last {
				t.Errorf("round %d slot %d: fence %d, not above %d", round, l.Slot(), l.Fence(), last)
			}
			last = l.Fence()
			held = append(held, l)
		}
		if got, _ := rdb.Get(ctx, withlock.FenceKey(c, "fenced")).Int64(); got != last {
			t.Errorf("counter %d, want the last fence %d", got, last)
		}
		if _, err := c.TryAcquire(ctx, "fenced", time.Minute, fenced); !errors.Is(err, withlock.ErrNotObtained) {
			t.Fatalf("a fourth holder: %v, want ErrNotObtained", err)
		}
		for _, l := range held {
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got, _ := rdb.Get(ctx, withlock.FenceKey(c, "fenced")).Int64(); got != last {
		t.Errorf("a refused acquisition drew a number: counter %d, want %d", got, last)
	}
}

// A slot holder that never releases frees its slot when its TTL runs out,
// and a waiter is woken then and takes it.
func TestSlotHolderCrashFreesSlotByTTL(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := semaphore(t, srv.Client(), 2)
	stays := mustAcquire(t, c, "crash", time.Minute)
	crashed := mustAcquire(t, c, "crash", 300*time.Millisecond)
	expires := crashed.Acquired().Add(300 * time.Millisecond)
	waiter := semaphore(t, srv.Client(), 2)
	withlock.SetWaitTimings(waiter, longPoll, time.Minute)
	o := wait(t, acquireAsync(context.Background(), waiter, "crash", time.Minute), promptly, "waiter")
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.lock.Slot() != crashed.Slot() {
		t.Errorf("waiter got slot %d, want the crashed holder's %d", o.lock.Slot(), crashed.Slot())
	}
	if o.at.Before(expires) {
		t.Errorf("waiter got the slot %s before the crashed holder's TTL ran out", expires.Sub(o.at))
	}
	for _, l := range []*withlock.Lock{stays, o.lock} {
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// The marker lives as long as the longest slot: a slot extended beyond the
// others' TTL keeps the name a semaphore after they expired, and another
// number of slots is still refused.
func TestSlotsMarkerOutlivesEverySlot(t *testing.T) {
	t.Parallel()
	rdb := startRedis(t)
	sem := semaphore(t, rdb, 3)
	ctx := context.Background()
	long := mustAcquire(t, sem, "mark", 300*time.Millisecond)
	short := mustAcquire(t, sem, "mark", 300*time.Millisecond)
	if err := long.Extend(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	waitGone(t, rdb, slotKeyOf(short.Key(), short.Slot()))
	mark := rdb.PTTL(ctx, long.Key()).Val() // first: the slot's can only be shorter later
	slot := rdb.PTTL(ctx, slotKeyOf(long.Key(), long.Slot())).Val()
	if slot <= 0 || mark < slot {
		t.Errorf("marker PTTL %s, slot PTTL %s: want the marker to outlive the slot", mark, slot)
	}
	for _, c := range []*withlock.Client{withlock.New(rdb, nil), semaphore(t, rdb, 5)} {
		if _, err := c.TryAcquire(ctx, "mark", time.Minute, nil); !errors.Is(err, withlock.ErrSlotsMismatch) {
			t.Errorf("TryAcquire = %v, want ErrSlotsMismatch", err)
		}
	}
	if err := long.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if rdb.Exists(ctx, long.Key()).Val() != 0 {
		t.Error("the marker outlived the last release")
	}
}

// On Cluster a semaphore's keys live in its name's slot: acquisitions,
// status and release work whether or not the name has a hash tag.
func TestSlotsOnCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	sem := semaphore(t, cl.Client(), 2)
	ctx := context.Background()
	for _, name := range []string{"c-sem", "{tag}c-sem"} {
		a := mustAcquire(t, sem, name, time.Minute)
		b := mustAcquire(t, sem, name, time.Minute)
		node := cl.NodeFor(a.Key()).Client()
		for _, l := range []*withlock.Lock{a, b} {
			if v := node.Get(ctx, slotKeyOf(l.Key(), l.Slot())).Val(); v != l.Token() {
				t.Errorf("%s: slot %d holds %q on the name's node", name, l.Slot(), v)
			}
		}
		st, err := sem.Status(ctx, name)
		if err != nil || len(st.Holders) != 2 {
			t.Errorf("%s: Status = %+v, %v", name, st, err)
		}
		for _, l := range []*withlock.Lock{a, b} {
			if err := l.Release(ctx); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		if node.Exists(ctx, a.Key()).Val() != 0 {
			t.Errorf("%s: marker left after the last release", name)
		}
	}
}

// A slot released early within its min-hold is kept until the min-hold
// passes, with the run's record stored in the same round trip; the marker
// then lives no longer than that slot, so the name is soon free for any
// number of slots.
func TestSlotsMinHoldKeepsSlotThenFreesName(t *testing.T) {
	t.Parallel()
	rdb := startRedis(t)
	ctx := context.Background()
	sem := semaphore(t, rdb, 2)
	l, err := sem.TryAcquire(ctx, "hold", time.Minute, &withlock.LockOptions{MinHold: 500 * time.Millisecond, Fence: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(l.ReleaseAndRecord(ctx, withlock.Run{ExitCode: 3}, time.Minute)); err != nil {
		t.Fatal(err)
	}
	mark := rdb.PTTL(ctx, l.Key()).Val()
	slot := rdb.PTTL(ctx, slotKeyOf(l.Key(), l.Slot())).Val()
	if slot <= 0 || slot > 500*time.Millisecond || mark < slot || mark > 500*time.Millisecond {
		t.Errorf("after an early release: slot PTTL %s, marker PTTL %s; want both within the 500ms min-hold, the marker no shorter", slot, mark)
	}
	st, err := withlock.New(rdb, nil).Status(ctx, "hold")
	if err != nil {
		t.Fatal(err)
	}
	if !st.Held || !st.KeptByMinHold || st.LastRun == nil || st.LastRun.ExitCode != 3 || st.LastRun.Fence != l.Fence() {
		t.Errorf("Status during the min-hold: %+v, want held by the finished run it recorded", st)
	}
	waitGone(t, rdb, l.Key())
	if err := mustAcquire(t, withlock.New(rdb, nil), "hold", time.Minute).Release(ctx); err != nil {
		t.Fatal(err)
	}
}
