package main_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// everyRedisPath is a run, a waiting run and each admin path that talks to
// Redis, all on the lock x, each of which says a failure on stderr. --check
// says it on stdout, as a monitoring plugin: see checkSays.
var everyRedisPath = []struct {
	name string
	args []string
}{
	{"run", []string{"x", "true"}},
	{"-w run", []string{"-w", "2s", "x", "true"}},
	{"--status", []string{"--status", "x"}},
	{"--status --json", []string{"--status", "--json", "x"}},
	{"--list", []string{"--list"}},
	{"--break", []string{"--break", "x"}},
	{"--history", []string{"--history", "x"}},
}

// checkSays runs --check x with flags and checks that it says, as a
// plugin does, that it cannot read the records, in the words want: exit 3
// (UNKNOWN) and one line on stdout.
func checkSays(t *testing.T, env []string, flags []string, want string) {
	t.Helper()
	r := clitest.Run(t, env, append(flags, "--check", "x")...)
	for _, kv := range env {
		if _, secret, _ := strings.Cut(kv, "="); strings.Contains(kv, "PASSWORD=") && strings.Contains(r.Stdout, secret) {
			t.Errorf("--check shows the password: %q", r.Stdout)
		}
	}
	if r.Code != 3 || r.Stderr != "" || strings.Count(r.Stdout, "\n") != 1 ||
		!strings.HasPrefix(r.Stdout, "WITH-LOCK UNKNOWN - cannot read the records: ") || !strings.Contains(r.Stdout, want) {
		t.Errorf("--check: exit %d, stdout %q, stderr %q; want 3 and one line: UNKNOWN - cannot read the records: ...%s", r.Code, r.Stdout, r.Stderr, want)
	}
}

// A run and every admin path (--status, --list, --break) say one failure
// to reach Redis in the same words, a user's: a host name that does not
// resolve, nothing listening at the address, no socket at a unix://
// path, a server that does not answer in time and the setting that bounds
// it; never Go's "dial tcp", "connect: connection refused", "i/o timeout"
// or "no such host" on its own. Each exits 69.
func TestRedisFailuresReadAlikeOnEveryPath(t *testing.T) {
	t.Parallel()
	paused := redistest.Start(t)
	paused.Signal(syscall.SIGSTOP)
	t.Cleanup(func() { paused.Signal(syscall.SIGCONT) })
	refused := "127.0.0.1:" + strconv.Itoa(redistest.FreePort(t))
	const noSocket = "/nonexistent/redis.sock"
	for _, failure := range []struct {
		name  string
		redis string
		want  []string
		doc   []string // docs/logs.md's situation, and its example values with the test's
	}{
		// .invalid never resolves (RFC 6761).
		{"host name does not resolve", "redis://no-such-host.invalid:6379/0",
			[]string{"the host name no-such-host.invalid ", "resolve", "(check the host name in --redis / WITH_LOCK_REDIS)"},
			[]string{logsRow("a host name that does not resolve"), "redis-01", "no-such-host.invalid"}},
		{"nothing listens", "redis://" + refused + "/0",
			[]string{"nothing listens at " + refused + " (connection refused)"}, nil},
		{"no answer", paused.URL(), []string{"timed out after 1s (--redis-timeout)"}, []string{logsRow("Redis too slow")}},
		{"no socket at the path", "unix://" + noSocket, []string{"no socket at " + noSocket + " (no such file or directory)"}, nil},
	} {
		for _, path := range everyRedisPath {
			t.Run(failure.name+"/"+path.name, func(t *testing.T) {
				t.Parallel() // each path waits out its timeout on the paused server
				r := clitest.Run(t, nil, append([]string{"--redis", failure.redis, "--redis-timeout", "1s"}, path.args...)...)
				if r.Code != 69 {
					t.Errorf("exit %d, want 69", r.Code)
				}
				for _, w := range failure.want {
					oneLine(t, r, w)
				}
				if path.name == "run" && failure.doc != nil {
					matchesDoc(t, r, failure.doc[0], failure.doc[1:]...) // log_test.go
				}
				for _, goWords := range []string{"dial tcp", "dial unix", "connect: ", "i/o timeout", "deadline exceeded", "lookup "} {
					if strings.Contains(r.Stderr, goWords) {
						t.Errorf("stderr %q says %q", r.Stderr, goWords)
					}
				}
			})
		}
	}
}

// Something other than Redis at the address (a web server, an SSH daemon:
// the wrong port) is a configuration to mend, not an outage to wait out:
// every path names the address and what answered there and exits 78,
// never in go-redis's "invalid reply" or "can't parse".
func TestSomethingElseAtTheAddressIsSaidToBeNotRedis(t *testing.T) {
	t.Parallel()
	web := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(web.Close)
	for _, server := range []struct {
		name, addr, answer string
	}{
		// Go's HTTP server answers the handshake's HELLO as a bad request.
		{"a web server", web.Listener.Addr().String(), `"HTTP/1.1 400 Bad Request"`},
		{"a server that speaks first", bannerServer(t, "SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n"), `"SSH-2.0-OpenSSH_9.2p1 Debian-2"`},
	} {
		for _, path := range everyRedisPath {
			t.Run(server.name+"/"+path.name, func(t *testing.T) {
				r := clitest.Run(t, nil, append([]string{"--redis", "redis://" + server.addr + "/0", "--redis-timeout", "2s"}, path.args...)...)
				saysConfigError(t, r, server.addr+" is not Redis (it answered "+server.answer+"): check the port", "invalid reply", "can't parse", "EOF")
			})
		}
	}
}

// bannerServer listens on a free port and greets every connection with
// banner before it reads a byte, as SSH and SMTP servers do; it returns
// the address.
func bannerServer(t *testing.T, banner string) string {
	return fakeServer(t, func(c net.Conn) {
		if _, err := io.WriteString(c, banner); err == nil {
			_, _ = io.Copy(io.Discard, c) // until the client hangs up
		}
	})
}

// fakeServer listens on a free port, serves each connection with serve
// and closes it after; it returns the address.
func fakeServer(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return l.Addr().String()
}

// saysConfigError checks that r is a configuration error: exit 78 and one
// line that says want and none of wrong.
func saysConfigError(t *testing.T, r clitest.Result, want string, wrong ...string) {
	t.Helper()
	if r.Code != 78 {
		t.Errorf("exit %d, want 78 (bad configuration)", r.Code)
	}
	oneLine(t, r, want)
	for _, w := range wrong {
		if strings.Contains(r.Stderr, w) {
			t.Errorf("stderr %q says %q", r.Stderr, w)
		}
	}
}

// A redis:// URL that names a TLS port (the opposite of rediss:// at a
// plain port) is a configuration to mend: every path says the port speaks
// TLS and to use rediss://, exit 78, never go-redis's "EOF" or "is Redis
// up?", and never the password. Redis's TLS port hangs up on a plain
// HELLO; other TLS servers answer it with an alert first.
func TestRedisURLAtATLSPortIsSaidToSpeakTLS(t *testing.T) {
	t.Parallel()
	const secret = "tls-port-pw-123"
	tlsRedis := redistest.StartTLS(t, redistest.NewCA(t, "with-lock test CA"), false)
	for _, server := range []struct{ name, addr string }{
		{"Redis's TLS port", tlsRedis.Addr()},
		{"a TLS server that sends an alert", alertServer(t)},
	} {
		want := server.addr + " speaks TLS, not plain Redis: use rediss://, not redis://"
		flags := []string{"--redis", "redis://locker@" + server.addr + "/0", "--redis-timeout", "2s"}
		env := []string{"WITH_LOCK_PASSWORD=" + secret}
		for _, path := range everyRedisPath {
			t.Run(server.name+"/"+path.name, func(t *testing.T) {
				r := clitest.Run(t, env, append(flags, path.args...)...)
				saysConfigError(t, r, want, "EOF", "is Redis up", "reset by peer", secret)
				if path.name == "run" {
					matchesDoc(t, r, "`redis://` at a TLS port")
				}
			})
		}
		t.Run(server.name+"/--check", func(t *testing.T) { checkSays(t, env, flags, want) })
	}
}

// alertServer listens on a free port and answers whatever a connection
// sends first with a TLS alert record (protocol_version), as TLS servers
// other than Redis do with a plain-text client; it returns the address.
func alertServer(t *testing.T) string {
	return fakeServer(t, func(c net.Conn) {
		if _, err := c.Read(make([]byte, 512)); err == nil {
			_, _ = c.Write([]byte{0x15, 0x03, 0x01, 0x00, 0x02, 0x02, 0x46})
		}
	})
}
