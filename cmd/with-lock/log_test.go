package main_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
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

// -v in text: the same events, each one line "with-lock: <time> ...";
// without -v the same run says nothing.
func TestVerboseTextLog(t *testing.T) {
	srv := redistest.Start(t)
	r := clitest.Run(t, nil, "-v", "--redis", srv.URL(), "text", "sh", "-c", "kill -TERM $$")
	if r.Code != 143 {
		t.Fatalf("exit %d, want 143; stderr %q", r.Code, r.Stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.Stderr, "\n"), "\n")
	stamp := regexp.MustCompile(`^with-lock: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:\d\d) `)
	want := []string{"acquired lock:text in ", "command killed by SIGTERM after ", "released lock:text after ", "recorded the run of lock:text"}
	if len(lines) != len(want) {
		t.Fatalf("stderr %q: want %d lines", r.Stderr, len(want))
	}
	for i, line := range lines {
		if !stamp.MatchString(line) || !strings.Contains(line, want[i]) {
			t.Errorf("line %d %q: want a timestamp and %q", i, line, want[i])
		}
	}
	if r := clitest.Run(t, nil, "--redis", srv.URL(), "text", "true"); r.Code != 0 || r.Stderr != "" {
		t.Errorf("without -v: exit %d, stderr %q; want 0 and silence", r.Code, r.Stderr)
	}
}

// A wait logs who holds the lock and since when, then the acquisition.
func TestJSONLogOfAWait(t *testing.T) {
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

// A renewal held up by Redis for more than half the renewal interval is
// reported with -v, and only then.
func TestVerboseReportsSlowRenewal(t *testing.T) {
	e := setup(t)
	const ttl = 1200 * time.Millisecond // renewal every 400ms; slow is over 200ms
	p := clitest.Start(t, nil, "-v", "--redis", e.srv.URL(), "--ttl", ttl.String(), "slow", "sleep", "30")
	p.WaitStderr("acquired lock:slow")
	ctx := context.Background()
	// A renewal sent in the first 150ms of a 350ms pause is slow. The gap
	// between pauses is random so that they cannot keep in step with the
	// renewals and always miss them.
	clitest.Eventually(t, 30*time.Second, "no slow renewal reported", func() bool {
		if strings.Contains(p.Stderr(), "renewed lock:slow slowly") {
			return true
		}
		_ = e.rdb.Do(ctx, "CLIENT", "PAUSE", 350, "ALL").Err()
		time.Sleep(350*time.Millisecond + rand.N(300*time.Millisecond))
		return false
	})
	if !hasLine(p.Stderr(), "renewed lock:slow slowly: took ", "(slow: more than 200ms, half the renewal interval)") {
		t.Errorf("stderr %q: want the slow renewal with what slow means", p.Stderr())
	}
}

// -q silences every warning that is not an error: the password in the URL,
// the busy message; an error still shows.
func TestQuietSilencesWarningsNotErrors(t *testing.T) {
	e := setup(t, "requirepass", "pw-in-url-123")
	url := "redis://:pw-in-url-123@" + e.srv.Addr() + "/0"
	if r := clitest.Run(t, nil, "--redis", url, "x", "true"); r.Code != 0 || !strings.Contains(r.Stderr, "visible to other users") {
		t.Fatalf("without -q: exit %d, stderr %q; want the password warning", r.Code, r.Stderr)
	}
	if r := clitest.Run(t, nil, "-q", "--redis", url, "x", "true"); r.Code != 0 || r.Stderr != "" {
		t.Errorf("-q: exit %d, stderr %q; want silence", r.Code, r.Stderr)
	}
	r := clitest.Run(t, nil, "-q", "--redis", "redis://"+e.srv.Addr()+"/0", "x", "true")
	if r.Code != 77 {
		t.Errorf("-q without the password: exit %d, want 77", r.Code)
	}
	oneLine(t, r, "NOAUTH")
}

// With -v, a host that names no Redis is told that it locks only against
// itself; without -v the run stays as terse as before. The command does
// not exist, so nothing connects to the default address.
func TestVerboseWarnsThatTheDefaultRedisIsLocalOnly(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "empty.conf")
	if err := os.WriteFile(conf, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"WITH_LOCK_CONFIG=" + conf}
	for _, tt := range []struct {
		args  []string
		lines int
	}{
		{[]string{"-v", "job", "/nonexistent/command"}, 2},
		{[]string{"job", "/nonexistent/command"}, 1},
	} {
		r := clitest.Run(t, env, tt.args...)
		lines := strings.Split(strings.TrimSuffix(r.Stderr, "\n"), "\n")
		if r.Code != 127 || len(lines) != tt.lines {
			t.Fatalf("%q: exit %d, stderr %q; want 127 and %d lines", tt.args, r.Code, r.Stderr, tt.lines)
		}
		if warned := strings.Contains(r.Stderr, "locks only against itself"); warned != (tt.lines == 2) {
			t.Errorf("%q: stderr %q: the local-only note shown = %v", tt.args, r.Stderr, warned)
		}
	}
}
