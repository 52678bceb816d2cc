package main_test

// The text log: -v, -q, and docs/logs.md's table and examples checked
// against real output.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// -v in text: the same events, each one line "with-lock: <time> ...";
// without -v the same run says nothing.
func TestVerboseTextLog(t *testing.T) {
	t.Parallel()
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

// A renewal held up by Redis for more than half the renewal interval is
// reported with -v, and only then.
//
// Not parallel: it holds a bound in time, kept clear of the parallel
// tests' load.
func TestVerboseReportsSlowRenewal(t *testing.T) {
	e := setup(t)
	// A renewal every 800ms; slow is over 400ms. The lock's local deadline
	// (the TTL less 340ms) is far enough off for a pause not to lose it on
	// a loaded machine.
	const ttl = 2400 * time.Millisecond
	p := clitest.Start(t, nil, "-v", "--redis", e.srv.URL(), "--ttl", ttl.String(), "slow", "sleep", "30")
	p.WaitStderr("acquired lock:slow")
	ctx := context.Background()
	// A renewal sent in the first 300ms of a 700ms pause is slow. The gap
	// between pauses is random so that they cannot keep in step with the
	// renewals and always miss them.
	clitest.Eventually(t, 30*time.Second, "no slow renewal reported", func() bool {
		if strings.Contains(p.Stderr(), "renewed lock:slow slowly") {
			return true
		}
		_ = e.rdb.Do(ctx, "CLIENT", "PAUSE", 700, "ALL").Err()
		time.Sleep(700*time.Millisecond + rand.N(300*time.Millisecond))
		return false
	})
	if !hasLine(p.Stderr(), "renewed lock:slow slowly: took ", "(slow: more than 400ms, half the renewal interval)") {
		t.Errorf("stderr %q: want the slow renewal with what slow means", p.Stderr())
	}
}

// -q silences every warning that is not an error: the password in the URL,
// the busy message; an error still shows.
func TestQuietSilencesWarningsNotErrors(t *testing.T) {
	t.Parallel()
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
// itself; without -v the run does not say it. The command does
// not exist, so nothing connects to the default address.
func TestVerboseWarnsThatTheDefaultRedisIsLocalOnly(t *testing.T) {
	t.Parallel()
	conf := filepath.Join(t.TempDir(), "empty.conf")
	writeFile(t, conf, nil, 0o644)
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

// docs/logs.md shows real lines: each test of a situation in its table
// checks its line against the table's (matchesDoc), and
// TestLogsDocExamplesAreRealOutput runs its example commands verbatim.
// What varies from run to run is compared by kind, not value (docPattern).

// logsDoc is docs/logs.md.
func logsDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../docs/logs.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// varying are the parts of a line that differ between runs, each with the
// pattern that matches any value of its kind, in the order they are
// tried: times, clocks, ages, a job's cgroup, addresses, durations,
// numbers.
var varying = []struct{ example, pattern string }{
	{`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(?:Z|[+-]\d\d:\d\d)`, `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(?:Z|[+-]\d\d:\d\d)`},
	{`\((?:just now|\d+[a-z]+ ago)\)`, `\((?:just now|\d+[a-z]+ ago)\)`},
	{`\d\d:\d\d:\d\d`, `\d\d:\d\d:\d\d`},
	{`cgroup /sys/fs/cgroup/[^\s)"]*(?:with-lock\.\d+\.[0-9a-f]{16}|with-lock-[^\s)"]*\.scope)`, `(?:cgroup /sys/fs/cgroup/[^\s)"]*(?:with-lock\.\d+\.[0-9a-f]{16}|with-lock-[^\s)"]*\.scope)|subreaper(?:: [^)"]*)?)`},
	{`\d+\.\d+\.\d+\.\d+:\d+`, `\d+\.\d+\.\d+\.\d+:\d+`},
	{`(?:\d+(?:\.\d+)?(?:ns|µs|ms|s|m|h))+\b`, `(?:\d+(?:\.\d+)?(?:ns|µs|ms|s|m|h))+`},
	{`\d+(?:\.\d+)?`, `\d+(?:\.\d+)?`},
}

// docPattern turns an example line of the docs into a pattern that the
// real line matches whatever the time, durations, numbers and addresses.
func docPattern(example string) *regexp.Regexp {
	var alts []string
	for _, v := range varying {
		alts = append(alts, "("+v.example+")")
	}
	kinds := regexp.MustCompile(strings.Join(alts, "|"))
	var b strings.Builder
	b.WriteString("^")
	last := 0
	for _, m := range kinds.FindAllStringSubmatchIndex(example, -1) {
		b.WriteString(regexp.QuoteMeta(example[last:m[0]]))
		for i := range varying {
			if m[2+2*i] >= 0 {
				b.WriteString(varying[i].pattern)
				break
			}
		}
		last = m[1]
	}
	b.WriteString(regexp.QuoteMeta(example[last:]) + "$")
	return regexp.MustCompile(b.String())
}

// matchesDoc checks that r is what docs/logs.md's table shows for
// situation: its exit code, and its one line on stderr, with each example
// value of the doc (old) replaced by the test's (new) first.
func matchesDoc(t *testing.T, r clitest.Result, situation string, oldNew ...string) {
	t.Helper()
	row := regexp.MustCompile("(?m)^\\| " + regexp.QuoteMeta(situation) + " \\| `(.+)` \\((\\d+)[,)]").FindStringSubmatch(logsDoc(t))
	if row == nil {
		t.Fatalf("docs/logs.md's table has no row for %q", situation)
	}
	line := "with-lock: " + strings.NewReplacer(oldNew...).Replace(row[1])
	if got := strings.TrimSuffix(r.Stderr, "\n"); !docPattern(line).MatchString(got) {
		t.Errorf("docs/logs.md shows for %s:\n\t%s\nthe real line is\n\t%s", situation, line, got)
	}
	if code, _ := strconv.Atoi(row[2]); r.Code != code {
		t.Errorf("docs/logs.md gives %s exit %d; it is %d", situation, code, r.Code)
	}
}

// logsRow names the situation of a row of docs/logs.md's table, for a
// test table that hands it to matchesDoc later.
func logsRow(situation string) string { return situation }

// Every situation in docs/logs.md's table is checked by a test through
// matchesDoc, named in the call or by logsRow.
func TestLogsDocTableIsCheckedRowByRow(t *testing.T) {
	t.Parallel()
	rows := regexp.MustCompile("(?m)^\\| (.+?) \\| `").FindAllStringSubmatch(logsDoc(t), -1)
	if len(rows) < 10 {
		t.Fatalf("docs/logs.md's table has %d rows; the pattern must have stopped finding them", len(rows))
	}
	var src strings.Builder
	tests, _ := filepath.Glob("*_test.go")
	for _, f := range tests {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src.Write(b)
	}
	for _, row := range rows {
		named := false
		for _, quoted := range []string{strconv.Quote(row[1]), "`" + row[1] + "`"} {
			named = named || strings.Contains(src.String(), "matchesDoc(t, r, "+quoted) || strings.Contains(src.String(), "logsRow("+quoted+")")
		}
		if !named {
			t.Errorf("no test checks docs/logs.md's row %q with matchesDoc", row[1])
		}
	}
}

// Each example in docs/logs.md, a "$ with-lock ..." line and what it
// prints, is run verbatim on a test's Redis (named by WITH_LOCK_REDIS) and
// prints those lines: the same events and fields, the same words. The
// example that waits finds web2:4711 holding the lock, as the doc says.
func TestLogsDocExamplesAreRealOutput(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	examples := regexp.MustCompile("(?s)```\n\\$ (with-lock [^\n]*)\n(.*?)```").FindAllStringSubmatch(logsDoc(t), -1)
	if len(examples) < 3 {
		t.Fatalf("docs/logs.md has %d examples; the pattern must have stopped finding them", len(examples))
	}
	for _, ex := range examples {
		t.Run(ex[1], func(t *testing.T) {
			args := shellWords(t, strings.TrimPrefix(ex[1], "with-lock "))
			if slices.Contains(args, "-w") {
				since := strconv.FormatInt(time.Now().Add(-2*time.Minute).UnixMilli(), 36)
				if err := rdb.Set(context.Background(), "lock:nightly", "web2:4711:"+since+"."+foreignSecret, time.Minute).Err(); err != nil {
					t.Fatal(err)
				}
				defer rdb.Del(context.Background(), "lock:nightly")
			}
			r := clitest.Run(t, redisEnv(srv), args...)
			want := strings.Split(strings.TrimSuffix(ex[2], "\n"), "\n")
			got := strings.Split(strings.TrimSuffix(r.Stderr, "\n"), "\n")
			if len(got) != len(want) {
				t.Fatalf("%d lines, the doc shows %d:\n%s", len(got), len(want), r.Stderr)
			}
			for i := range want {
				if strings.HasPrefix(want[i], "{") {
					sameJSONLine(t, want[i], got[i])
				} else if !docPattern(want[i]).MatchString(got[i]) {
					t.Errorf("the doc shows\n\t%s\nthe real line is\n\t%s", want[i], got[i])
				}
			}
		})
	}
}

// sameJSONLine checks that got has the fields of want, no others, and
// that each string field reads as want's (docPattern).
func sameJSONLine(t *testing.T, want, got string) {
	t.Helper()
	var w, g map[string]any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("the doc's line %s: %v", want, err)
	}
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("the real line %s: %v", got, err)
	}
	for k, v := range w {
		s, isString := v.(string)
		switch gv, ok := g[k]; {
		case !ok:
			t.Errorf("the real line lacks %q, which the doc shows: %s", k, got)
		case isString && !docPattern(s).MatchString(fmt.Sprint(gv)):
			t.Errorf("%q: the doc shows %q, the real line has %q", k, s, gv)
		}
	}
	for k := range g {
		if _, ok := w[k]; !ok {
			t.Errorf("the real line has %q, which the doc does not show: %s", k, got)
		}
	}
}

// shellWords splits a command line as sh does words and single quotes,
// all that the docs' examples use.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var word strings.Builder
	inWord, quoted := false, false
	for _, c := range line {
		switch {
		case quoted && c == '\'':
			quoted = false
		case quoted:
			word.WriteRune(c)
		case c == '\'':
			quoted, inWord = true, true
		case c == ' ':
			if inWord {
				words = append(words, word.String())
				word.Reset()
			}
			inWord = false
		default:
			word.WriteRune(c)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unbalanced quote in %q", line)
	}
	if inWord {
		words = append(words, word.String())
	}
	return words
}
