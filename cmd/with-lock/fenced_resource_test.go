package main_test

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
)

// A fenced resource for the reliability trials: a unix-socket server in the
// test process that the command under with-lock writes to. It refuses a
// write whose fence is lower than the highest it has seen, as a database
// would with `WHERE fence <= $fence`, and records when each holder's
// command ran (from its first line to its socket closing, i.e. its death),
// so overlaps can be counted.
//
// The command is this test binary run again as a worker: TestMain turns it
// (harness_test.go) into one when frWorkerEnv names the socket.

// frWorkerEnv names the resource's socket in the worker's environment.
const frWorkerEnv = "RELIABILITY_RESOURCE"

// frWriteEvery is how often a worker writes.
const frWriteEvery = 10 * time.Millisecond

// frWorker is the command: it says hello with its pid and WITH_LOCK_FENCE
// (0 without --fence), then writes with that fence every frWriteEvery,
// refused or not, until it is killed.
func frWorker(sock string) {
	conn, err := net.Dial("unix", sock)
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return
	}
	fence := os.Getenv("WITH_LOCK_FENCE")
	if fence == "" {
		fence = "0"
	}
	replies := bufio.NewScanner(conn)
	if _, err := fmt.Fprintf(conn, "hello %d %s\n", os.Getpid(), fence); err != nil {
		return
	}
	for {
		if _, err := fmt.Fprintf(conn, "write %s\n", fence); err != nil || !replies.Scan() {
			return
		}
		time.Sleep(frWriteEvery)
	}
}

// frHolder is one command's run as the resource saw it.
type frHolder struct {
	Pid        int
	Fence      int64
	Start, End time.Time // End is zero while it runs
	Accepted   int
	Refused    int
	Stale      int // accepted although a later holder had already written
	ended      chan struct{}
}

// frResource is the fenced resource of one trial.
type frResource struct {
	t       *testing.T
	path    string
	hellos  chan *frHolder
	mu      sync.Mutex
	maxSeen int64
	holders []*frHolder // in the order they said hello
}

// frStart listens on a new socket; it stops with the test.
func frStart(t *testing.T) *frResource {
	t.Helper()
	dir, err := os.MkdirTemp("", "fr") // t.TempDir is too long for a socket path
	if err != nil {
		t.Fatal(err)
	}
	r := &frResource{t: t, path: filepath.Join(dir, "s"), hellos: make(chan *frHolder, 8)}
	l, err := net.Listen("unix", r.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close(); _ = os.RemoveAll(dir) })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go r.serve(conn)
		}
	}()
	return r
}

func (r *frResource) serve(conn net.Conn) {
	defer conn.Close()
	lines := bufio.NewScanner(conn)
	var h *frHolder
	// The worker's socket closes when it dies, which ends this either way:
	// in Scan, or in the Write of a reply to a worker killed since its
	// last line. Both are its end.
	defer func() {
		if h != nil {
			r.mu.Lock()
			h.End = time.Now()
			r.mu.Unlock()
			close(h.ended)
		}
	}()
	for lines.Scan() {
		var verb string
		var a, b int64
		n, _ := fmt.Sscan(lines.Text(), &verb, &a, &b)
		switch {
		case verb == "hello" && n == 3 && h == nil:
			h = &frHolder{Pid: int(a), Fence: b, Start: time.Now(), ended: make(chan struct{})}
			r.mu.Lock()
			r.holders = append(r.holders, h)
			r.mu.Unlock()
			r.hellos <- h
		case verb == "write" && n == 2 && h != nil:
			reply := r.write(h, a)
			if _, err := conn.Write([]byte(reply + "\n")); err != nil {
				return
			}
		default:
			r.t.Errorf("resource: bad line %q", lines.Text())
			return
		}
	}
}

// write applies the fencing rule and counts what it let through.
func (r *frResource) write(h *frHolder, fence int64) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if fence < r.maxSeen {
		h.Refused++
		return "refused"
	}
	r.maxSeen = fence
	h.Accepted++
	for _, later := range r.holders {
		if later.Start.After(h.Start) && later.Accepted+later.Refused > 0 {
			h.Stale++ // a later holder wrote first: this write is stale
			break
		}
	}
	return "ok"
}

// env is what with-lock needs to hand the socket on to the worker.
func (r *frResource) env() string { return frWorkerEnv + "=" + r.path }

// next waits for the next command to say hello.
func (r *frResource) next(timeout time.Duration) *frHolder {
	r.t.Helper()
	select {
	case h := <-r.hellos:
		return h
	case <-time.After(timeout):
		r.t.Fatalf("no command reached the resource within %s", timeout)
		return nil
	}
}

// waitEnd waits until h's command has died and returns when.
func (r *frResource) waitEnd(h *frHolder, timeout time.Duration) time.Time {
	r.t.Helper()
	select {
	case <-h.ended:
	case <-time.After(timeout):
		r.t.Fatalf("command of pid %d (fence %d) still running %s later", h.Pid, h.Fence, timeout)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return h.End
}

// running reports whether h's command still runs.
func (r *frResource) running(h *frHolder) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return h.End.IsZero()
}

// waitFor polls cond on the holders' counters under the lock.
func (r *frResource) waitFor(timeout time.Duration, what string, cond func() bool) {
	r.t.Helper()
	clitest.Eventually(r.t, timeout, what, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return cond()
	})
}

// frTally is what a trial's resource saw in the end.
type frTally struct {
	overlap time.Duration // longest time two commands ran at once
	stale   int           // stale writes accepted
	refused int           // writes refused
}

func (r *frResource) tally() frTally {
	r.mu.Lock()
	defer r.mu.Unlock()
	var s frTally
	now := time.Now()
	for i, h := range r.holders {
		s.stale += h.Stale
		s.refused += h.Refused
		end := h.End
		if end.IsZero() {
			end = now
		}
		for _, later := range r.holders[i+1:] {
			s.overlap = max(s.overlap, end.Sub(later.Start))
		}
	}
	return s
}

// frCommand is the worker as with-lock's command.
func frCommand(t *testing.T) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{exe, "-test.run=^$"}
}

// frStopped sends sig to pid and makes sure the process is gone, not left
// stopped, when the test ends.
func frStopped(t *testing.T, pid int, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatalf("signal pid %d: %v", pid, err)
	}
	t.Cleanup(func() {
		if clitest.Alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}
