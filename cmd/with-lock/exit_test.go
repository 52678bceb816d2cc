package main_test

// The exit codes of with-lock's own failures, the command not run: 64 for a
// bad command line, 78 for a bad configuration (a setting, or a key another
// program uses), 69 when Redis is unavailable, 77 when it refuses the
// credentials, each with one line on stderr; --help and --version exit 0.

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// TestBadInputsExitCodeAndOneLine: every bad input ends with-lock with
// its defined exit code and exactly one line on stderr that names the
// cause, without running the command, leaving a key or showing a password.
func TestBadInputsExitCodeAndOneLine(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const secret = "hunter2-pw"
	url := e.srv.URL()
	plainTLS := "rediss://" + e.srv.Addr() + "/0"
	db := func(n int) string { return "redis://" + e.srv.Addr() + "/" + strconv.Itoa(n) }
	nobody := "127.0.0.1:" + strconv.Itoa(redistest.FreePort(t))
	web := httptest.NewServer(http.NotFoundHandler()) // not Redis
	t.Cleanup(web.Close)
	// jobAt runs the job with flags that name its Redis; job on the test's.
	jobAt := func(flags ...string) []string { return append(flags, "x", "touch", e.path("ran")) }
	job := func(flags ...string) []string { return jobAt(append([]string{"--redis", url}, flags...)...) }
	sentinel := []string{"--sentinel", nobody, "--sentinel-master", "m"}
	malformed := e.conf("malformed.conf", "# host\nttl = \"5s\nquiet = true\n")
	unknownKey := e.conf("unknown.conf", "redis = \""+e.srv.Addr()+"\"\nbogus = 1\n")
	passwordKey := e.conf("password.conf", "password = \""+secret+"\"\n")
	wrongType := e.conf("type.conf", "wait = true\n")
	shortTTL := e.conf("short.conf", "\nttl = \"100ms\"\n")
	passwordFile := e.conf("password-file.conf", "ttl = \"5s\"\npassword-file = \""+e.path("none")+"\"\n")
	sentinelPasswordFile := e.conf("sentinel-password-file.conf", "sentinel-password-file = \""+e.dir+"\"\n")
	caNoTLS := e.conf("cacert.conf", "tls-cacert = \""+e.path("ca.pem")+"\"\n")
	tests := []struct {
		name string
		env  []string
		args []string
		code int
		want string // a part of the one line
	}{
		{"no arguments", nil, nil, 64, "missing lock name"},
		{"name only", nil, []string{"--redis", url, "x"}, 64, "missing command"},
		{"name and --", nil, []string{"--redis", url, "x", "--"}, 64, "missing command"},
		{"empty name", nil, append([]string{"--redis", url, ""}, job()[3:]...), 64, "lock name is empty"},
		{"control character", nil, append([]string{"--redis", url, "a\nb"}, job()[3:]...), 64, "control characters"},
		{"bad --ttl", nil, job("--ttl", "soon"), 64, "soon"},
		{"zero --ttl", nil, job("--ttl", "0s"), 64, "below the minimum of 200ms"},
		{"--ttl 1ms", nil, job("--ttl", "1ms"), 64, "--ttl 1ms is below the minimum of 200ms"},
		{"--ttl 199ms", nil, job("--ttl", "199ms"), 64, "below the minimum of 200ms"},
		{"unknown flag", nil, job("--bogus"), 64, "unknown flag: --bogus (see with-lock --help)"},
		{"unknown flag with a line break", nil, job("--bo\ngus"), 64, `unknown flag: --bo\ngus`},
		{"-E 256", nil, job("-E", "256"), 64, "outside 0-255"},
		{"-E -1", nil, job("-E", "-1"), 64, "outside 0-255"},
		{"--json without --status", nil, job("--json"), 64, "--json goes with --status"},
		{"-w 5s -n", nil, job("-w", "5s", "-n"), 64, "-n/--nonblock and --wait 5s contradict each other"},
		{"--wait 5x", nil, job("--wait", "5x"), 64, `invalid argument "5x" for "-w, --wait" flag: expected a duration`},
		{"WITH_LOCK_WAIT=soon", []string{"WITH_LOCK_WAIT=soon"}, job(), 64, `WITH_LOCK_WAIT: "soon": expected a duration`},
		{"--print-config with a name", nil, []string{"--print-config", "x"}, 64, "--print-config takes no lock name"},
		{"--slots 0", nil, job("--slots", "0"), 64, "--slots 0 is outside 1-1000"},
		{"--slots on a quorum", nil, jobAt("--redis", url, "--redis", db(1), "--redis", db(2), "--slots", "2"), 64, "--slots needs one Redis deployment"},
		{"--slots with --min-replicas", nil, job("--slots", "2", "--min-replicas", "1"), 64, "--slots and --min-replicas do not go together"},
		{"--slots name with } but no hash tag", nil, []string{"--redis", url, "--slots", "2", "a}b", "touch", e.path("ran")}, 64, "needs a hash tag {...} before it; command not run"},

		{"missing --config file", nil, job("--config", e.path("none.conf")), 78, "--config " + e.path("none.conf") + ": no such file"},
		{"missing WITH_LOCK_CONFIG file", []string{"WITH_LOCK_CONFIG=" + e.path("none.conf")}, job(), 78, "WITH_LOCK_CONFIG " + e.path("none.conf") + ": no such file"},
		{"malformed config file", nil, job("--config", malformed), 78, malformed + ":2: "},
		{"unknown key in the config file", nil, jobAt("--config", unknownKey), 78, unknownKey + ":2: bogus: unknown setting"},
		{"password key in the config file", nil, job("--config", passwordKey), 78, passwordKey + ":1: password: a password does not go in the config file"},
		{"wrong type in the config file", nil, job("--config", wrongType), 78, wrongType + ":1: wait: expected a duration"},
		{"ttl too short in the config file", nil, job("--config", shortTTL), 78, shortTTL + ":2: ttl 100ms is below the minimum of 200ms"},

		{"unknown URL scheme", nil, jobAt("--redis", "foo://x"), 78, "--redis URL"},
		{"unparsable URL", nil, jobAt("--redis", "redis://[bad"), 78, "--redis URL"},
		{"unparsable URL with a password", nil, jobAt("--redis", "redis://:"+secret+"@[bad"), 78, "--redis URL"},
		{"non-numeric port", nil, jobAt("--redis", "redis://u:"+secret+"@host:port/0"), 78, "--redis URL: invalid port"},
		{"port 99999", nil, jobAt("--redis", "redis://:99999"), 78, `--redis URL: port "99999" is not a TCP port`},
		{"port 0", nil, jobAt("--redis", "redis://127.0.0.1:0/0"), 78, `--redis URL: port "0" is not a TCP port`},
		{"port 99999 in WITH_LOCK_REDIS", []string{"WITH_LOCK_REDIS=redis://:" + secret + "@127.0.0.1:99999/0"}, jobAt(), 78, `WITH_LOCK_REDIS URL: port "99999"`},
		{"bad URL in WITH_LOCK_REDIS", []string{"WITH_LOCK_REDIS=foo://:" + secret + "@x"}, jobAt(), 78, "WITH_LOCK_REDIS URL"},
		{"sentinel port 99999", nil, job("--sentinel", "127.0.0.1:99999", "--sentinel-master", "m"), 78, `--sentinel: port "99999"`},
		{"database the server does not have", nil, jobAt("--redis", db(999)), 78, "database that server does not have: see its databases setting"},
		{"missing --password-file", nil, job("--password-file", e.path("none")), 78, "--password-file " + e.path("none") + ": no such file or directory"},
		{"--password-file is a directory", nil, job("--password-file", e.dir), 78, "--password-file " + e.dir + " is a directory"},
		{"--sentinel-password-file is a directory", nil, job(append(sentinel, "--sentinel-password-file", e.dir)...), 78, "--sentinel-password-file " + e.dir + " is a directory"},
		{"password-file in the config file", nil, job("--config", passwordFile), 78, passwordFile + ":2: password-file " + e.path("none") + ": no such file or directory"},
		{"WITH_LOCK_PASSWORD_FILE", []string{"WITH_LOCK_PASSWORD_FILE=" + e.path("none")}, job(), 78, "WITH_LOCK_PASSWORD_FILE " + e.path("none") + ": no such file or directory"},
		{"sentinel-password-file in the config file", nil, job(append(sentinel, "--config", sentinelPasswordFile)...), 78, sentinelPasswordFile + ":1: sentinel-password-file " + e.dir + " is a directory"},
		{"tls-cacert in the config file with a redis:// URL", nil, job("--config", caNoTLS), 78, caNoTLS + ":1: tls-cacert needs a rediss:// URL"},
		{"rediss:// to plain Redis", nil, jobAt("--redis", plainTLS, "--redis-timeout", "1s"), 78, "speaks plain Redis, not TLS: use redis://"},
		{"a web server at the address", nil, jobAt("--redis", "redis://"+web.Listener.Addr().String()+"/0"), 78, web.Listener.Addr().String() + ` is not Redis (it answered "HTTP/1.1 400 Bad Request"): check the port`},

		{"nothing listening", nil, jobAt("--redis", "redis://"+nobody+"/0", "--redis-timeout", "1s"), 69, "nothing listens at " + nobody + " (connection refused)"},
		{"no socket at the unix:// path", nil, jobAt("--redis", "unix:///nonexistent/redis.sock"), 69, "no socket at /nonexistent/redis.sock (no such file or directory)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := clitest.Run(t, tc.env, tc.args...)
			if r.Code != tc.code {
				t.Errorf("exit %d, want %d; stderr %q", r.Code, tc.code, r.Stderr)
			}
			oneLine(t, r, tc.want)
			if tc.code == exitUsage && !strings.HasSuffix(r.Stderr, " (see with-lock --help)\n") {
				t.Errorf("stderr %q: want the --help hint on the same line", r.Stderr)
			}
			if strings.Contains(r.Stderr, secret) {
				t.Errorf("stderr %q shows the password", r.Stderr)
			}
			e.notRun("ran")
		})
	}
	if n := e.rdb.DBSize(context.Background()).Val(); n != 0 {
		t.Errorf("bad inputs left %d keys in Redis", n)
	}
}

// exitUsage is with-lock's exit code for a bad command line.
const exitUsage = 64

func TestHelpAndVersion(t *testing.T) {
	t.Parallel()
	for _, flag := range []string{"-h", "--help"} {
		r := clitest.Run(t, nil, flag)
		if r.Code != 0 || !strings.HasPrefix(r.Stdout, "Usage: with-lock") || !strings.Contains(r.Stdout, "Examples:") || r.Stderr != "" {
			t.Errorf("with-lock %s = %d, stdout %q, stderr %q; want 0 and the usage on stdout", flag, r.Code, r.Stdout, r.Stderr)
		}
	}
	r := clitest.Run(t, nil, "--version")
	if r.Code != 0 || !regexp.MustCompile(`^with-lock \S+\n$`).MatchString(r.Stdout) || r.Stderr != "" {
		t.Errorf("with-lock --version = %d, %q, %q; want 0 and one line", r.Code, r.Stdout, r.Stderr)
	}
}

func TestRedisUnavailable(t *testing.T) {
	t.Parallel()
	t.Run("nothing listening", func(t *testing.T) {
		e := &env{t: t, dir: t.TempDir()}
		url := "redis://127.0.0.1:" + strconv.Itoa(redistest.FreePort(t)) + "/0"
		r := clitest.Run(t, nil, "--redis", url, "--redis-timeout", "1s", "x", "touch", e.path("ran"))
		if r.Code != 69 {
			t.Errorf("exit %d, want 69", r.Code)
		}
		oneLine(t, r, "command not run")
		e.notRun("ran")
	})
	t.Run("server paused", func(t *testing.T) {
		e := setup(t)
		e.srv.Signal(syscall.SIGSTOP)
		const timeout = time.Second
		r := e.run("--redis-timeout", timeout.String(), "x", "touch", e.path("ran"))
		e.srv.Signal(syscall.SIGCONT)
		if r.Code != 69 {
			t.Errorf("exit %d, want 69", r.Code)
		}
		oneLine(t, r, "command not run")
		e.notRun("ran")
		if r.Duration > 10*timeout {
			t.Errorf("gave up after %v with --redis-timeout %v", r.Duration, timeout)
		}
		if n := e.rdb.Exists(context.Background(), "lock:x").Val(); n != 0 {
			t.Error("lock:x exists once the server resumed")
		}
	})
	t.Run("loading", func(t *testing.T) {
		// A real LOADING state: DEBUG RELOAD saves and reloads the data set,
		// slowed to about 1ms a key, answering other clients in between.
		e := setup(t, "enable-debug-command", "yes", "key-load-delay", "1000",
			"loading-process-events-interval-bytes", "1024")
		ctx := context.Background()
		if err := e.rdb.Do(ctx, "DEBUG", "POPULATE", "3000", "filler", "100").Err(); err != nil {
			t.Fatal(err)
		}
		reload := e.srv.Client()
		go func() { _ = reload.Do(context.Background(), "DEBUG", "RELOAD").Err() }()
		clitest.Eventually(t, 10*time.Second, "the server never reported LOADING", func() bool {
			err := e.rdb.Ping(ctx).Err()
			return err != nil && strings.HasPrefix(err.Error(), "LOADING")
		})
		r := e.run("x", "touch", e.path("ran"))
		if r.Code != 69 {
			t.Errorf("exit %d, want 69", r.Code)
		}
		oneLine(t, r, "LOADING")
		e.notRun("ran")
	})
}

func TestRedisRefusesCredentials(t *testing.T) {
	t.Parallel()
	const password, wrong, userPassword = "s3cret-pw-xyz", "wrong-pw-123", "limited-pw-456"
	e := setup(t, "requirepass", password)
	ctx := context.Background()
	admin := e.srv.ClientWith(&redis.Options{Password: password})
	// A user who may do anything but SET.
	if err := admin.Do(ctx, "ACL", "SETUSER", "limited", "on", ">"+userPassword, "~*", "&*", "+@all", "-set").Err(); err != nil {
		t.Fatal(err)
	}
	addr := e.srv.Addr()
	tests := []struct {
		name, url, want string
		code            int
	}{
		{"no password", "redis://" + addr + "/0", "NOAUTH", 77},
		{"wrong password", "redis://:" + wrong + "@" + addr + "/0", "WRONGPASS", 77},
		{"no permission", "redis://limited:" + userPassword + "@" + addr + "/0", "NOPERM", 77},
		{"right password", "redis://:" + password + "@" + addr + "/0", "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := clitest.Run(t, []string{"WITH_LOCK_REDIS=" + tc.url}, "x", "touch", e.path(tc.name))
			if r.Code != tc.code {
				t.Errorf("exit %d, want %d; stderr %q", r.Code, tc.code, r.Stderr)
			}
			if tc.code == 0 {
				if !e.exists(tc.name) {
					t.Error("the command did not run")
				}
				return
			}
			oneLine(t, r, tc.want)
			// One failure, one prefix: a wrong password is refused at the
			// connection's handshake, a missing one at the first command.
			if !strings.HasPrefix(r.Stderr, "with-lock: acquire lock:x: ") {
				t.Errorf("stderr %q does not begin as every refused acquisition does: acquire lock:x: ", r.Stderr)
			}
			e.notRun(tc.name)
			for _, secret := range []string{password, wrong, userPassword} {
				if strings.Contains(r.Stderr, secret) {
					t.Errorf("stderr %q shows a password", r.Stderr)
				}
			}
		})
	}
}

// TestWrongTypeLockKeyIsConfigError: a lock key that another program uses
// for something else (here a list) is a configuration error, 78, named
// in one line: waiting or retrying will not free it, and Redis did answer.
func TestWrongTypeLockKeyIsConfigError(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	e.rdb.LPush(ctx, "lock:x", "someone else's")
	r := e.run("x", "touch", e.path("ran"))
	if r.Code != 78 {
		t.Errorf("exit %d, want 78; stderr %q", r.Code, r.Stderr)
	}
	oneLine(t, r, "lock:x")
	if strings.Contains(r.Stderr, "is Redis up") {
		t.Errorf("stderr %q asks whether Redis is up; it answered", r.Stderr)
	}
	e.notRun("ran")
	if n := e.rdb.LLen(ctx, "lock:x").Val(); n != 1 {
		t.Errorf("the foreign list holds %d items, want it untouched", n)
	}
}

// TestFenceCounterNotANumberIsConfigError: under --fence, a fencing
// counter that holds something other than a number is a configuration
// error, 78, named in one line; the command does not run.
func TestFenceCounterNotANumberIsConfigError(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	counter := fenceKey("x")
	e.rdb.Set(ctx, counter, "not a number", 0)
	r := e.run("--fence", "x", "touch", e.path("ran"))
	if r.Code != 78 {
		t.Errorf("exit %d, want 78; stderr %q", r.Code, r.Stderr)
	}
	oneLine(t, r, counter)
	if strings.Contains(r.Stderr, "is Redis up") {
		t.Errorf("stderr %q asks whether Redis is up; it answered", r.Stderr)
	}
	e.notRun("ran")
	if v := e.get(counter); v != "not a number" {
		t.Errorf("the counter holds %q, want it untouched", v)
	}
	e.gone(t, "lock:x")
}
