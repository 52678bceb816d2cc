package main_test

// --log-format json: every line of a run, every path, every error, and
// where the format is taken from.

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// logLine is one line of --log-format json, with the stable field names
// the README documents.
type logLine struct {
	Time       string `json:"time"`
	Level      string `json:"level"`
	Event      string `json:"event"`
	Lock       string `json:"lock"`
	Key        string `json:"key"`
	Msg        string `json:"msg"`
	Holder     string `json:"holder"`
	Since      string `json:"since"`
	Fence      int64  `json:"fence"`
	DurationMs *int64 `json:"duration_ms"`
	TTLMs      int64  `json:"ttl_ms"`
	Code       *int   `json:"code"`
	Signal     string `json:"signal"`
}

// jsonLines parses stderr as --log-format json: every line one object with
// a time in RFC 3339 with milliseconds, a level, an event, the lock and a
// message.
func jsonLines(t *testing.T, stderr, lock string) []logLine {
	t.Helper()
	var out []logLine
	for _, line := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		var l logLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("stderr line %q is not JSON: %v", line, err)
		}
		if _, err := time.Parse("2006-01-02T15:04:05.000Z07:00", l.Time); err != nil {
			t.Errorf("line %q: time %q is not RFC 3339 with milliseconds", line, l.Time)
		}
		if l.Level != "info" && l.Level != "warn" && l.Level != "error" || l.Event == "" || l.Msg == "" ||
			l.Lock != lock || l.Key != "lock:"+lock {
			t.Errorf("line %q lacks level, event, msg or the lock %s", line, lock)
		}
		out = append(out, l)
	}
	return out
}

func events(lines []logLine) []string {
	var e []string
	for _, l := range lines {
		e = append(e, l.Event)
	}
	return e
}

// -v --log-format json on a run that succeeds: acquired (with the time it
// took and the fence), exited (code, duration), released (time held).
func TestJSONLogOfASimpleRun(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	for _, tc := range []struct {
		name string
		env  []string
		args []string
	}{
		{"flags", nil, []string{"-v", "--log-format", "json"}},
		{"variables", []string{"WITH_LOCK_VERBOSE=1", "WITH_LOCK_LOG_FORMAT=json"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(tc.args, "--redis", srv.URL(), "--fence", "simple", "sh", "-c", "sleep 0.05; exit 3")
			r := clitest.Run(t, tc.env, args...)
			if r.Code != 3 {
				t.Fatalf("exit %d, want the command's 3; stderr %q", r.Code, r.Stderr)
			}
			lines := jsonLines(t, r.Stderr, "simple")
			if got := strings.Join(events(lines), " "); got != "acquired exited released recorded" {
				t.Fatalf("events %q, want acquired exited released recorded; stderr %s", got, r.Stderr)
			}
			acq, exited, rel := lines[0], lines[1], lines[2]
			if acq.Fence <= 0 || acq.DurationMs == nil || acq.TTLMs != 30000 || acq.Level != "info" {
				t.Errorf("acquired %+v: want a fence, duration_ms and ttl_ms 30000", acq)
			}
			if exited.Code == nil || *exited.Code != 3 || exited.DurationMs == nil || *exited.DurationMs < 50 {
				t.Errorf("exited %+v: want code 3 and duration_ms ≥ 50", exited)
			}
			if rel.DurationMs == nil || *rel.DurationMs < 50 {
				t.Errorf("released %+v: want the time held, ≥ 50ms", rel)
			}
		})
	}
}

// A wait logs who holds the lock and since when, then the acquisition.
func TestJSONLogOfAWait(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	holder := holdLock(t, srv, "waited")
	marker := filepath.Join(t.TempDir(), "ran")
	p := startWaiting(t, srv, rdb, "lock:waited", "-v", "--log-format=json", "-w", "1m", "waited", "touch", marker)
	p.WaitStderr(`"event":"waiting"`)
	if err := holder.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := p.Wait(waitFor)
	if r.Code != 0 {
		t.Fatalf("exit %d, stderr %q", r.Code, r.Stderr)
	}
	lines := jsonLines(t, r.Stderr, "waited")
	if got := strings.Join(events(lines), " "); got != "waiting acquired exited released recorded" {
		t.Fatalf("events %q, want waiting acquired exited released recorded", got)
	}
	if w := lines[0]; w.Holder != holderOf(holder.Token()) || w.Since == "" || w.TTLMs <= 0 {
		t.Errorf("waiting %+v: want the holder %s, since when and its TTL", w, holderOf(holder.Token()))
	}
}

// A takeover is one "lost" error line naming the new owner.
func TestJSONLogOfATakeover(t *testing.T) {
	t.Parallel()
	e := setup(t)
	j := e.startJob(0, "--log-format", "json", "-v", "--ttl", "1s", "taken")
	if err := e.rdb.Set(context.Background(), "lock:taken", foreign, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	r := j.Wait(clitest.RunTimeout)
	if r.Code != 125 {
		t.Fatalf("exit %d, want 125; stderr %q", r.Code, r.Stderr)
	}
	lines := jsonLines(t, r.Stderr, "taken")
	var lost *logLine
	for i := range lines {
		if lines[i].Event == "lost" {
			lost = &lines[i]
		}
	}
	if got := events(lines); got[0] != "acquired" || lost == nil || got[len(got)-2] != "exited" || got[len(got)-1] != "recorded" {
		t.Fatalf("events %q: want acquired, lost, exited, recorded", got)
	}
	if lost.Level != "error" || lost.Holder != "otherhost:4242" || !strings.Contains(lost.Msg, "taken over by otherhost:4242") {
		t.Errorf("lost %+v: want an error naming otherhost:4242", *lost)
	}
	if strings.Contains(r.Stderr, foreignSecret) || strings.Contains(r.Stderr, randomPart(j.token)) {
		t.Errorf("the log shows a token's secret part")
	}
}

// Every JSON error line carries the exit code with-lock leaves with: a
// Redis that cannot be reached (69) as a command not found (127).
func TestJSONErrorsCarryTheExitCode(t *testing.T) {
	t.Parallel()
	down := "redis://127.0.0.1:" + strconv.Itoa(redistest.FreePort(t)) + "/0"
	paused := redistest.Start(t)
	paused.Signal(syscall.SIGSTOP)
	t.Cleanup(func() { paused.Signal(syscall.SIGCONT) })
	srv := redistest.Start(t)
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"Redis down", []string{"--redis", down, "x", "true"}, 69},
		{"Redis paused", []string{"--redis", paused.URL(), "--redis-timeout", "1s", "x", "true"}, 69},
		{"command not found", []string{"--redis", srv.URL(), "x", "/nonexistent/cmd"}, 127},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := clitest.Run(t, nil, append([]string{"--log-format", "json"}, tc.args...)...)
			if r.Code != tc.code {
				t.Errorf("exit %d, want %d", r.Code, tc.code)
			}
			var errors int
			for _, line := range strings.Split(strings.TrimSuffix(r.Stderr, "\n"), "\n") {
				var l logLine
				if err := json.Unmarshal([]byte(line), &l); err != nil {
					t.Fatalf("stderr line %q is not JSON: %v", line, err)
				}
				if l.Level == "error" {
					errors++
					if l.Code == nil || *l.Code != tc.code {
						t.Errorf("error line %q: want code %d", line, tc.code)
					}
				}
			}
			if errors != 1 {
				t.Errorf("stderr %q: %d error lines, want 1", r.Stderr, errors)
			}
		})
	}
}

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
	t.Parallel()
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
					writeFile(t, conf, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
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
	t.Parallel()
	conf := filepath.Join(t.TempDir(), "with-lock.conf")
	writeFile(t, conf, []byte("# jobs\nlog-format = \"json\"\nttl = \"45s\n"), 0o644)
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
	t.Parallel()
	conf := filepath.Join(t.TempDir(), "with-lock.conf")
	writeFile(t, conf, []byte("log-format = \"json\"\n"), 0o644)
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
