package config_test

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/config"
)

// env returns a getenv over a fixed environment.
func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// settingsOf returns the settings of c that TestParse compares: the
// URLs, the timeout and the lock, supervision and output groups
// (connection_test.go covers the rest of the connection).
func settingsOf(c *config.Config) config.Config {
	return config.Config{
		Connection:  config.Connection{RedisURLs: c.RedisURLs, RedisTimeout: c.RedisTimeout},
		Lock:        c.Lock,
		Supervision: c.Supervision,
		Output:      c.Output,
	}
}

func TestParse(t *testing.T) {
	defaults := config.Config{
		Connection:  config.Connection{RedisURLs: []string{config.DefaultRedisURL}, RedisTimeout: config.DefaultRedisTimeout},
		Lock:        config.Lock{Prefix: config.DefaultPrefix, TTL: config.DefaultTTL, ConflictExit: config.DefaultConflictExit, Slots: 1},
		Supervision: config.Supervision{OnLost: config.OnLostTerm, KillAfter: config.DefaultKillAfter, RecordTTL: config.DefaultRecordTTL, Leftovers: config.LeftoversWait, Job: config.Job{Tracking: config.TrackingAuto}, HistorySize: config.DefaultHistorySize},
		Output:      config.Output{LogFormat: config.LogText},
	}
	with := func(f func(c *config.Config)) config.Config {
		c := defaults
		f(&c)
		return c
	}
	tests := []struct {
		name     string
		args     []string
		env      func(string) string
		want     config.Config // without Name and Command
		wantName string
		wantCmd  []string
	}{
		{"defaults", []string{"job", "true"}, env(), defaults, "job", []string{"true"}},
		{"command args stay the command's", []string{"job", "ls", "-l", "--ttl", "5s"}, env(), defaults, "job", []string{"ls", "-l", "--ttl", "5s"}},
		{"flags stop at the name", []string{"job", "--ttl", "5s", "cmd"}, env(), defaults, "job", []string{"--ttl", "5s", "cmd"}},
		{"-h after the name is the command's", []string{"job", "cmd", "-h"}, env(), defaults, "job", []string{"cmd", "-h"}},
		{"long flags", []string{"--ttl=2m", "--redis", "redis://h:1/2", "--redis-timeout", "500ms", "--prefix", "jobs/", "--wait=1m", "job", "cmd"}, env(),
			with(func(c *config.Config) {
				c.TTL, c.RedisURLs, c.RedisTimeout, c.Prefix, c.Wait = 2*time.Minute, []string{"redis://h:1/2"}, 500*time.Millisecond, "jobs/", time.Minute
			}), "job", []string{"cmd"}},
		{"short flags", []string{"-w", "5s", "-E", "0", "-q", "job", "cmd"}, env(),
			with(func(c *config.Config) { c.Wait, c.ConflictExit, c.Quiet = 5*time.Second, 0, true }), "job", []string{"cmd"}},
		{"-n", []string{"-n", "job", "cmd"}, env(), defaults, "job", []string{"cmd"}},
		{"-n beats a wait from the environment", []string{"-n", "job", "cmd"}, env("WITH_LOCK_WAIT", "5"), defaults, "job", []string{"cmd"}},
		{"bare seconds", []string{"-w", "5", "--ttl", "0.5", "job", "cmd"}, env(),
			with(func(c *config.Config) { c.Wait, c.TTL = 5*time.Second, 500*time.Millisecond }), "job", []string{"cmd"}},
		{"redis host:port", []string{"--redis", "cache:6380", "job", "cmd"}, env(),
			with(func(c *config.Config) { c.RedisURLs = []string{"redis://cache:6380/0"} }), "job", []string{"cmd"}},
		{"-E 255", []string{"-E", "255", "job", "cmd"}, env(), with(func(c *config.Config) { c.ConflictExit = 255 }), "job", []string{"cmd"}},
		{"--slots", []string{"--slots", "3", "job", "cmd"}, env(), with(func(c *config.Config) { c.Slots = 3 }), "job", []string{"cmd"}},
		{"slots from the environment", []string{"job", "cmd"}, env("WITH_LOCK_SLOTS", "2"), with(func(c *config.Config) { c.Slots = 2 }), "job", []string{"cmd"}},
		{"sub-second ttl", []string{"--ttl", "1500ms", "job", "cmd"}, env(), with(func(c *config.Config) { c.TTL = 1500 * time.Millisecond }), "job", []string{"cmd"}},
		{"the shortest ttl", []string{"--ttl", "200ms", "job", "cmd"}, env(), with(func(c *config.Config) { c.TTL = config.MinTTL }), "job", []string{"cmd"}},
		{"-- before the name", []string{"--ttl", "5s", "--", "-job", "cmd"}, env(), with(func(c *config.Config) { c.TTL = 5 * time.Second }), "-job", []string{"cmd"}},
		{"-- after the name", []string{"job", "--", "cmd", "--", "x"}, env(), defaults, "job", []string{"cmd", "--", "x"}},
		{"-- on both sides", []string{"--", "job", "--", "-cmd"}, env(), defaults, "job", []string{"-cmd"}},
		{"env redis", []string{"job", "cmd"}, env("WITH_LOCK_REDIS", "redis://env:1/0"), with(func(c *config.Config) { c.RedisURLs = []string{"redis://env:1/0"} }), "job", []string{"cmd"}},
		{"flag beats env", []string{"--redis", "redis://flag:1/0", "job", "cmd"}, env("WITH_LOCK_REDIS", "redis://env:1/0"), with(func(c *config.Config) { c.RedisURLs = []string{"redis://flag:1/0"} }), "job", []string{"cmd"}},
		{"flag equal to the default still beats env", []string{"--redis", config.DefaultRedisURL, "job", "cmd"}, env("WITH_LOCK_REDIS", "redis://env:1/0"), defaults, "job", []string{"cmd"}},
		{"empty env is unset", []string{"job", "cmd"}, env("WITH_LOCK_REDIS", ""), defaults, "job", []string{"cmd"}},
		{"unicode name", []string{"ночной-отчёт", "cmd"}, env(), defaults, "ночной-отчёт", []string{"cmd"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := config.Parse(tc.args, tc.env)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.args, err)
			}
			if got.Name != tc.wantName || !slices.Equal(got.Command, tc.wantCmd) {
				t.Errorf("Parse(%q) name, command = %q, %q; want %q, %q", tc.args, got.Name, got.Command, tc.wantName, tc.wantCmd)
			}
			rest := settingsOf(got)
			if !reflect.DeepEqual(rest, tc.want) {
				t.Errorf("Parse(%q) =\n %+v\nwant\n %+v", tc.args, rest, tc.want)
			}
		})
	}
}

func TestParseVersion(t *testing.T) {
	c, err := config.Parse([]string{"--version"}, env())
	if err != nil || !c.Version {
		t.Errorf("Parse(--version) = %+v, %v; want Version without a name or command", c, err)
	}
}

func TestParseHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"--ttl", "5s", "-h", "job", "cmd"}} {
		if _, err := config.Parse(args, env()); !errors.Is(err, config.ErrHelp) || errors.Is(err, config.ErrUsage) {
			t.Errorf("Parse(%q) = %v, want ErrHelp", args, err)
		}
	}
}

func TestParseUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string // in the message
	}{
		{nil, "missing lock name"},
		{[]string{"job"}, `missing command to run under lock "job"`},
		{[]string{"job", "--"}, "missing command"},
		{[]string{"", "cmd"}, "lock name is empty"},
		{[]string{"a\nb", "cmd"}, "control characters"},
		{[]string{"a\x7fb", "cmd"}, "control characters"},
		{[]string{"job", ""}, "command is empty"},
		{[]string{"--ttl", "soon", "job", "cmd"}, "soon"},
		{[]string{"--ttl", "0", "job", "cmd"}, "below the minimum of 200ms"},
		{[]string{"--ttl", "500us", "job", "cmd"}, "below the minimum of 200ms"},
		{[]string{"--ttl", "1ms", "job", "cmd"}, "--ttl 1ms is below the minimum of 200ms"},
		{[]string{"--ttl", "199ms", "job", "cmd"}, "below the minimum of 200ms"},
		{[]string{"--ttl", "-5s", "job", "cmd"}, "below the minimum of 200ms"},
		{[]string{"--redis-timeout", "0s", "job", "cmd"}, "must be positive"},
		{[]string{"-w", "-1s", "job", "cmd"}, "negative"},
		{[]string{"--jitter", "-1s", "job", "cmd"}, "--jitter -1s is negative"},
		{[]string{"-E", "256", "job", "cmd"}, "outside 0-255"},
		{[]string{"-E", "-1", "job", "cmd"}, "outside 0-255"},
		{[]string{"-E", "x", "job", "cmd"}, "x"},
		{[]string{"--slots", "0", "job", "cmd"}, "--slots 0 is outside 1-1000"},
		{[]string{"--slots", "1001", "job", "cmd"}, "outside 1-1000"},
		{[]string{"--history-size", "-1", "job", "cmd"}, "--history-size -1 is outside 0-1000"},
		{[]string{"--history", "job", "cmd"}, "--history takes one lock name and no command"},
		{[]string{"--history", "--status", "job"}, "go alone"},
		{[]string{"--slots", "2", "--min-replicas", "1", "job", "cmd"}, "--slots and --min-replicas do not go together"},
		{[]string{"--slots", "3", "--redis", "redis://a:1/0", "--redis", "redis://b:1/0", "--redis", "redis://c:1/0", "job", "cmd"}, "--slots needs one Redis deployment"},
		{[]string{"--on-lost", "retry", "job", "cmd"}, "expected term, ignore or reacquire"},
		{[]string{"--on-lost", "reacquire", "--no-renew", "job", "cmd"}, "does not go with --no-renew"},
		{[]string{"--on-lost", "reacquire", "--slots", "2", "job", "cmd"}, "does not go with --slots"},
		{[]string{"--on-lost", "reacquire", "--redis", "redis://a:1/0", "--redis", "redis://b:1/0", "--redis", "redis://c:1/0", "job", "cmd"}, "--on-lost reacquire needs one Redis deployment"},
		{[]string{"--bogus", "job", "cmd"}, "bogus"},
		{[]string{"-x", "job", "cmd"}, "-x"},
		{[]string{"--ttl"}, "ttl"},
	}
	for _, tc := range tests {
		c, err := config.Parse(tc.args, env())
		if !errors.Is(err, config.ErrUsage) || c != nil {
			t.Errorf("Parse(%q) = %+v, %v; want an ErrUsage", tc.args, c, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) error %q does not mention %q", tc.args, err, tc.want)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("Parse(%q) error %q spans lines", tc.args, err)
		}
	}
}

func TestRedisOptions(t *testing.T) {
	c, err := config.Parse([]string{"--redis", "redis://user:pw@10.1.2.3:7000/5", "--redis-timeout", "1500ms", "job", "cmd"}, env())
	if err != nil {
		t.Fatal(err)
	}
	opt, err := c.RedisOptions()
	if err != nil {
		t.Fatalf("RedisOptions: %v", err)
	}
	if opt.Addr != "10.1.2.3:7000" || opt.DB != 5 || opt.Username != "user" || opt.Password != "pw" {
		t.Errorf("options Addr, DB, Username, Password = %q, %d, %q, %q", opt.Addr, opt.DB, opt.Username, opt.Password)
	}
	for name, d := range map[string]time.Duration{"DialTimeout": opt.DialTimeout, "ReadTimeout": opt.ReadTimeout, "WriteTimeout": opt.WriteTimeout} {
		if d != 1500*time.Millisecond {
			t.Errorf("%s = %v, want --redis-timeout 1.5s", name, d)
		}
	}
	if opt.MaxRetries != -1 {
		t.Errorf("MaxRetries = %d, want -1: a retried SET NX may have landed", opt.MaxRetries)
	}
}

func TestRedisOptionsErrors(t *testing.T) {
	const secret = "hunter2secret"
	for _, url := range []string{
		"foo://x",
		"redis://[bad",
		"",
		"redis://:" + secret + "@[bad",
		"redis://user:" + secret + "@host:port/0",
		"redis://:" + secret + "@host:6379/notadb",
		"redis://:" + secret + "@host:6379/0?dial_timeout=soon",
		"http://:" + secret + "@host:6379/0",
		"redis://:" + secret + "@host:6379/0/extra",
		"redis://:" + secret + "@host:99999/0",
		"redis://:" + secret + "@host:0/0",
		"redis://:99999",
		"rediss://:" + secret + "@host:65536/0",
	} {
		c, err := config.Parse([]string{"--redis", url, "job", "cmd"}, env())
		if err != nil {
			t.Fatalf("Parse with --redis %q: %v (URLs are checked by RedisOptions)", url, err)
		}
		opt, err := c.RedisOptions()
		if !errors.Is(err, config.ErrConfig) || opt != nil {
			t.Errorf("RedisOptions(%q) = %v, %v; want an ErrConfig", url, opt, err)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("RedisOptions(%q) error %q shows the password", url, err)
		}
	}
}

func TestUsage(t *testing.T) {
	var b strings.Builder
	config.Usage(&b)
	for _, want := range []string{"Usage: with-lock [flags] <name> <command>", "--redis", "--ttl", "-E, --conflict-exit-code", "-q, --quiet", "75", "Examples:"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("usage does not mention %q", want)
		}
	}
}
