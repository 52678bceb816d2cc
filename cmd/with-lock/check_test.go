package main_test

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// --check NAME against the records of real runs in a real Redis: the
// monitoring plugin convention, 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN,
// and one line on stdout.

// settle is how long a test lets a record age before checking it against
// thresholds far below it.
const settle = 100 * time.Millisecond

func TestCheckExitCodesFollowThePluginConvention(t *testing.T) {
	t.Parallel()
	host, _ := os.Hostname()
	for _, tc := range []struct {
		name  string
		runs  func(t *testing.T, e *env) // what happened before the check
		flags []string
		code  int
		line  string // a regexp for stdout's one line
	}{
		{"a recent success is OK", func(t *testing.T, e *env) {
			e.mustRun(0, "nightly-report", "sh", "-c", "sleep 1.2")
		}, []string{"--max-age", "25h"}, 0,
			`^WITH-LOCK OK - nightly-report succeeded on ` + host + ` \d+m?s ago in \d+s$`},
		{"a success older than --warn-age is WARNING", func(t *testing.T, e *env) {
			e.mustRun(0, "nightly-report", "true")
			time.Sleep(settle)
		}, []string{"--max-age", "25h", "--warn-age", "10ms"}, 1,
			`^WITH-LOCK WARNING - no success of nightly-report for \d+m?s \(--warn-age 10ms\); last on ` + host + `$`},
		{"a success older than --max-age is CRITICAL", func(t *testing.T, e *env) {
			e.mustRun(0, "nightly-report", "true")
			time.Sleep(settle)
		}, []string{"--max-age", "10ms"}, 2,
			`^WITH-LOCK CRITICAL - no success of nightly-report for \d+m?s \(--max-age 10ms\); last on ` + host + `$`},
		{"a failed last run is CRITICAL", func(t *testing.T, e *env) {
			e.mustRun(0, "nightly-report", "true")
			e.mustRun(3, "nightly-report", "sh", "-c", "exit 3")
		}, []string{"--max-age", "25h"}, 2,
			`^WITH-LOCK CRITICAL - last run of nightly-report failed on ` + host + ` \(exit 3\) \d+m?s ago; last success on ` + host + ` \d+m?s ago$`},
		{"a run stopped by --max-run is CRITICAL", func(t *testing.T, e *env) {
			e.mustRun(124, "--max-run", "300ms", "nightly-report", "sleep", "30")
		}, []string{"--max-age", "25h"}, 2,
			`^WITH-LOCK CRITICAL - last run of nightly-report failed on ` + host + ` \(exit 124, stopped by --max-run\) \d+m?s ago$`},
		{"a run that lost the lock is CRITICAL, whatever its exit code", func(t *testing.T, e *env) {
			j := e.startJob(0, "--ttl", "1s", "--on-lost", "ignore", "nightly-report")
			if err := e.rdb.Set(context.Background(), j.key, foreign, time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			j.WaitStderr("--on-lost ignore")
			if res := j.finish(); res.Code != 0 {
				t.Fatalf("lost run: exit %d, %q", res.Code, res.Stderr)
			}
		}, nil, 2,
			`^WITH-LOCK CRITICAL - last run of nightly-report failed on ` + host + ` \(exit 0, lock lost\) `},
		{"a recent success while the name is paused is WARNING", func(t *testing.T, e *env) {
			e.mustRun(0, "nightly-report", "sh", "-c", "sleep 1.2")
			if r := e.run("--pause", "nightly-report"); r.Code != 0 {
				t.Fatalf("--pause: exit %d, stderr %q", r.Code, r.Stderr)
			}
		}, []string{"--max-age", "25h"}, 1,
			`^WITH-LOCK WARNING - nightly-report succeeded on ` + host + ` \d+m?s ago in \d+s; .*paused by ` + host + `:`},
		{"a failed last run while the name is paused is CRITICAL", func(t *testing.T, e *env) {
			e.mustRun(3, "nightly-report", "sh", "-c", "exit 3")
			if r := e.run("--pause", "nightly-report"); r.Code != 0 {
				t.Fatalf("--pause: exit %d, stderr %q", r.Code, r.Stderr)
			}
		}, []string{"--max-age", "25h"}, 2,
			`^WITH-LOCK CRITICAL - last run of nightly-report failed on ` + host + ` \(exit 3\) .*paused by ` + host + `:`},
		{"no run recorded is CRITICAL", func(t *testing.T, e *env) {}, []string{"--max-age", "25h"}, 2,
			`^WITH-LOCK CRITICAL - no run of nightly-report recorded`},
		{"a run going on within --running-ok is OK", func(t *testing.T, e *env) {
			j := e.startJob(0, "nightly-report")
			t.Cleanup(func() { j.finish() })
		}, []string{"--max-age", "25h", "--running-ok", "1h"}, 0,
			`^WITH-LOCK OK - nightly-report running on ` + host + ` for \d+m?s \(--running-ok 1h\)$`},
		{"a run going on past --running-ok is judged by the records", func(t *testing.T, e *env) {
			j := e.startJob(0, "nightly-report")
			t.Cleanup(func() { j.finish() })
			time.Sleep(settle)
		}, []string{"--max-age", "25h", "--running-ok", "10ms"}, 2,
			`^WITH-LOCK CRITICAL - no run of nightly-report recorded`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := setup(t)
			tc.runs(t, e)
			res := e.run(append([]string{"--check", "nightly-report"}, tc.flags...)...)
			checkLine(t, res, tc.code, tc.line)

			// --json: the same verdict, as an object.
			res = e.run(append([]string{"--check", "nightly-report", "--json"}, tc.flags...)...)
			var got struct {
				Status, Message string
				Code            int
			}
			if err := json.Unmarshal([]byte(res.Stdout), &got); err != nil || strings.Count(res.Stdout, "\n") != 1 {
				t.Fatalf("--json: stdout %q (%v): want one JSON object on one line", res.Stdout, err)
			}
			want := [...]string{"OK", "WARNING", "CRITICAL", "UNKNOWN"}[tc.code]
			if res.Code != tc.code || got.Code != tc.code || got.Status != want ||
				!regexp.MustCompile(strings.TrimPrefix(tc.line, `^WITH-LOCK `+want+` - `)).MatchString("^"+got.Message) {
				t.Errorf("--json: exit %d, %+v; want %d, %s and the text line's message", res.Code, got, tc.code, want)
			}
		})
	}
}

// Nothing known of the job when Redis cannot be asked: UNKNOWN, in the
// words of a run's messages.
func TestCheckUnknownWhenRedisUnreachable(t *testing.T) {
	t.Parallel()
	port := strconv.Itoa(redistest.FreePort(t))
	res := clitest.Run(t, nil, "--redis", "redis://127.0.0.1:"+port, "--check", "nightly-report", "--max-age", "25h")
	checkLine(t, res, 3, `^WITH-LOCK UNKNOWN - Redis unreachable: .*nothing listens at 127\.0\.0\.1:`+port+` \(connection refused\)$`)
}

// checkLine checks --check's exit code and its one line on stdout.
func checkLine(t *testing.T, res clitest.Result, code int, line string) {
	t.Helper()
	if res.Code != code || strings.Count(res.Stdout, "\n") != 1 || !regexp.MustCompile(line).MatchString(strings.TrimSuffix(res.Stdout, "\n")) {
		t.Errorf("exit %d, stdout %q, stderr %q: want %d and one line matching %s", res.Code, res.Stdout, res.Stderr, code, line)
	}
}

// mustRun runs with-lock with args (flags, name and command), which must
// exit with code.
func (e *env) mustRun(code int, args ...string) {
	e.t.Helper()
	if res := e.run(args...); res.Code != code {
		e.t.Fatalf("with-lock %q: exit %d, want %d; stderr %q", args, res.Code, code, res.Stderr)
	}
}
