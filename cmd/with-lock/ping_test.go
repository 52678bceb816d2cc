package main_test

import (
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// --ping against a real HTTP server the test starts: what healthchecks.io
// and its peers would receive.

// ping is one request the check's server received.
type ping struct {
	method, path, rid, body string
	lockHeld                bool // the lock's key existed when the request arrived
}

// pingServer records every request; status, if not nil, chooses each
// answer.
type pingServer struct {
	*httptest.Server
	mu     sync.Mutex
	pings  []ping
	status func(n int, p ping) int // n counts the requests from 0
}

func startPingServer(t *testing.T, e *env, key string, status func(n int, p ping) int) *pingServer {
	s := &pingServer{status: status}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		p := ping{method: req.Method, path: req.URL.Path, rid: req.URL.Query().Get("rid"), body: string(body)}
		if e != nil {
			p.lockHeld = e.rdb.Exists(context.Background(), key).Val() == 1
		}
		s.mu.Lock()
		n := len(s.pings)
		s.pings = append(s.pings, p)
		s.mu.Unlock()
		if s.status != nil {
			w.WriteHeader(s.status(n, p))
		}
		_, _ = io.WriteString(w, "OK")
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *pingServer) got() []ping {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ping(nil), s.pings...)
}

// paths are the paths pinged so far, in order, joined by commas.
func (s *pingServer) paths() string {
	var paths []string
	for _, p := range s.got() {
		paths = append(paths, p.path)
	}
	return strings.Join(paths, ",")
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// The run that holds the lock pings start while its command runs, and its
// exit code once the lock is released, both with the same run id.
func TestPingWinnerSendsStartThenExitCode(t *testing.T) {
	t.Parallel()
	e := setup(t)
	srv := startPingServer(t, e, "lock:nightly-report", nil)
	j := e.startJob(3, "--ping", srv.URL+"/check-uuid", "nightly-report")
	clitest.Eventually(t, 10*time.Second, "no start ping while the command runs", func() bool { return len(srv.got()) == 1 })
	res := j.finish()
	if res.Code != 3 {
		t.Fatalf("exit %d, want the command's 3; stderr %q", res.Code, res.Stderr)
	}
	if res.Stderr != "" {
		t.Errorf("stderr %q: want nothing", res.Stderr)
	}
	got := srv.got()
	if len(got) != 2 {
		t.Fatalf("pings %+v: want start and 3", got)
	}
	start, end := got[0], got[1]
	if start.method != "GET" || start.path != "/check-uuid/start" || !start.lockHeld {
		t.Errorf("first ping %+v: want GET /check-uuid/start while the lock is held", start)
	}
	// The end carries the output's tail (--ping-output), here nothing.
	if end.method != "POST" || end.path != "/check-uuid/3" || end.body != "" || end.lockHeld {
		t.Errorf("second ping %+v: want POST /check-uuid/3, with the command's empty output, after the lock was released", end)
	}
	if !uuidRE.MatchString(start.rid) || end.rid != start.rid {
		t.Errorf("run ids %q and %q: want one random UUID for both", start.rid, end.rid)
	}

	// A command not found is refused before the lock is taken: no run,
	// no ping.
	if res := e.run("--ping", srv.URL+"/check-uuid", "nightly-report", "/nonexistent/job"); res.Code != 127 {
		t.Fatalf("exit %d, want 127: %q", res.Code, res.Stderr)
	}
	if got := srv.got(); len(got) != 2 {
		t.Errorf("a command not found pinged %+v", got[2:])
	}

	// A success is 0, and the next run has an id of its own.
	if res := e.run("--ping", srv.URL+"/check-uuid/", "nightly-report", "true"); res.Code != 0 {
		t.Fatalf("exit %d: %q", res.Code, res.Stderr)
	}
	got = srv.got()
	if len(got) != 4 || got[2].path != "/check-uuid/start" || got[3].path != "/check-uuid/0" || got[3].rid == start.rid {
		t.Errorf("second run's pings %+v: want start and 0 with a new run id", got[2:])
	}
}

// Runs refused because the lock is busy send nothing, so the check sees
// one run, not one per server; --ping-skips reports them to /log.
func TestPingOnlyFromTheWinner(t *testing.T) {
	t.Parallel()
	e := setup(t)
	srv := startPingServer(t, e, "lock:sync", nil)
	j := e.startJob(0, "--ping", srv.URL, "sync")
	for range 3 {
		if res := e.run("--ping", srv.URL, "-E", "0", "sync", "true"); res.Code != 0 {
			t.Fatalf("busy run: exit %d: %q", res.Code, res.Stderr)
		}
	}
	res := e.run("--ping", srv.URL, "--ping-skips", "-E", "0", "sync", "true")
	if res.Code != 0 {
		t.Fatalf("busy run with --ping-skips: exit %d: %q", res.Code, res.Stderr)
	}
	if res := j.finish(); res.Code != 0 {
		t.Fatalf("winner: exit %d: %q", res.Code, res.Stderr)
	}
	var paths []string
	var log ping
	for _, p := range srv.got() {
		paths = append(paths, p.method+" "+p.path)
		if p.path == "/log" {
			log = p
		}
	}
	if strings.Join(paths, ",") != "GET /start,POST /log,POST /0" {
		t.Errorf("pings %q: want the winner's start and 0, and one log for the skip reported", paths)
	}
	if !strings.Contains(log.body, "sync not run on") || !strings.Contains(log.body, "busy") || !uuidRE.MatchString(log.rid) {
		t.Errorf("log ping %+v: want a body saying the run was skipped as busy, and a run id", log)
	}
}

// One failed attempt that a retry can mend (a 5xx) is retried once,
// silently.
func TestPingRetriesOnceAfterAServerError(t *testing.T) {
	t.Parallel()
	e := setup(t)
	srv := startPingServer(t, nil, "", func(n int, _ ping) int {
		if n == 0 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	res := e.run("--ping", srv.URL, "job", "true")
	if res.Code != 0 || res.Stderr != "" {
		t.Errorf("exit %d, stderr %q: want 0 and nothing said", res.Code, res.Stderr)
	}
	if paths := srv.paths(); paths != "/start,/start,/0" {
		t.Errorf("pings %q: want start twice (one retry), then 0", paths)
	}
}

// A check server that never answers holds the exit up no longer than
// --ping-timeout, and the exit code is the command's.
func TestPingHangingServerDoesNotHoldTheExit(t *testing.T) {
	t.Parallel()
	e := setup(t)
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		select {
		case <-release:
		case <-req.Context().Done():
		}
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(release) })
	const timeout = time.Second
	res := e.run("--ping", hang.URL+"/check", "--ping-timeout", timeout.String(), "job", "sh", "-c", "exit 7")
	t.Logf("with-lock exited after %s with a ping server that hangs (--ping-timeout %s)", res.Duration.Round(time.Millisecond), timeout)
	if res.Code != 7 {
		t.Errorf("exit %d, want the command's 7", res.Code)
	}
	// Generous for a loaded machine; without the bound it would hang
	// until the test's own timeout.
	if res.Duration > timeout+10*time.Second {
		t.Errorf("exit after %s, want within --ping-timeout %s (plus slack)", res.Duration, timeout)
	}
	oneLine(t, res, "timed out (--ping-timeout 1s)")
	if e.rdb.Exists(context.Background(), "lock:job").Val() != 0 {
		t.Errorf("lock:job left behind")
	}
}

// An unreachable check is one warning, which does not show the check's
// path (anyone who has it can ping the check); the exit code stands.
func TestPingUnreachableIsOneWarning(t *testing.T) {
	t.Parallel()
	e := setup(t)
	url := "http://127.0.0.1:" + strconv.Itoa(redistest.FreePort(t)) + "/secret-check-id"
	res := e.run("--ping", url, "job", "sh", "-c", "exit 5")
	if res.Code != 5 {
		t.Errorf("exit %d, want the command's 5", res.Code)
	}
	oneLine(t, res, "nothing listens at 127.0.0.1:")
	if strings.Contains(res.Stderr, "secret-check-id") {
		t.Errorf("stderr %q shows the check's path", res.Stderr)
	}
}

// A URL that is not http(s) is refused before anything runs.
func TestPingURLMustBeHTTP(t *testing.T) {
	t.Parallel()
	cmd, ran := marker(t)
	res := clitest.Run(t, nil, append([]string{"--ping", "ftp://example.com/x", "job"}, cmd...)...)
	if res.Code != 64 || ran() {
		t.Errorf("exit %d, ran %v: want 64 and nothing run", res.Code, ran())
	}
	oneLine(t, res, "--ping is not an http:// or https:// URL")
}

// The end ping is a POST of the output's last --ping-output KiB, byte for
// byte, as healthchecks.io shows it beside the exit code; with
// --output-on-failure too, and a success printing nothing. --ping-output 0
// sends no output: a GET.
func TestPingEndCarriesTheEndOfTheOutput(t *testing.T) {
	t.Parallel()
	e := setup(t)
	srv := startPingServer(t, nil, "", nil)
	data := make([]byte, 5000)
	_, _ = rand.Read(data)
	path := filepath.Join(e.dir, "data")
	writeFile(t, path, data, 0o644)
	tests := []struct {
		flags  []string
		code   int
		method string
		body   []byte
	}{
		{[]string{"--ping-output", "1"}, 4, "POST", data[len(data)-1024:]},
		{[]string{"--ping-output", "1", "--output-on-failure"}, 0, "POST", data[len(data)-1024:]},
		{nil, 4, "POST", data}, // the default, 10 KiB, holds it all
		{[]string{"--ping-output", "0"}, 4, "GET", nil},
	}
	for _, tt := range tests {
		before := len(srv.got())
		args := append(append([]string{"--ping", srv.URL + "/check"}, tt.flags...),
			"job", "sh", "-c", `cat "$0" >&2; exit "$1"`, path, strconv.Itoa(tt.code))
		r := e.run(args...)
		if r.Code != tt.code || r.Stdout != "" {
			t.Errorf("%q: exit %d, stdout %d bytes; want %d and nothing", tt.flags, r.Code, len(r.Stdout), tt.code)
		}
		if len(tt.flags) < 3 && r.Stderr != string(data) {
			t.Errorf("%q: stderr has %d bytes, want the command's %d passed through", tt.flags, len(r.Stderr), len(data))
		}
		got := srv.got()[before:]
		if len(got) != 2 {
			t.Fatalf("%q: pings %d, want start and end", tt.flags, len(got))
		}
		end := got[1]
		if end.method != tt.method || end.path != "/check/"+strconv.Itoa(tt.code) || end.body != string(tt.body) {
			t.Errorf("%q: end ping %s %s with %d bytes; want %s /check/%d with the output's last %d bytes",
				tt.flags, end.method, end.path, len(end.body), tt.method, tt.code, len(tt.body))
		}
	}
}
