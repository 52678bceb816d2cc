package withlock_test

// An acquisition whose reply was lost is cleaned up without touching the
// next owner's lock.

import (
	"context"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// An acquisition whose SET reached a Redis that was stopped (SIGSTOP, a long
// fork) returns an error when the reply does not come in time; Redis runs
// the SET when it resumes. The failed acquisition must clean that up rather
// than leave a lock for its full TTL that nobody will release.
func TestAcquireErrorLeavesNoTokenBehind(t *testing.T) {
	t.Parallel()
	const ttl = 30 * time.Second
	for _, tc := range []struct {
		name string
		busy time.Duration // a foreign holder's TTL at the start; 0: free
		stop time.Duration // SIGSTOP this long after the start
		cont time.Duration // SIGCONT this long after the start
	}{
		// TryAcquire's SET is sent to the stopped server and times out
		// after 1s; the server resumes 1.5s in.
		{"TryAcquire", 0, 0, 1500 * time.Millisecond},
		// Acquire waits for the foreign key to expire (about 1-1.5s in,
		// by its poll or the holder's TTL), sends its SET to the stopped
		// server, times out a second later; the server resumes 3s in.
		{"Acquire", 1500 * time.Millisecond, 300 * time.Millisecond, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			srv := redistest.Start(t)
			admin := srv.Client()
			c := kaClient(t, srv, time.Second)
			// A connection in the pool, so the stopped server gets the SET
			// itself rather than the handshake of a new connection.
			if err := mustAcquire(t, c, "warm-up", ttl).Release(ctx); err != nil {
				t.Fatal(err)
			}
			if tc.busy > 0 {
				admin.Set(ctx, "lock:job", foreignToken, tc.busy)
			}
			start := time.Now()
			done := make(chan error, 1)
			stop := func() { srv.Signal(syscall.SIGSTOP) }
			if tc.stop == 0 {
				stop()
			}
			go func() {
				var err error
				if tc.busy > 0 {
					_, err = c.Acquire(ctx, "job", ttl, nil)
				} else {
					_, err = c.TryAcquire(ctx, "job", ttl, nil)
				}
				done <- err
			}()
			if tc.stop > 0 {
				time.Sleep(time.Until(start.Add(tc.stop)))
				stop()
			}
			time.Sleep(time.Until(start.Add(tc.cont)))
			srv.Signal(syscall.SIGCONT)
			var err error
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("no return within 20s")
			}
			t.Logf("%s returned after %s: %v", tc.name, time.Since(start).Round(time.Millisecond), err)
			if err == nil {
				t.Fatal("the acquisition succeeded; the server was to stop it in flight")
			}
			// Whatever the resumed server had queued has run by now; give
			// a late SET a moment more to show.
			if err := admin.Ping(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			for end := time.Now().Add(500 * time.Millisecond); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
				v := admin.Get(ctx, "lock:job").Val()
				if strings.HasPrefix(v, holder(t)+":") {
					t.Fatalf("after a failed %s the key holds our token, PTTL %s: a lock nobody releases",
						tc.name, admin.PTTL(ctx, "lock:job").Val())
				}
			}
		})
	}
}

// A failed acquisition does not hold on for its cleanup when Redis cannot
// be reached at all: nothing was sent, so there is nothing to clean up.
func TestAcquireErrorWithoutConnectionReturnsPromptly(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := kaClient(t, srv, time.Second)
	srv.Kill()
	start := time.Now()
	_, err := c.TryAcquire(context.Background(), "job", time.Minute, &withlock.LockOptions{Fence: true})
	if err == nil {
		t.Fatal("TryAcquire on a dead server succeeded")
	}
	if d := time.Since(start); d > 250*time.Millisecond {
		t.Errorf("TryAcquire on a refused connection took %s: it waited for a cleanup of nothing", d)
	}
}

// A SET sent to a server that then stays stopped for longer than the
// client's timeouts is cleaned up all the same, on a server that needs a
// password and in a database other than 0: the acquisition returns within
// 1.5 read timeouts, the clean-up it queued authenticates, selects the
// database and runs right after the SET once the server resumes. The
// fence counter shows that the SET did land.
func TestAcquireCleanupQueuedForAStoppedServerRunsWhenItResumes(t *testing.T) {
	t.Parallel()
	const password, db = "cleanup-pw-321", 3
	const readTimeout = 500 * time.Millisecond
	for _, tc := range []struct {
		name string
		opts redis.Options
	}{
		{"password", redis.Options{Password: password, DB: db}},
		{"ACL user", redis.Options{Username: "locker", Password: password, DB: db}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			srv := redistest.Start(t, "requirepass", password)
			admin := srv.ClientWith(&redis.Options{Password: password, DB: db})
			if err := admin.Do(ctx, "ACL", "SETUSER", "locker", "on", ">"+password, "~*", "&*", "+@all").Err(); err != nil {
				t.Fatal(err)
			}
			o := tc.opts
			o.MaxRetries, o.DialerRetries = -1, 1
			o.DialTimeout, o.ReadTimeout, o.WriteTimeout = time.Second, readTimeout, readTimeout
			c := withlock.New(srv.ClientWith(&o), nil)
			// A connection in the pool, so the stopped server gets the SET
			// itself rather than the handshake of a new connection.
			if err := mustAcquire(t, c, "warm-up", time.Minute).Release(ctx); err != nil {
				t.Fatal(err)
			}
			srv.Signal(syscall.SIGSTOP)
			start := time.Now()
			_, err := c.TryAcquire(ctx, "job", time.Minute, &withlock.LockOptions{Fence: true})
			took := time.Since(start)
			// Stopped for five read timeouts: longer than a clean-up that
			// tried again a few times, each within a read timeout, would
			// keep trying; only one queued behind the SET is still there.
			time.Sleep(5 * readTimeout)
			srv.Signal(syscall.SIGCONT)
			if err == nil {
				t.Fatal("TryAcquire on a stopped server succeeded")
			}
			if bound := readTimeout*3/2 + time.Second; took > bound {
				t.Errorf("TryAcquire returned after %s; want at most %s (1.5 read timeouts and a margin)", took, bound)
			}
			deadline := time.Now().Add(3 * time.Second)
			for admin.Exists(ctx, "lock:job").Val() != 0 {
				if time.Now().After(deadline) {
					t.Fatalf("lock:job was left behind, PTTL %s", admin.PTTL(ctx, "lock:job").Val())
				}
				time.Sleep(20 * time.Millisecond)
			}
			if admin.Exists(ctx, "{lock:job}:fence").Val() == 0 {
				t.Fatal("the fence counter is unset: the SET never landed, so this tested nothing")
			}
		})
	}
}

// The clean-up of an acquisition whose reply was lost never deletes the
// next owner's lock. The interleaving is set up for real, with a proxy in
// front of Redis: the acquiring command reaches Redis and lands, but its
// reply is lost, so the acquisition times out with its outcome unknown and
// queues its clean-up, which the proxy holds back; meanwhile the key
// expires and another Client takes the lock; then the clean-up reaches
// Redis. It compares the token and leaves the new owner's lock alone: for
// a SET, a fenced acquisition's script, and a semaphore's slot.
func TestCleanupOfALostAcquisitionSparesTheNextOwnersLock(t *testing.T) {
	t.Parallel()
	const readTimeout = 300 * time.Millisecond
	const ttl = 100 * time.Millisecond // expired well before the timeout
	for _, tc := range []struct {
		name  string
		opts  *withlock.LockOptions
		slots int
	}{
		{"SET", nil, 1},
		{"fenced script", &withlock.LockOptions{Fence: true}, 1},
		{"semaphore slot", nil, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			srv := redistest.Start(t)
			admin := srv.Client()
			proxy := startFaultProxy(t, srv.Addr())
			client := func(addr string) *withlock.Client {
				c, err := withlock.NewSemaphore(redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1,
					DialTimeout: time.Second, ReadTimeout: readTimeout, WriteTimeout: readTimeout}), tc.slots, nil)
				if err != nil {
					t.Fatal(err)
				}
				return c
			}
			c, next := client(proxy.addr()), client(srv.Addr())
			// A connection in the pool, which the acquisition then uses.
			if err := mustAcquire(t, c, "warm-up", time.Minute).Release(ctx); err != nil {
				t.Fatal(err)
			}
			mon := srv.Monitor()
			proxy.loseReplies() // of the connection in the pool
			proxy.holdNew()     // the clean-up's fresh connection
			if _, err := c.TryAcquire(ctx, "job", ttl, tc.opts); err == nil {
				t.Fatal("the acquisition succeeded; its reply was to be lost")
			}
			var seen []redistest.Command
			token := ""
			for _, cmd := range mon.Commands() {
				seen = append(seen, cmd)
				for _, a := range cmd.Args {
					if token == "" && cmd.Client != "lua" && tokenPattern(t).MatchString(a) {
						token = a
					}
				}
			}
			if token == "" {
				t.Fatalf("the acquiring command never reached Redis, so this tests nothing: %v", seen)
			}
			clitest.Eventually(t, promptly, "the landed key expired", func() bool {
				return admin.Exists(ctx, "lock:job").Val() == 0
			})
			owner := mustAcquire(t, next, "job", time.Minute)
			proxy.release()
			clitest.Eventually(t, promptly, "the clean-up reached Redis", func() bool {
				for _, cmd := range mon.Commands() {
					if cmd.Client != "lua" && strings.EqualFold(cmd.Args[0], "eval") && slices.Contains(cmd.Args, token) {
						return true
					}
				}
				return false
			})
			if left, err := owner.TTL(ctx); err != nil || left < 50*time.Second {
				t.Errorf("the next owner's lock after the clean-up: TTL %s, %v; want it untouched", left, err)
			}
		})
	}
}

// faultProxy forwards TCP connections to a Redis, with two faults a test
// switches on: the replies on the connections open then are lost, and what
// a connection opened after sends is held until release.
type faultProxy struct {
	t        *testing.T
	ln       net.Listener
	upstream string

	mu       sync.Mutex
	open     []*atomic.Bool // per connection: its replies are lost
	holding  bool
	released chan struct{}
}

func startFaultProxy(t *testing.T, upstream string) *faultProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{t: t, ln: ln, upstream: upstream, released: make(chan struct{})}
	t.Cleanup(func() { _ = ln.Close(); p.release() })
	go p.serve()
	return p
}

func (p *faultProxy) addr() string { return p.ln.Addr().String() }

func (p *faultProxy) loseReplies() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, lost := range p.open {
		lost.Store(true)
	}
}

func (p *faultProxy) holdNew() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holding = true
}

func (p *faultProxy) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.released:
	default:
		close(p.released)
	}
}

func (p *faultProxy) serve() {
	for {
		conn, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		holding := p.holding
		lost := new(atomic.Bool)
		if !holding {
			p.open = append(p.open, lost)
		}
		p.mu.Unlock()
		if holding {
			go p.forwardLater(conn)
		} else {
			go p.forward(conn, lost)
		}
	}
}

// forward copies both ways, dropping the replies once lost is set.
func (p *faultProxy) forward(conn net.Conn, lost *atomic.Bool) {
	defer conn.Close()
	up, err := net.DialTimeout("tcp", p.upstream, time.Second)
	if err != nil {
		return
	}
	defer up.Close()
	go func() { _, _ = io.Copy(up, conn); _ = up.Close() }()
	buf := make([]byte, 4096)
	for {
		n, err := up.Read(buf)
		if n > 0 && !lost.Load() {
			if _, err := conn.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// forwardLater reads all conn sends, and once released sends it to Redis
// on a connection of its own and closes that after Redis answered.
func (p *faultProxy) forwardLater(conn net.Conn) {
	sent, _ := io.ReadAll(conn)
	_ = conn.Close()
	<-p.released
	up, err := net.DialTimeout("tcp", p.upstream, time.Second)
	if err != nil {
		return
	}
	defer up.Close()
	_ = up.SetDeadline(time.Now().Add(promptly))
	if _, err := up.Write(sent); err != nil {
		return
	}
	if tc, ok := up.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, up)
}
