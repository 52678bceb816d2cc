// Package redistest starts real redis-server processes for tests: each on a
// free loopback port (never 6379) with its own temporary directory, stopped
// when the test ends.
package redistest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// StartTimeout bounds how long a server may take to answer PING.
const StartTimeout = 10 * time.Second

// tb is the part of testing.TB a Server uses. Start passes the test's;
// StartMain, which has no test, passes a mainTB.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
	TempDir() string
	Skip(args ...any)
}

// Server is a redis-server process owned by one test, or by the whole test
// binary when started with StartMain.
type Server struct {
	t    tb
	tls  *tls.Config // non-nil: the port speaks only TLS (StartTLS)
	Port int
	Dir  string
	args []string
	env  []string // beside this process's environment (StartSteppedClock)
	cmd  *exec.Cmd
	// exited is closed once cmd has exited and been reaped.
	exited chan struct{}
	// ownPort: Port was chosen here, so a start that cannot bind it may
	// take another.
	ownPort bool
}

// Start runs a redis-server with persistence off and extra config
// directives ("name", "value", ...) appended to its command line, and waits
// until it answers PING.
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	return launch(t, launchOptions{extra: extra})
}

// StartMain is Start for TestMain, where there is no testing.TB: examples
// cannot start a server of their own, so TestMain starts one for them. Call
// stop after m.Run; it kills the server and removes its directory. Later
// failures of the Server's methods, which Start reports with t.Fatalf,
// panic instead.
func StartMain(extra ...string) (s *Server, stop func(), err error) {
	stop, err = startForMain("redistest-", "start redis-server", func(m *mainTB, dir string) {
		s = launch(m, launchOptions{dir: dir, extra: extra})
	})
	if err != nil {
		return nil, nil, err
	}
	return s, stop, nil
}

// startForMain runs start for a program without a test (StartMain and its
// kind), with a mainTB and a new temporary directory named after pattern.
// A Fatalf of start's comes back as err, what start had started stopped;
// otherwise stop kills what it started and removes the directory.
func startForMain(pattern, what string, start func(m *mainTB, dir string)) (stop func(), err error) {
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	m := &mainTB{}
	stop = func() {
		m.cleanup()
		_ = os.RemoveAll(dir)
	}
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(mainFatal)
			if !ok {
				panic(r)
			}
			stop()
			stop, err = nil, f
		}
	}()
	start(m, dir)
	return stop, nil
}

// mainTB stands in for a test in StartMain: Fatalf panics with a mainFatal
// and Cleanup functions run when stop is called, last first.
type mainTB struct{ cleanups []func() }

type mainFatal struct{ error }

func (*mainTB) Helper() {}

func (*mainTB) Fatalf(format string, args ...any) {
	panic(mainFatal{fmt.Errorf(format, args...)})
}

// Skip is never called: launch skips only tests, and TestMain does not
// start a server under -short.
func (*mainTB) Skip(...any) {
	panic(mainFatal{errors.New("redistest: StartMain under -short")})
}

func (m *mainTB) Cleanup(f func()) { m.cleanups = append(m.cleanups, f) }

// TempDir is never called: StartMain passes its own directory.
func (*mainTB) TempDir() string {
	panic(mainFatal{errors.New("redistest: StartMain needs a directory")})
}

func (m *mainTB) cleanup() {
	for i := len(m.cleanups) - 1; i >= 0; i-- {
		m.cleanups[i]()
	}
	m.cleanups = nil
}

// launchOptions vary how launch starts a server.
type launchOptions struct {
	port  int         // 0: a free one
	tls   *tls.Config // serve TLS only, on port; the client's config
	dir   string      // "": a new temporary directory
	first []string    // arguments before all others (a config file)
	extra []string    // "name", "value" config directives
	env   []string    // "NAME=value" beside this process's environment
}

func launch(t tb, o launchOptions) *Server {
	t.Helper()
	// go test -short runs the tests that need no server, on a machine
	// without redis-server: every test that starts one is skipped there.
	// The plain run (CI, make test) skips nothing.
	if _, isMain := t.(*mainTB); !isMain && testing.Short() {
		t.Skip("starts redis-server: not run under go test -short")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server is not installed (make test installs it): %v", err)
	}
	s := &Server{t: t, Dir: o.dir, Port: o.port, tls: o.tls, env: o.env}
	if s.Dir == "" {
		s.Dir = t.TempDir()
	}
	s.ownPort = s.Port == 0
	// A port free a moment ago can be taken before redis-server binds it
	// (by another test's server, or as a connection's local port): the
	// server then exits, and a free port chosen here is chosen again.
	for attempt := 1; ; attempt++ {
		if s.ownPort {
			choose := freePort
			if isClusterNode(o.extra) {
				choose = clusterPort // its bus port is p+10000
			}
			port, err := choose()
			if err != nil {
				t.Fatalf("%v", err)
			}
			s.Port = port
		}
		ports := []string{"--port", strconv.Itoa(s.Port)}
		if o.tls != nil {
			ports = []string{"--port", "0", "--tls-port", strconv.Itoa(s.Port)}
		}
		s.args = append(append(append(slices.Clip(o.first), ports...),
			"--bind", "127.0.0.1",
			"--dir", s.Dir, "--save", "", "--appendonly", "no",
			"--daemonize", "no", "--logfile", filepath.Join(s.Dir, "redis.log"),
		), prefixed(o.extra)...)
		if attempt == 1 {
			t.Cleanup(s.Kill) // before start: a server that never gets ready is killed too
		}
		err := s.startOnce()
		if err == errExited && s.ownPort && attempt < 3 {
			continue
		}
		s.ready(err)
		return s
	}
}

// prefixed turns "name", "value" pairs into "--name", "value".
func prefixed(kv []string) []string {
	out := make([]string, 0, len(kv))
	for i, v := range kv {
		if i%2 == 0 {
			v = "--" + v
		}
		out = append(out, v)
	}
	return out
}

func (s *Server) start() {
	s.t.Helper()
	s.ready(s.startOnce())
}

// startOnce starts redis-server and waits until it answers (nil), exits
// first (errExited: a port it could not bind), or StartTimeout passes.
func (s *Server) startOnce() error {
	s.t.Helper()
	s.cmd = exec.Command("redis-server", s.args...)
	s.cmd.SysProcAttr = serverProcAttr()
	if len(s.env) > 0 {
		s.cmd.Env = append(os.Environ(), s.env...)
	}
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("start redis-server: %v", err)
	}
	exited, cmd := make(chan struct{}), s.cmd
	s.exited = exited
	go func() { _ = cmd.Wait(); close(exited) }()
	return s.poll()
}

var errExited = errors.New("redis-server exited")

// WaitReady polls PING until the server answers or StartTimeout passes.
func (s *Server) WaitReady() {
	s.t.Helper()
	s.ready(s.poll())
}

// ready fails the test with the server's log unless err, what poll
// returned, is nil.
func (s *Server) ready(err error) {
	s.t.Helper()
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
		s.t.Fatalf("redis-server on port %d not ready after %s: %v\n%s", s.Port, StartTimeout, err, log)
	}
}

// poll PINGs the server until it answers, it exits (errExited), or
// StartTimeout passes. The answer must come from this server's process: a
// server of another test that holds the port would answer too.
func (s *Server) poll() error {
	rdb := s.Client()
	defer rdb.Close()
	ctx := context.Background()
	deadline := time.Now().Add(StartTimeout)
	for {
		err := rdb.Ping(ctx).Err()
		if err == nil {
			err = s.isOurs(ctx, rdb)
		}
		if err == nil || isAuthError(err) { // it answers, to those who log in
			return nil
		}
		select {
		case <-s.exited:
			return errExited
		default:
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// isOurs checks that the server answering on the port is this one.
func (s *Server) isOurs(ctx context.Context, rdb *redis.Client) error {
	info, err := rdb.Info(ctx, "server").Result()
	var refused redis.Error
	if errors.As(err, &refused) {
		return nil // it answers, but not INFO to this user: taken as ours
	}
	if err != nil {
		return err
	}
	if want := fmt.Sprintf("process_id:%d\r\n", s.cmd.Process.Pid); !strings.Contains(info, want) {
		return fmt.Errorf("another server answers on port %d", s.Port)
	}
	return nil
}

// isAuthError reports whether err is Redis refusing an unauthenticated
// client, as a server started with requirepass does.
func isAuthError(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && strings.HasPrefix(rerr.Error(), "NOAUTH")
}

// Addr is "127.0.0.1:<port>".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) }

// URL is the redis:// URL of the server, rediss:// when it speaks TLS.
func (s *Server) URL() string {
	if s.tls != nil {
		return fmt.Sprintf("rediss://%s/0", s.Addr())
	}
	return fmt.Sprintf("redis://%s/0", s.Addr())
}

// Client returns a new go-redis client for the server, closed with the test.
func (s *Server) Client() *redis.Client { return s.ClientWith(&redis.Options{}) }

// ClientWith is Client with the options in o (a user and password,
// timeouts, retries, a dialer); the address and TLS are the server's. o is
// not modified.
func (s *Server) ClientWith(o *redis.Options) *redis.Client {
	opt := *o
	opt.Addr, opt.TLSConfig, opt.DisableIdentity = s.Addr(), s.tls, true
	rdb := redis.NewClient(&opt)
	s.t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// Pid is the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Kill stops the server with SIGKILL and reaps it. Safe to call twice.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT) // in case a test paused it
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// Restart kills the server and starts it again on the same port, with no
// data: persistence is off.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	s.start()
}

// Signal sends sig to the server (SIGSTOP and SIGCONT pause and resume it).
func (s *Server) Signal(sig syscall.Signal) {
	s.t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("signal redis-server: %v", err)
	}
}

// FreePort returns a loopback TCP port that was free a moment ago. It never
// returns 6379, which belongs to the user's own Redis.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatalf("%v", err)
	}
	return port
}

// handedOut holds the ports freePort gave this test process: tests run in
// parallel, and a port one of them was given must not go to another
// before its server binds it.
var handedOut portsHandedOut

type portsHandedOut struct {
	sync.Mutex
	ports map[int]bool
}

func freePort() (int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("find a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if port != 6379 && !handedOut.ports[port] {
			handedOut.note(port)
			return port, nil
		}
	}
}

// note records ports as handed out; the caller holds handedOut's lock.
func (h *portsHandedOut) note(ports ...int) {
	if h.ports == nil {
		h.ports = map[int]bool{}
	}
	for _, p := range ports {
		h.ports[p] = true
	}
}

// isClusterNode reports whether extra, "name", "value" config directives,
// make a cluster node.
func isClusterNode(extra []string) bool {
	for i := 0; i+1 < len(extra); i += 2 {
		if extra[i] == "cluster-enabled" && extra[i+1] == "yes" {
			return true
		}
	}
	return false
}
