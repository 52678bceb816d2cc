package config_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/with-lock/with-lock/internal/config"
)

var update = flag.Bool("update", false, "rewrite packaging/with-lock.conf and packaging/with-lock.1 from the settings table")

// writeConf writes a config file for the test and returns its path.
func writeConf(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "with-lock.conf")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A flag beats its variable, which beats the file, which beats the
// default, for every kind of setting; Effective says which won, with the
// file's line.
func TestConfigFilePrecedence(t *testing.T) {
	conf := writeConf(t, `# a host's settings
redis = ["redis://file:1/0"]
ttl = "45s"
wait = 5
redis-timeout = 0.5
quiet = true
conflict-exit-code = 0
prefix = "jobs/"
on-lost = "ignore"
kill-after = "1d"
sentinel-user = "watcher"
`)
	for _, tc := range []struct {
		name       string
		args       []string
		env        []string
		setting    string
		want, from string
	}{
		{"list from file", nil, nil, "redis", `["redis://file:1/0"]`, "file " + conf + ":2"},
		{"list env beats file", nil, []string{"WITH_LOCK_REDIS", "redis://env:1/0"}, "redis", `["redis://env:1/0"]`, "env WITH_LOCK_REDIS"},
		{"list flag beats env and file", []string{"--redis", "flag:7"}, []string{"WITH_LOCK_REDIS", "redis://env:1/0"}, "redis", `["redis://flag:7/0"]`, "flag --redis"},
		{"duration string from file", nil, nil, "ttl", `"45s"`, "file " + conf + ":3"},
		{"duration env beats file", nil, []string{"WITH_LOCK_TTL", "2m"}, "ttl", `"2m0s"`, "env WITH_LOCK_TTL"},
		{"duration flag beats file", []string{"--ttl", "10"}, nil, "ttl", `"10s"`, "flag --ttl"},
		{"integer seconds from file", nil, nil, "wait", `"5s"`, "file " + conf + ":4"},
		{"fractional seconds from file", nil, nil, "redis-timeout", `"500ms"`, "file " + conf + ":5"},
		{"days from file", nil, nil, "kill-after", `"24h0m0s"`, "file " + conf + ":10"},
		{"bool from file", nil, nil, "quiet", "true", "file " + conf + ":6"},
		{"bool flag beats file", []string{"--quiet=false"}, nil, "quiet", "false", "flag --quiet"},
		{"int from file", nil, nil, "conflict-exit-code", "0", "file " + conf + ":7"},
		{"int env beats file", nil, []string{"WITH_LOCK_CONFLICT_EXIT_CODE", "9"}, "conflict-exit-code", "9", "env WITH_LOCK_CONFLICT_EXIT_CODE"},
		{"string from file", nil, nil, "prefix", `"jobs/"`, "file " + conf + ":8"},
		{"choice from file", nil, nil, "on-lost", `"ignore"`, "file " + conf + ":9"},
		{"not in the file: default", nil, nil, "min-hold", `"0s"`, "default"},
		{"-n beats a wait from the file", []string{"-n"}, nil, "wait", `"0s"`, "flag --wait"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Parse(append([]string{"--config", conf}, append(tc.args, "job", "true")...), env(tc.env...))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range c.Effective() {
				if e.Name != tc.setting {
					continue
				}
				if got := config.FormatValue(e.Value); got != tc.want || e.Source != tc.from {
					t.Errorf("%s = %s from %q, want %s from %q", tc.setting, got, e.Source, tc.want, tc.from)
				}
				return
			}
			t.Fatalf("Effective has no %s", tc.setting)
		})
	}
}

// A bad file is a configuration error (exit 78), one line, that says
// file:line and the key.
func TestConfigFileErrorsSayFileLineAndKey(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       string // after "PATH:"
	}{
		{"unknown key", "ttl = \"5s\"\nbogus = 1\n", `2: bogus: unknown setting`},
		{"misspelt key", "\n\nredis_timeout = \"2s\"\n", `3: redis_timeout: unknown setting`},
		{"an action is no setting", "status = true\n", `1: status: unknown setting`},
		{"config cannot name another", "config = \"/x\"\n", `1: config: unknown setting`},
		{"password", "password = \"hunter2\"\n", `1: password: a password does not go in the config file; use password-file`},
		{"duration of the wrong type", "ttl = true\n", `1: ttl: expected a duration such as "45s" or a number of seconds, not a boolean`},
		{"bad duration", "\nwait = \"soon\"\n", `2: wait: "soon": expected a duration`},
		{"string of the wrong type", "prefix = 3\n", `1: prefix: expected a string such as "text", not an integer`},
		{"bool of the wrong type", "quiet = \"yes\"\n", `1: quiet: expected true or false, not a string`},
		{"int of the wrong type", "conflict-exit-code = \"0\"\n", `1: conflict-exit-code: expected a whole number, not a string`},
		{"list of the wrong type", "redis = [1]\n", `1: redis: expected a list of strings such as ["a", "b"], not an integer`},
		{"out of range", "\nttl = \"100ms\"\n", `2: ttl 100ms is below the minimum of 200ms`},
		{"bad choice", "on-lost = \"kill\"\n", `1: on-lost "kill": expected term, ignore or reacquire`},
		{"a section", "ttl = \"5s\"\n[redis]\nurl = \"x\"\n", `2: [redis]: the file has no sections`},
		{"unterminated string", "\nttl = \"5s\n", `2: `},
		{"duplicate key", "ttl = \"5s\"\nttl = \"6s\"\n", `2: `},
		{"not TOML", "redis: redis://a:1/0\n", `1: `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conf := writeConf(t, tc.text)
			_, err := config.Parse([]string{"--config", conf, "job", "true"}, env())
			if !errors.Is(err, config.ErrConfig) || !strings.Contains(err.Error(), conf+":"+tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %v, want one line of bad configuration saying %q", err, conf+":"+tc.want)
			}
		})
	}
}

// The default file may be missing; a file the user named may not.
func TestConfigFileMissing(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.conf")
	config.SetDefaultFile(t, missing)
	c, err := config.Parse([]string{"job", "true"}, env())
	if err != nil || c.FileRead() || !c.RedisIsDefault() {
		t.Fatalf("missing default file: err = %v, read %v, redis default %v; want no error, no file, the default Redis", err, c != nil && c.FileRead(), c != nil && c.RedisIsDefault())
	}
	for _, tc := range []struct {
		args []string
		env  func(string) string
		want string
	}{
		{[]string{"--config", missing}, env(), "--config " + missing},
		{nil, env(config.EnvConfig, missing), config.EnvConfig + " " + missing},
	} {
		_, err := config.Parse(append(tc.args, "job", "true"), tc.env)
		if !errors.Is(err, config.ErrConfig) || !strings.Contains(err.Error(), tc.want+": no such file") {
			t.Errorf("%q %v: err = %v, want bad configuration naming %q", tc.args, tc.env(config.EnvConfig), err, tc.want)
		}
	}
	// The default file, when it exists, is read.
	config.SetDefaultFile(t, writeConf(t, "redis = \"shared:6379\"\n"))
	c, err = config.Parse([]string{"job", "true"}, env())
	if err != nil || c.RedisIsDefault() || c.RedisURLs[0] != "redis://shared:6379/0" {
		t.Fatalf("default file: err = %v, cfg %+v; want redis://shared:6379/0 from it", err, c)
	}
}

// A password in a URL in the file works, with a warning, and never shows
// in Effective.
func TestConfigFilePasswordInURLIsWarnedAndMasked(t *testing.T) {
	conf := writeConf(t, "redis = [\"redis://app:hunter2@h:1/0\"]\n")
	c, err := config.Parse([]string{"--config", conf, "--print-config"}, env())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], conf+":1: redis") || strings.Contains(c.Warnings[0], "hunter2") {
		t.Errorf("warnings %q: want one about the password in %s:1", c.Warnings, conf)
	}
	if c.RedisURLs[0] != "redis://app:hunter2@h:1/0" {
		t.Errorf("URL %q lost its password", c.RedisURLs[0])
	}
	got := fmt.Sprint(c.Effective())
	if strings.Contains(got, "hunter2") || !strings.Contains(got, "redis://app:***@h:1/0") {
		t.Errorf("Effective = %s: want the password masked as ***", got)
	}
}

// packaging/with-lock.conf is generated from the settings table, so it
// lists every setting the file can set; make docs rewrites it.
func TestExampleConfigIsGeneratedFromTheSettings(t *testing.T) {
	path := filepath.Join("..", "..", "packaging", "with-lock.conf")
	var b bytes.Buffer
	config.WriteExample(&b)
	have := checkGenerated(t, path, b.Bytes())
	for i, line := range strings.Split(strings.TrimSuffix(string(have), "\n"), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			t.Errorf("%s:%d is not a comment: %q", path, i+1, line)
		}
	}
}

// Uncommenting every setting of the example changes nothing: each shows
// its default, and every key is one the file accepts.
func TestExampleConfigUncommentedIsTheDefaults(t *testing.T) {
	var b bytes.Buffer
	config.WriteExample(&b)
	keyLine := regexp.MustCompile(`(?m)^#([a-z-]+ = )`)
	text := keyLine.ReplaceAllString(b.String(), "$1")
	n := len(keyLine.FindAllString(b.String(), -1))
	conf := writeConf(t, text)
	c, err := config.Parse([]string{"--config", conf, "job", "true"}, env())
	if err != nil {
		t.Fatal(err)
	}
	def, err := config.Parse([]string{"job", "true"}, env())
	if err != nil {
		t.Fatal(err)
	}
	if n != len(c.Effective()) {
		t.Errorf("the example sets %d keys; the file can set %d", n, len(c.Effective()))
	}
	for i, e := range c.Effective() {
		if !strings.HasPrefix(e.Source, "file ") || fmt.Sprint(e.Value) != fmt.Sprint(def.Effective()[i].Value) {
			t.Errorf("%s = %v from %s, want the default %v from the file", e.Name, e.Value, e.Source, def.Effective()[i].Value)
		}
	}
	if c.TTL != config.DefaultTTL || c.ConflictExit != config.DefaultConflictExit || c.KillAfter != config.DefaultKillAfter {
		t.Errorf("uncommented example: %+v %+v", c.Lock, c.Supervision)
	}
}

// The man page with-lock.1 is the template's hand-written parts with the
// OPTIONS and the variables of ENVIRONMENT generated from the settings
// table; make docs rewrites it.
func TestManPageIsGeneratedFromTheSettings(t *testing.T) {
	path := filepath.Join("..", "..", "packaging", "with-lock.1")
	var b bytes.Buffer
	if err := config.WriteManPage(&b); err != nil {
		t.Fatal(err)
	}
	checkGenerated(t, path, b.Bytes())
}

// checkGenerated fails the test unless the file at path holds want (with
// -update, it writes want there first), and returns what the file holds.
func checkGenerated(t *testing.T, path string, want []byte) []byte {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	have, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, want) {
		t.Fatalf("%s is out of date with the settings table: run make docs", path)
	}
	return have
}
