package withlock_test

// Round trips shared between the concurrent callers of one Client
// (roundtrip.go): each caller's own result, a caller's context, and a lone
// caller that waits for nobody.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/redistest"
)

// replyGate holds the replies of a client's connections while it is shut:
// a command is written, and run by Redis, but its caller does not read
// the reply until the gate lets it. So a test can hold a round trip in
// flight as long as it likes.
type replyGate struct {
	mu     sync.Mutex
	cond   *sync.Cond
	shut   bool
	passed int // while shut, the replies to writes up to this one are read
	held   int // reads waiting at the gate now
	writes int // writes on every connection so far
}

func newReplyGate() *replyGate {
	g := &replyGate{}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// dial is a go-redis Dialer whose connections pass the gate.
func (g *replyGate) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &gatedConn{Conn: c, g: g}, nil
}

// set shuts the gate, or opens it; shut, it holds the replies to the
// writes made from now on.
func (g *replyGate) set(shut bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.shut, g.passed = shut, g.writes
	g.cond.Broadcast()
}

// pass lets the replies to every write so far through the shut gate.
func (g *replyGate) pass() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.passed = g.writes
	g.cond.Broadcast()
}

func (g *replyGate) state() (held, writes int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held, g.writes
}

type gatedConn struct {
	net.Conn
	g         *replyGate
	lastWrite int // the number of this connection's last write
}

func (c *gatedConn) Read(b []byte) (int, error) {
	g := c.g
	g.mu.Lock()
	for g.shut && c.lastWrite > g.passed {
		g.held++
		g.cond.Wait()
		g.held--
	}
	g.mu.Unlock()
	return c.Conn.Read(b)
}

func (c *gatedConn) Write(b []byte) (int, error) {
	c.g.mu.Lock()
	c.g.writes++
	c.lastWrite = c.g.writes
	c.g.mu.Unlock()
	return c.Conn.Write(b)
}

// callResult is what one concurrent caller got.
type callResult struct {
	l   *withlock.Lock
	err error
}

// TestConcurrentCallersSharingARoundTripEachGetTheirOwnResult holds a lone
// acquisition's reply, lets callers with every kind of outcome queue behind
// it, and checks that they went out together in one pipeline and each got
// its own result: acquired, busy, released, a WRONGTYPE reply, a context
// cancelled before its command was sent (it never reaches Redis) and one
// cancelled while its command is in flight (its caller returns at once, and
// the lock it took is cleaned up when the reply comes). No lock is left.
func TestConcurrentCallersSharingARoundTripEachGetTheirOwnResult(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	admin := srv.Client()
	gate := newReplyGate()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), Dialer: gate.dial, DisableIdentity: true})
	t.Cleanup(func() { _ = rdb.Close() })
	c := withlock.New(rdb, nil)
	withlock.OneTripInFlight(c) // the round trip held in flight is the only one: every other caller waits for the next
	other := withlock.New(admin, nil)

	// The Client's first acquisition and release (INFO, EVAL) are done
	// with; the locks to release are held; "busy" is someone else's, and
	// the key of "wrongtype" turns into a list while it is held.
	// "late" and "free1" were taken before, so their acquisitions are one
	// SET each, without the index's write (a caller sending more waits
	// for its replies once sent).
	for _, name := range []string{"warm", "late", "free1"} {
		warm, err := c.TryAcquire(ctx, name, time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := warm.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	relOK, err := c.TryAcquire(ctx, "released", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	relWrong, err := c.TryAcquire(ctx, "wrongtype", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.Del(ctx, "lock:wrongtype").Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.RPush(ctx, "lock:wrongtype", "x").Err(); err != nil {
		t.Fatal(err)
	}
	busy, err := other.TryAcquire(ctx, "busy", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	mon := srv.Monitor()

	gate.set(true)
	lead := make(chan callResult, 1)
	go func() {
		l, err := c.TryAcquire(ctx, "lead", time.Minute, nil)
		lead <- callResult{l, err}
	}()
	eventually(t, "the lone acquisition's reply is not awaited", func() bool {
		held, _ := gate.state()
		return held == 1
	})

	early, cancelEarly := context.WithCancel(ctx)
	defer cancelEarly()
	late, cancelLate := context.WithCancel(ctx)
	defer cancelLate()
	calls := []struct {
		name string
		call func() callResult
		want func(callResult) error
	}{
		{"acquires free1", acquiring(c, ctx, "free1"), wantLock},
		{"acquires free2", acquiring(c, ctx, "free2"), wantLock},
		{"finds busy held", acquiring(c, ctx, "busy"), wantErr(withlock.ErrNotObtained)},
		{"releases", releasing(ctx, relOK), wantNoErr},
		{"gets WRONGTYPE", releasing(ctx, relWrong), wantText("WRONGTYPE")},
		{"cancelled before sent", acquiring(c, early, "early"), wantErr(context.Canceled)},
		{"cancelled in flight", acquiring(c, late, "late"), wantErr(context.Canceled)},
	}
	results := make([]chan callResult, len(calls))
	for i := range calls {
		results[i] = make(chan callResult, 1)
	}
	// The late caller waits first, so it is the one to send the next round
	// trip: a goroutine then sends it, as its context can end.
	start := func(i int) { go func() { results[i] <- calls[i].call() }() }
	start(6)
	eventually(t, "the late caller waits for the next round trip", func() bool {
		_, n := withlock.SharedTrips(c)
		return n == 1
	})
	for i := range 6 {
		start(i)
	}
	eventually(t, "every caller waits for the next round trip", func() bool {
		_, n := withlock.SharedTrips(c)
		return n == len(calls)
	})

	// Cancelled while waiting to be sent: it returns at once, with the
	// lone acquisition's reply still held.
	cancelEarly()
	early1 := recv(t, results[5])
	if err := calls[5].want(early1); err != nil {
		t.Errorf("cancelled before sent: %v", err)
	}
	if _, n := withlock.SharedTrips(c); n != len(calls)-1 {
		t.Errorf("%d callers wait after one took its command back, want %d", n, len(calls)-1)
	}

	// The lone acquisition's reply comes; the others then go out in one
	// write, run by Redis, their replies held.
	_, writesBefore := gate.state()
	gate.pass()
	leadRes := recv(t, lead)
	if leadRes.err != nil {
		t.Fatalf("lone acquisition: %v", leadRes.err)
	}
	eventually(t, "the shared round trip's reply is not awaited", func() bool {
		held, _ := gate.state()
		inFlight, n := withlock.SharedTrips(c)
		return held == 1 && inFlight && n == 0
	})
	if _, writes := gate.state(); writes != writesBefore+1 {
		t.Errorf("the waiting callers' commands went out in %d writes, want 1", writes-writesBefore)
	}
	eventually(t, "the in-flight SET of the late caller lands", func() bool {
		return admin.Exists(ctx, "lock:late").Val() == 1
	})

	// Cancelled in flight: it stops waiting at once, the reply still held.
	cancelLate()
	late1 := recv(t, results[6])
	if err := calls[6].want(late1); err != nil {
		t.Errorf("cancelled in flight: %v", err)
	}

	gate.set(false)
	got := make([]callResult, len(calls))
	got[5], got[6] = early1, late1
	for i := range 5 {
		got[i] = recv(t, results[i])
	}
	for i, call := range calls {
		if err := call.want(got[i]); err != nil {
			t.Errorf("%s: %v", call.name, err)
		}
	}

	eventually(t, "the late caller's lock is cleaned up once its reply came", func() bool {
		return admin.Exists(ctx, "lock:late").Val() == 0
	})
	for _, cmd := range mon.Commands() {
		if strings.Contains(cmd.String(), "lock:early") {
			t.Errorf("the command taken back reached Redis: %s", cmd)
		}
	}

	// Nothing left behind: every lock taken is released.
	for _, r := range append(got, leadRes) {
		if r.l != nil {
			if err := r.l.Release(ctx); err != nil {
				t.Errorf("release %s: %v", r.l.Key(), err)
			}
		}
	}
	if err := busy.Release(ctx); err != nil {
		t.Fatal(err)
	}
	admin.Del(ctx, "lock:wrongtype")
	if left := lockKeys(t, admin); len(left) > 0 {
		t.Errorf("locks left behind: %v", left)
	}
}

// recv is a caller's result, which must come promptly.
func recv(t *testing.T, ch chan callResult) callResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(promptly):
		t.Fatalf("a caller has no result after %s", promptly)
	}
	return callResult{}
}

// acquiring is a caller that tries to take name with c.
func acquiring(c *withlock.Client, ctx context.Context, name string) func() callResult {
	return func() callResult {
		l, err := c.TryAcquire(ctx, name, time.Minute, nil)
		return callResult{l, err}
	}
}

// releasing is a caller that releases l.
func releasing(ctx context.Context, l *withlock.Lock) func() callResult {
	return func() callResult { return callResult{err: l.Release(ctx)} }
}

func wantLock(r callResult) error {
	if r.err != nil || r.l == nil {
		return fmt.Errorf("got %v, %v; want the lock", r.l, r.err)
	}
	return nil
}

func wantNoErr(r callResult) error {
	if r.err != nil {
		return fmt.Errorf("got %v, want no error", r.err)
	}
	return nil
}

func wantErr(target error) func(callResult) error {
	return func(r callResult) error {
		if r.l != nil || !errors.Is(r.err, target) {
			return fmt.Errorf("got %v, %v; want an error matching %v", r.l, r.err, target)
		}
		return nil
	}
}

func wantText(text string) func(callResult) error {
	return func(r callResult) error {
		if r.err == nil || !strings.Contains(r.err.Error(), text) {
			return fmt.Errorf("got %v; want an error saying %s", r.err, text)
		}
		return nil
	}
}

// TestALoneCallerSendsAtOnce holds every reply of a Client with nothing
// else in flight: its acquisition's SET, and then its release's script,
// are run by Redis before their replies come, each in one write of its own:
// a lone caller waits for no company before sending.
func TestALoneCallerSendsAtOnce(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), promptly)
	defer cancel()
	srv := redistest.Start(t)
	admin := srv.Client()
	c, gate := warmGatedClient(t, ctx, srv, "alone")

	var l *withlock.Lock // the acquisition's, for the release
	for _, step := range []struct {
		name   string
		call   func() callResult
		landed func() bool
	}{
		{"acquisition", acquiring(c, ctx, "alone"), func() bool { return admin.Exists(ctx, "lock:alone").Val() == 1 }},
		{"release", func() callResult { return releasing(ctx, l)() }, func() bool { return admin.Exists(ctx, "lock:alone").Val() == 0 }},
	} {
		_, writes := gate.state()
		gate.set(true)
		done := make(chan callResult, 1)
		go func() { done <- step.call() }()
		eventually(t, step.name+" runs in Redis while its reply is held", step.landed)
		if inFlight, n := withlock.SharedTrips(c); !inFlight || n != 0 {
			t.Errorf("%s: in flight %v, %d waiting; want it in flight alone", step.name, inFlight, n)
		}
		if _, w := gate.state(); w != writes+1 {
			t.Errorf("%s went out in %d writes, want 1", step.name, w-writes)
		}
		gate.set(false)
		r := recv(t, done)
		if r.err != nil {
			t.Fatalf("%s: %v", step.name, r.err)
		}
		if r.l != nil {
			l = r.l
		}
	}
}

// TestCallersGoAtOnceUntilMaxTripsAreInFlight: while fewer than MaxTrips
// round trips of a Client are in flight, a caller sends its command at
// once, on a connection of its own; once MaxTrips are, the next caller
// waits for a shared round trip. Each gets its own lock when the replies
// come.
func TestCallersGoAtOnceUntilMaxTripsAreInFlight(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), promptly)
	defer cancel()
	c, gate := warmGatedClient(t, ctx, redistest.Start(t), "warm")

	gate.set(true)
	results := make(chan callResult, withlock.MaxTrips+1)
	for i := range withlock.MaxTrips {
		go func() { results <- acquiring(c, ctx, fmt.Sprintf("at-once-%d", i))() }()
		eventually(t, fmt.Sprintf("caller %d sent at once", i+1), func() bool {
			held, _ := gate.state()
			return held == i+1
		})
		if _, n := withlock.SharedTrips(c); n != 0 {
			t.Fatalf("caller %d: %d callers waiting, want none: it had a round trip of its own", i+1, n)
		}
	}
	go func() { results <- acquiring(c, ctx, "waits")() }()
	eventually(t, "the caller past MaxTrips waits for a shared round trip", func() bool {
		_, n := withlock.SharedTrips(c)
		return n == 1
	})
	gate.set(false)
	for range withlock.MaxTrips + 1 {
		if err := wantLock(recv(t, results)); err != nil {
			t.Error(err)
		}
	}
}

// warmGatedClient is a Client whose connections pass a reply gate (open),
// past its first acquisition and release of name, which also write the
// index and ask INFO: what a test then sends is its own commands alone.
func warmGatedClient(t *testing.T, ctx context.Context, srv *redistest.Server, name string) (*withlock.Client, *replyGate) {
	t.Helper()
	gate := newReplyGate()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), Dialer: gate.dial, DisableIdentity: true})
	t.Cleanup(func() { _ = rdb.Close() })
	c := withlock.New(rdb, nil)
	warm, err := c.TryAcquire(ctx, name, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := warm.Release(ctx); err != nil {
		t.Fatal(err)
	}
	return c, gate
}
