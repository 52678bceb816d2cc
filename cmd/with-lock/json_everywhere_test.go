package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// jsonAsked is one way of asking for --log-format json: a flag, a
// variable, or the config file. "none" asks for nothing and gets text.
type jsonAsked struct {
	name string
	flag []string // before the path's own flags
	env  []string
	file string // a line put first in the config file
}

var jsonSources = []jsonAsked{
	{name: "none"},
	{name: "flag", flag: []string{"--log-format", "json"}},
	{name: "variable", env: []string{"WITH_LOCK_LOG_FORMAT=json"}},
	{name: "file", file: `log-format = "json"`},
}

// Every line with-lock writes on stderr is JSON once JSON is asked for by
// a flag, a variable or the config file — also on the paths that fail
// before the configuration is whole (a bad flag, a bad variable, a config
// file that does not parse past its first line) and on the admin paths
// (--list, --status, --break) — and text when it is not asked for. Every
// error line carries the exit code.
func TestJSONLogFormatOnEveryPath(t *testing.T) {
	srv := redistest.Start(t)
	down := "redis://127.0.0.1:" + strconv.Itoa(redistest.FreePort(t)) + "/0"
	for _, path := range []struct {
		name string
		args []string // after the source's flag
		env  []string
		file string // more lines of the config file
		code int
	}{
		{name: "usage: ttl below the minimum", args: []string{"--ttl", "1ms", "x", "true"}, code: 64},
		{name: "usage: missing command", args: []string{"x"}, code: 64},
		{name: "usage: unknown flag", args: []string{"--no-such-flag", "x", "true"}, code: 64},
		{name: "usage: bad variable", env: []string{"WITH_LOCK_TTL=soon"}, args: []string{"x", "true"}, code: 64},
		{name: "config: bad value", file: `ttl = "soon"`, args: []string{"x", "true"}, code: 78},
		{name: "config: does not parse", file: "ttl = [", args: []string{"x", "true"}, code: 78},
		{name: "config: unknown key", file: `no-such-key = 1`, args: []string{"x", "true"}, code: 78},
		{name: "break: not held", args: []string{"--redis", srv.URL(), "--break", "free"}, code: 1},
		{name: "list: Redis down", args: []string{"--redis", down, "--redis-timeout", "1s", "--list"}, code: 69},
		{name: "status: Redis down", args: []string{"--redis", down, "--redis-timeout", "1s", "--status", "x"}, code: 69},
		{name: "break: Redis down", args: []string{"--redis", down, "--redis-timeout", "1s", "--break", "x"}, code: 69},
		{name: "status: password warning", args: []string{"--redis", "redis://:pw@" + srv.Addr() + "/0", "--status", "free"}, code: 1},
	} {
		for _, src := range jsonSources {
			t.Run(path.name+"/"+src.name, func(t *testing.T) {
				var lines []string
				for _, l := range []string{src.file, path.file} {
					if l != "" {
						lines = append(lines, l)
					}
				}
				args := append(append([]string{}, src.flag...), path.args...)
				if len(lines) > 0 {
					conf := filepath.Join(t.TempDir(), "with-lock.conf")
					if err := os.WriteFile(conf, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
						t.Fatal(err)
					}
					args = append([]string{"--config", conf}, args...)
				}
				r := clitest.Run(t, append(append([]string{}, src.env...), path.env...), args...)
				if r.Code != path.code {
					t.Errorf("exit %d, want %d; stderr %q", r.Code, path.code, r.Stderr)
				}
				if r.Stderr == "" {
					t.Fatalf("stderr is empty")
				}
				for _, line := range strings.Split(strings.TrimSuffix(r.Stderr, "\n"), "\n") {
					if src.name == "none" {
						if !strings.HasPrefix(line, "with-lock: ") {
							t.Errorf("stderr line %q: want text, as no JSON was asked for", line)
						}
						continue
					}
					var l logLine
					if err := json.Unmarshal([]byte(line), &l); err != nil {
						t.Errorf("stderr line %q is not JSON: %v", line, err)
						continue
					}
					if l.Level == "" || l.Event == "" || l.Msg == "" || l.Time == "" {
						t.Errorf("line %q lacks time, level, event or msg", line)
					}
					if l.Level == "error" && (l.Code == nil || *l.Code != path.code) {
						t.Errorf("error line %q: want code %d", line, path.code)
					}
				}
			})
		}
	}
}

// A config file, named by WITH_LOCK_CONFIG, that sets log-format json and
// then fails to parse: the error saying where is JSON.
func TestJSONLogFormatFromABrokenFileNamedByVariable(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "with-lock.conf")
	if err := os.WriteFile(conf, []byte("# jobs\nlog-format = \"json\"\nttl = \"45s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := clitest.Run(t, []string{"WITH_LOCK_CONFIG=" + conf}, "x", "true")
	if r.Code != 78 {
		t.Errorf("exit %d, want 78", r.Code)
	}
	var l logLine
	if err := json.Unmarshal([]byte(strings.TrimSuffix(r.Stderr, "\n")), &l); err != nil || strings.Count(r.Stderr, "\n") != 1 {
		t.Fatalf("stderr %q: want one JSON line (%v)", r.Stderr, err)
	}
	if !strings.Contains(l.Msg, conf+":3") {
		t.Errorf("msg %q does not name the file's line 3", l.Msg)
	}
}

// A flag beats its variable, which beats the file, for the format of an
// early error as for everything else.
func TestEarlyLogFormatFollowsPrecedence(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "with-lock.conf")
	if err := os.WriteFile(conf, []byte("log-format = \"json\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		json bool
	}{
		{"flag text beats variable json", []string{"WITH_LOCK_LOG_FORMAT=json"}, []string{"--log-format", "text"}, false},
		{"variable text beats file json", []string{"WITH_LOCK_LOG_FORMAT=text"}, []string{"--config", conf}, false},
		{"file json", nil, []string{"--config", conf}, true},
		{"flag json beats variable text", []string{"WITH_LOCK_LOG_FORMAT=text"}, []string{"--log-format=json"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := clitest.Run(t, tc.env, append(tc.args, "x")...) // missing command: 64
			if r.Code != 64 {
				t.Errorf("exit %d, want 64", r.Code)
			}
			isJSON := json.Valid([]byte(strings.TrimSuffix(r.Stderr, "\n")))
			if isJSON != tc.json {
				t.Errorf("stderr %q: JSON %v, want %v", r.Stderr, isJSON, tc.json)
			}
		})
	}
}
