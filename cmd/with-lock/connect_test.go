package main_test

// Reaching Redis: TLS, and secrets from files and the environment.

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

func TestTLS(t *testing.T) {
	t.Parallel()
	ca := redistest.NewCA(t, "with-lock-test")
	srv := redistest.StartTLS(t, ca, false)
	mtls := redistest.StartTLS(t, ca, true)
	clientCert, clientKey := ca.Issue("with-lock-client")
	otherCA := redistest.NewCA(t, "someone-else")
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	writeFile(t, garbage, []byte("not a certificate\n"), 0o600)
	missing := filepath.Join(t.TempDir(), "missing.pem")

	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string // a part of stderr; "" means stderr must be empty
		// In TLS 1.3 the server refuses a client certificate after the
		// client's handshake is done: the client reads the alert (78), or
		// its first write meets the closed connection first (69, a reset).
		orReset bool
	}{
		{"trusted by --tls-cacert", []string{"--redis", srv.URL(), "--tls-cacert", ca.CertFile}, 0, "", false},
		{"untrusted: the system roots do not know the test CA", []string{"--redis", srv.URL()}, 78,
			"'s certificate is not signed by a certificate authority this host trusts (tls: failed to verify certificate: x509: certificate signed by unknown authority", false},
		{"untrusted: another CA", []string{"--redis", srv.URL(), "--tls-cacert", otherCA.CertFile}, 78,
			"'s certificate is not signed by the CA of --tls-cacert (", false},
		{"--tls-insecure skips verification, with a warning", []string{"--redis", srv.URL(), "--tls-insecure"}, 0, "warning: --tls-insecure", false},
		{"skip_verify in the URL needs --tls-insecure", []string{"--redis", srv.URL() + "?skip_verify=true"}, 78, "--tls-insecure", false},
		{"skip_verify with --tls-insecure", []string{"--redis", srv.URL() + "?skip_verify=true", "--tls-insecure"}, 0, "warning: --tls-insecure", false},
		{"client certificate demanded and given", []string{"--redis", mtls.URL(), "--tls-cacert", ca.CertFile, "--tls-cert", clientCert, "--tls-key", clientKey}, 0, "", false},
		{"redis-cli's flag names still work", []string{"--redis", mtls.URL(), "--cacert", ca.CertFile, "--cert", clientCert, "--key", clientKey}, 0, "", false},
		{"client certificate demanded, not given", []string{"--redis", mtls.URL(), "--tls-cacert", ca.CertFile}, 78, "certificate", true},
		{"missing --tls-cacert file", []string{"--redis", srv.URL(), "--tls-cacert", missing}, 78, "--tls-cacert", false},
		{"--tls-cacert without a certificate", []string{"--redis", srv.URL(), "--tls-cacert", garbage}, 78, "no PEM certificate", false},
		{"missing --tls-key file", []string{"--redis", mtls.URL(), "--tls-cacert", ca.CertFile, "--tls-cert", clientCert, "--tls-key", missing}, 78, "--tls-key", false},
		{"--tls-cert without --tls-key", []string{"--redis", mtls.URL(), "--tls-cert", clientCert}, 64, "--tls-cert and --tls-key", false},
		{"--tls-cacert with a plain redis:// URL", []string{"--redis", strings.Replace(srv.URL(), "rediss:", "redis:", 1), "--tls-cacert", ca.CertFile}, 78, "rediss://", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, ran := marker(t)
			res := clitest.Run(t, nil, append(append(tc.args, "tls-job"), cmd...)...)
			if tc.orReset && res.Code == 69 && strings.Contains(res.Stderr, "connection reset") {
				tc.code, tc.stderr = 69, "connection reset"
			}
			if res.Code != tc.code || ran() != (tc.code == 0) {
				t.Fatalf("exit %d (ran %v), stderr %q; want %d", res.Code, ran(), res.Stderr, tc.code)
			}
			if (tc.stderr == "") != (res.Stderr == "") || !strings.Contains(res.Stderr, tc.stderr) {
				t.Fatalf("stderr %q, want it to say %q", res.Stderr, tc.stderr)
			}
			if strings.HasPrefix(tc.name, "untrusted") && !strings.Contains(res.Stderr, "): give the CA that signed it with --tls-cacert; command not run") {
				t.Errorf("stderr %q does not say to give the CA with --tls-cacert", res.Stderr)
			}
			if tc.name == "untrusted: the system roots do not know the test CA" {
				matchesDoc(t, res, logsRow("a certificate from a CA this host does not trust"), "lock:x", "lock:tls-job")
			}
		})
	}
}

// TestTLSToPlainRedisIsConfigError: a rediss:// URL pointed at a port that
// speaks plain Redis is a configuration error (78) said at once, through a
// plain, Sentinel or Cluster client, not a hang until --redis-timeout
// reported as Redis being down. With maxclients reached, Redis answers
// before the handshake can start, in plain text.
func TestTLSToPlainRedisIsConfigError(t *testing.T) {
	t.Parallel()
	plain := redistest.Start(t)
	locked := redistest.Start(t, "requirepass", "s3cret-pw")
	full := redistest.Start(t, "maxclients", "1")
	if err := full.Client().Ping(context.Background()).Err(); err != nil { // takes the one client slot
		t.Fatal(err)
	}
	tlsURL := func(s *redistest.Server) string { return "rediss://" + s.Addr() + "/0" }
	const timeout = 9 * time.Second
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"plain Redis", []string{"--redis", tlsURL(plain)}},
		{"plain Redis wanting a password", []string{"--redis", tlsURL(locked)}},
		{"plain Redis answering first", []string{"--redis", tlsURL(full)}},
		{"Cluster seed", []string{"--cluster", "--redis", tlsURL(plain)}},
		{"sentinel", []string{"--redis", tlsURL(plain), "--sentinel", plain.Addr(), "--sentinel-master", "m"}},
		{"--status", []string{"--redis", tlsURL(plain), "--status"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmd, ran := marker(t)
			args := append(tc.args, "--redis-timeout", timeout.String(), "tls-job")
			if !slices.Contains(tc.args, "--status") {
				args = append(args, cmd...)
			}
			r := clitest.Run(t, nil, args...)
			if r.Code != 78 || ran() {
				t.Fatalf("exit %d (ran %v), stderr %q; want 78", r.Code, ran(), r.Stderr)
			}
			oneLine(t, r, "speaks plain Redis, not TLS: use redis://")
			if r.Duration > timeout/3 {
				t.Errorf("took %v with --redis-timeout %v: want it said at once", r.Duration, timeout)
			}
		})
	}
}

// A TLS Redis slow to answer a handshake, as one with a queue of them at
// the top of the minute, is not sent a second connection asking whether
// it speaks plain Redis: to it that would be one more connection to
// accept. While Redis is stopped, the run's connections wait in its
// listen backlog: there is one, and the run succeeds once Redis resumes.
func TestTLSRedisSlowToHandshakeIsNotProbed(t *testing.T) {
	t.Parallel()
	srv, ca := stoppedTLSRedis(t)
	cmd, ran := marker(t)
	p := clitest.Start(t, nil, append([]string{"--redis", srv.URL(), "--tls-cacert", ca.CertFile, "slow-tls"}, cmd...)...)
	clitest.Eventually(t, 5*time.Second, "the run's connection in Redis's backlog", func() bool { return backlog(t, srv.Port) >= 1 })
	// Past the moment a probe would come if it did not wait for the
	// handshake to go unanswered for a second (at 200 ms it did), and
	// far enough before that second for a loaded machine.
	const slow = 300 * time.Millisecond
	time.Sleep(slow)
	if n := backlog(t, srv.Port); n != 1 {
		t.Errorf("%d connections from the run wait for a TLS Redis that has not answered its handshake for %s; want 1", n, slow)
	}
	srv.Signal(syscall.SIGCONT)
	if r := p.Wait(10 * time.Second); r.Code != 0 || !ran() {
		t.Fatalf("exit %d (ran %v), stderr %q; want 0 and the command run", r.Code, ran(), r.Stderr)
	}
}

// backlog is the number of connections in the listen backlog of the
// server listening on 127.0.0.1:port: accepted by the kernel, not yet by
// the server (a listening socket's rx_queue in /proc/net/tcp).
func backlog(t *testing.T, port int) int {
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	local := fmt.Sprintf("0100007F:%04X", port)
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 4 && f[1] == local && f[3] == "0A" { // 0A: LISTEN
			_, rx, _ := strings.Cut(f[4], ":")
			n, err := strconv.ParseInt(rx, 16, 64)
			if err != nil {
				t.Fatalf("/proc/net/tcp: %q: %v", line, err)
			}
			return int(n)
		}
	}
	t.Fatalf("nothing listens on 127.0.0.1:%d in /proc/net/tcp", port)
	return 0
}

// secretsScript prints the command's environment, then with-lock's own
// command line ($PPID is with-lock: it runs the command directly).
const secretsScript = `tr '\0' '\n' < /proc/$$/environ; echo ---; tr '\0' ' ' < /proc/$PPID/cmdline`

func TestSecrets(t *testing.T) {
	t.Parallel()
	const password = "s3cret-Pa55word"
	srv := redistest.Start(t)
	if err := srv.Client().ConfigSet(context.Background(), "requirepass", password).Err(); err != nil {
		t.Fatal(err)
	}
	plain := srv.URL()
	withPassword := fmt.Sprintf("redis://:%s@%s/0", url.QueryEscape(password), srv.Addr())
	file := func(mode os.FileMode, content string) string {
		path := filepath.Join(t.TempDir(), "password")
		writeFile(t, path, []byte(content), 0o600)
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		return path
	}
	secretVars := []string{"WITH_LOCK_PASSWORD=", "REDISCLI_AUTH=", "WITH_LOCK_SENTINEL_PASSWORD=", "WITH_LOCK_REDIS=redis://:"}

	for _, tc := range []struct {
		name    string
		env     []string
		args    []string
		code    int
		warning bool // the password-in-argv warning, exactly once
	}{
		{"WITH_LOCK_PASSWORD", []string{"WITH_LOCK_PASSWORD=" + password, "WITH_LOCK_SENTINEL_PASSWORD=x"}, []string{"--redis", plain}, 0, false},
		{"REDISCLI_AUTH", []string{"REDISCLI_AUTH=" + password}, []string{"--redis", plain}, 0, false},
		{"password in WITH_LOCK_REDIS", []string{"WITH_LOCK_REDIS=" + withPassword}, nil, 0, false},
		{"--password-file 0600", nil, []string{"--redis", plain, "--password-file", file(0o600, password+"\n")}, 0, false},
		{"--password-file 0400", nil, []string{"--redis", plain, "--password-file", file(0o400, password)}, 0, false},
		{"password in --redis: warned once", nil, []string{"--redis", withPassword}, 0, true},
		{"--password-file readable by others", nil, []string{"--redis", plain, "--password-file", file(0o644, password)}, 78, false},
		{"--password-file readable by the group", nil, []string{"--redis", plain, "--password-file", file(0o640, password)}, 78, false},
		{"missing --password-file", nil, []string{"--redis", plain, "--password-file", "/nonexistent/password"}, 78, false},
		{"no password", nil, []string{"--redis", plain}, 77, false},
		{"wrong password", []string{"WITH_LOCK_PASSWORD=wrong-" + password}, []string{"--redis", plain}, 77, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := clitest.Run(t, tc.env, append(tc.args, "secret-job", "sh", "-c", secretsScript)...)
			if res.Code != tc.code {
				t.Fatalf("exit %d, stderr %q; want %d", res.Code, res.Stderr, tc.code)
			}
			if strings.Contains(res.Stderr, password) {
				t.Fatalf("stderr shows the password: %q", res.Stderr)
			}
			if n := strings.Count(res.Stderr, "visible to other users"); n != map[bool]int{true: 1}[tc.warning] {
				t.Fatalf("stderr %q: password warning %d times, want it %v", res.Stderr, n, tc.warning)
			}
			if tc.code != 0 {
				return
			}
			environ, cmdline, ok := strings.Cut(res.Stdout, "---\n")
			if !ok || !strings.Contains(environ, "WITH_LOCK_NAME=secret-job") {
				t.Fatalf("the command did not report its environment: %q", res.Stdout)
			}
			for _, v := range secretVars {
				if strings.Contains(environ, "\n"+v) || strings.HasPrefix(environ, v) {
					t.Errorf("the command inherited %s...", v)
				}
			}
			if strings.Contains(environ, password) {
				t.Errorf("the command's environment holds the password")
			}
			if !strings.Contains(cmdline, "secret-job") {
				t.Fatalf("not with-lock's command line: %q", cmdline)
			}
			if strings.Contains(cmdline, password) != tc.warning {
				t.Errorf("with-lock's command line %q: password shown %v, want %v", cmdline, !tc.warning, tc.warning)
			}
		})
	}
}
