package main_test

// The settings: config files, flags and where they go, values and renamed
// keys, --print-config.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// Two hosts configured once each, by their config file, on one Redis:
// a lock taken with one file is busy for the other, while a host whose
// file names another Redis is not excluded.
func TestConfigFilesOnOneRedisExcludeEachOther(t *testing.T) {
	t.Parallel()
	e := setup(t)
	other := redistest.Start(t)
	hostA := e.conf("a.conf", "redis = \""+e.srv.Addr()+"\"\nttl = 5\n")
	hostB := e.conf("b.conf", "redis = [\""+e.srv.URL()+"\"]\n")
	elsewhere := e.conf("c.conf", "redis = \""+other.URL()+"\"\n")

	a := clitest.Start(t, []string{"WITH_LOCK_CONFIG=" + hostA}, "nightly", "sh", "-c", "touch "+e.path("a-runs")+"; exec sleep 30")
	a.WaitFile(e.path("a-runs"))
	if ttl := e.rdb.PTTL(t.Context(), "lock:nightly").Val(); ttl <= 0 || ttl > 5*time.Second {
		t.Errorf("lock:nightly has TTL %v, want at most the file's ttl = 5", ttl)
	}
	r := clitest.Run(t, nil, "--config", hostB, "nightly", "touch", e.path("b-ran"))
	if r.Code != 75 {
		t.Errorf("host B: exit %d, want 75 (busy); stderr %q", r.Code, r.Stderr)
	}
	e.notRun("b-ran")
	r = clitest.Run(t, nil, "--config", elsewhere, "nightly", "touch", e.path("c-ran"))
	if r.Code != 0 || !e.exists("c-ran") {
		t.Errorf("a host on another Redis: exit %d, stderr %q; want 0 and its command run", r.Code, r.Stderr)
	}
}

// A bare number is seconds, as with flock -w; and --redis host:port is
// redis://host:port/0, as redis-cli users write it.
func TestBareSecondsAndHostPort(t *testing.T) {
	t.Parallel()
	e := setup(t)
	holder := clitest.Start(t, nil, "--redis", e.srv.Addr(), "job", "sh", "-c", "touch "+e.path("held")+"; exec sleep 30")
	holder.WaitFile(e.path("held"))
	r := clitest.Run(t, nil, "--redis", e.srv.Addr(), "-w", "0.5", "job", "touch", e.path("ran"))
	if r.Code != 75 || r.Duration < 400*time.Millisecond || r.Duration > 5*time.Second {
		t.Errorf("-w 0.5 on a held lock: exit %d after %v, want 75 after about half a second; stderr %q", r.Code, r.Duration, r.Stderr)
	}
	e.notRun("ran")
}

// --print-config's output is a config file: it parses as TOML, names
// where each setting came from in its comments, and masks passwords.
func TestPrintConfigShowsSourcesAndMasksPasswords(t *testing.T) {
	t.Parallel()
	e := &env{t: t, dir: t.TempDir()}
	const secret = "hunter2-pw"
	conf := e.conf("host.conf", "# this host\nredis = [\"redis://app:"+secret+"@cache:6380/0\"]\nttl = \"45s\"\nprefix = \"file/\"\n")
	r := clitest.Run(t, []string{"WITH_LOCK_CONFIG=" + conf, "WITH_LOCK_PREFIX=env/", "WITH_LOCK_PASSWORD=" + secret}, "--print-config", "-w", "5")
	if r.Code != 0 || strings.Contains(r.Stdout+r.Stderr, secret) {
		t.Fatalf("exit %d, stdout %q, stderr %q: want 0 and no password", r.Code, r.Stdout, r.Stderr)
	}
	var values map[string]any
	if err := toml.Unmarshal([]byte(r.Stdout), &values); err != nil {
		t.Fatalf("--print-config is not TOML: %v\n%s", err, r.Stdout)
	}
	sources := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^([a-z-]+) = .*# (.*)$`).FindAllStringSubmatch(r.Stdout, -1) {
		sources[m[1]] = m[2]
	}
	for key, want := range map[string][2]string{
		"redis":    {"[redis://app:***@cache:6380/0]", "file " + conf + ":2"},
		"ttl":      {"45s", "file " + conf + ":3"},
		"prefix":   {"env/", "env WITH_LOCK_PREFIX"},
		"wait":     {"5s", "flag --wait"},
		"min-hold": {"0s", "default"},
	} {
		if got := toString(values[key]); got != want[0] || sources[key] != want[1] {
			t.Errorf("%s = %s from %q, want %s from %q", key, got, sources[key], want[0], want[1])
		}
	}
	if !strings.Contains(r.Stdout, "# password: set by env WITH_LOCK_PASSWORD (not shown)") {
		t.Errorf("--print-config does not say where the password comes from:\n%s", r.Stdout)
	}
	if strings.Contains(r.Stdout, "locks only against") {
		t.Errorf("a configured Redis is called local-only:\n%s", r.Stdout)
	}

	r = clitest.Run(t, []string{"WITH_LOCK_CONFIG=" + conf}, "--print-config", "--json")
	var out struct {
		ConfigFile     string `json:"config_file"`
		ConfigFileRead bool   `json:"config_file_read"`
		RedisIsDefault bool   `json:"redis_is_default"`
		Settings       []struct {
			Name   string `json:"name"`
			Value  any    `json:"value"`
			Source string `json:"source"`
		} `json:"settings"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil || r.Code != 0 {
		t.Fatalf("--print-config --json: exit %d, %v: %q", r.Code, err, r.Stdout)
	}
	if out.ConfigFile != conf || !out.ConfigFileRead || out.RedisIsDefault || out.Settings[0].Name != "redis" ||
		toString(out.Settings[0].Value) != "[redis://app:***@cache:6380/0]" || out.Settings[0].Source != "file "+conf+":2" {
		t.Errorf("--print-config --json = %+v", out)
	}
}

// With no Redis configured, --print-config says plainly that this host
// locks only against itself.
func TestPrintConfigWarnsOfTheLocalDefault(t *testing.T) {
	t.Parallel()
	e := &env{t: t, dir: t.TempDir()}
	empty := e.conf("empty.conf", "# nothing configured\n")
	r := clitest.Run(t, nil, "--config", empty, "--print-config")
	if r.Code != 0 || !regexp.MustCompile(`(?m)^redis = \["redis://127.0.0.1:6379/0"\] +# default: locks only against a Redis on this host$`).MatchString(r.Stdout) ||
		!strings.Contains(r.Stdout, "# WARNING: no Redis configured") {
		t.Errorf("exit %d, stdout:\n%s\nwant the redis line to say the default locks only against this host", r.Code, r.Stdout)
	}
	r = clitest.Run(t, nil, "--config", empty, "--print-config", "--json")
	if !strings.Contains(r.Stdout, `"redis_is_default":true`) {
		t.Errorf("--print-config --json = %q, want redis_is_default true", r.Stdout)
	}
}

// toString shows a decoded value without quotes: 45s, [a,b].
func toString(v any) string {
	b, _ := json.Marshal(v)
	return strings.ReplaceAll(string(b), `"`, "")
}

// --print-config describes a single Redis, a Cluster and a quorum alike, and
// what it prints is a config file that reaches the same deployment: a
// --status through it finds the lock free (1), then held (0).
func TestPrintConfigRoundTripsOnEveryDeployment(t *testing.T) {
	t.Parallel()
	single := redistest.Start(t)
	cluster := redistest.StartCluster(t, 3)
	_, _, quorumArgs, _ := quorumMasters(t)
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"single", []string{"--redis", single.URL()}},
		{"cluster", append([]string{"--cluster"}, seedArgs(cluster.Seeds())...)},
		{"quorum", quorumArgs},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := &env{t: t, dir: t.TempDir()}
			r := clitest.Run(t, nil, append(tt.args, "--print-config")...)
			if r.Code != 0 || strings.Contains(r.Stdout, "locks only against") {
				t.Fatalf("--print-config: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
			}
			for i, arg := range tt.args {
				if arg != "--redis" {
					continue
				}
				addr := strings.TrimSuffix(strings.TrimPrefix(tt.args[i+1], "redis://"), "/0")
				if !strings.Contains(r.Stdout, addr) {
					t.Errorf("--print-config does not show %s:\n%s", addr, r.Stdout)
				}
			}
			printed := []string{"--config", e.conf("printed.conf", r.Stdout)}
			if r := clitest.Run(t, nil, append(printed, "--status", "rt")...); r.Code != 1 {
				t.Fatalf("--status through the printed config: exit %d, stderr %q; want 1 (free)", r.Code, r.Stderr)
			}
			p := clitest.Start(t, nil, append(printed, "rt", "sleep", "30")...)
			clitest.Eventually(t, 10*time.Second, "the lock held through the printed config", func() bool {
				return clitest.Run(t, nil, append(printed, "--status", "rt")...).Code == 0
			})
			p.Signal(syscall.SIGTERM)
			p.Wait(10 * time.Second)
		})
	}
}

// seedArgs turns cluster seeds into --redis flags.
func seedArgs(seeds []string) []string {
	var args []string
	for _, s := range seeds {
		args = append(args, "--redis", s)
	}
	return args
}

// An old TLS key in the config file (key, the lock's key to a reader) is
// bad configuration: exit 78, one line naming the new key, command not run.
func TestOldTLSKeyInConfigFileExits78WithTheNewName(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	conf, ran := filepath.Join(dir, "old.conf"), filepath.Join(dir, "ran")
	writeFile(t, conf, []byte("key = \"/etc/ssl/with-lock.key\"\n"), 0o644)
	r := clitest.Run(t, nil, "--config", conf, "job", "touch", ran)
	if r.Code != 78 {
		t.Errorf("exit %d, want 78; stderr %q", r.Code, r.Stderr)
	}
	oneLine(t, r, conf+":1: key: renamed to tls-key")
	if _, err := os.Stat(ran); err == nil {
		t.Error("the command ran")
	}
}

// An empty --prefix is refused (64 on the command line, 78 in the config
// file), as the library would put "lock:" in its place; --print-config
// shows it, and then the refusal. An empty WITH_LOCK_PREFIX is unset, as
// every empty variable.
func TestEmptyPrefixIsRefused(t *testing.T) {
	t.Parallel()
	e := setup(t)
	conf := e.conf("with-lock.conf", "prefix = \"\"\n")
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		code int
		want string
	}{
		{"flag", nil, []string{"--prefix", "", "x", "true"}, 64, "--prefix is empty: a lock's key needs a prefix (the default is lock:)"},
		{"flag, --print-config", nil, []string{"--prefix=", "--print-config"}, 64, "--prefix is empty"},
		{"config file", nil, []string{"--config", conf, "x", "true"}, 78, conf + ":1: prefix is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := clitest.Run(t, tc.env, append([]string{"--redis", e.srv.URL()}, tc.args...)...)
			if r.Code != tc.code {
				t.Errorf("exit %d, want %d", r.Code, tc.code)
			}
			if strings.HasSuffix(tc.name, "--print-config") {
				if !strings.Contains(r.Stdout, `prefix = ""`) || strings.Count(r.Stderr, "\n") != 1 || !strings.Contains(r.Stderr, tc.want) {
					t.Errorf("stdout %q, stderr %q; want the empty prefix shown, then the refusal in one line", r.Stdout, r.Stderr)
				}
				return
			}
			oneLine(t, r, tc.want)
		})
	}
	t.Run("empty variable", func(t *testing.T) {
		r := clitest.Run(t, []string{"WITH_LOCK_PREFIX="}, "--redis", e.srv.URL(), "--print-config")
		if r.Code != 0 || !strings.Contains(r.Stdout, `prefix = "lock:"`) {
			t.Errorf("exit %d, stdout %q: want prefix lock:", r.Code, r.Stdout)
		}
	})
	if n := e.rdb.DBSize(t.Context()).Val(); n != 0 {
		t.Errorf("%d keys written", n)
	}
}

// A command that is one of with-lock's flags was most likely meant for
// with-lock: the message says where flags go. A command that is not one
// of our flags gets the plain not-found line, without that hint.
func TestFlagAfterTheNameSaysWhereFlagsGo(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for _, tc := range []struct {
		cmd  string
		hint bool
	}{{"-q", true}, {"--ttl=5s", true}, {"-w5m", true}, {"--no-such-flag", false}, {"no-such-command", false}} {
		t.Run(tc.cmd, func(t *testing.T) {
			r := e.run("x", tc.cmd, "true")
			if r.Code != 127 {
				t.Errorf("exit %d, want 127", r.Code)
			}
			oneLine(t, r, tc.cmd+": ")
			if got := strings.Contains(r.Stderr, "(flags go before the lock name)"); got != tc.hint {
				t.Errorf("stderr %q: says where flags go %v, want %v", r.Stderr, got, tc.hint)
			}
		})
	}
}

// --print-config prints settings a run would refuse (a quorum of two
// masters) all the same, they being what needs mending, and then says the
// refusal in one line on stderr with the exit code a run would give. A
// flag that does not go with --print-config (another action) is refused
// before anything is printed.
func TestPrintConfigPrintsRefusedSettingsAndSaysWhy(t *testing.T) {
	t.Parallel()
	r := clitest.Run(t, nil, "--redis", "redis://a.example:6379/0", "--redis", "redis://b.example:6379/0", "--print-config")
	if r.Code != 64 {
		t.Errorf("exit %d, want 64, as a run with these settings", r.Code)
	}
	if !strings.Contains(r.Stdout, `redis = ["redis://a.example:6379/0", "redis://b.example:6379/0"]`) {
		t.Errorf("stdout %q does not show the two masters", r.Stdout)
	}
	if r.Stderr != "with-lock: usage error: a quorum needs an odd number of independent --redis masters, not 2 (see with-lock --help)\n" {
		t.Errorf("stderr %q, want the refusal in one line", r.Stderr)
	}
	r = clitest.Run(t, nil, "--redis", "redis://a.example:6379/0", "--print-config", "--list")
	if r.Code != 64 {
		t.Errorf("--print-config --list: exit %d, want 64", r.Code)
	}
	oneLine(t, r, "go alone: pick one")
}

// A WITH_LOCK_* variable with-lock does not know is warned of once, in one
// line naming the variable most likely meant, and changes nothing.
func TestUnknownVariableIsWarnedOfOnce(t *testing.T) {
	t.Parallel()
	r := clitest.Run(t, []string{"WITH_LOCK_TTLL=5s"}, "--redis", "redis://a.example:6379/0", "--print-config")
	if r.Code != 0 || !strings.Contains(r.Stdout, `ttl = "30s"`) {
		t.Errorf("exit %d, stdout %q; want 0 and the default ttl", r.Code, r.Stdout)
	}
	if r.Stderr != "with-lock: warning: WITH_LOCK_TTLL is not a with-lock variable and is ignored; did you mean WITH_LOCK_TTL?\n" {
		t.Errorf("stderr %q, want one warning naming WITH_LOCK_TTL", r.Stderr)
	}
}
