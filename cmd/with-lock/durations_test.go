package main_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
)

// How long a name's successes take, judged against its history: --check's
// --min-duration, --max-duration and --duration-outlier, --status's usual
// duration, and the metrics' gauges of the same, from real runs.

// usualRun is a success of the duration the tests' histories are made of:
// long enough that a run of `true` is far under a third of it on a loaded
// machine, short enough that a test makes several.
var usualRun = []string{"sleep", "0.3"}

// rangeRE matches a durationRange in words: "301ms–312ms, median 305ms", or
// one duration.
const rangeRE = `[\d.]+m?s(–[\d.]+m?s, median [\d.]+m?s)?`

func TestCheckJudgesTheLastSuccessDurationAgainstTheSuccessesBeforeIt(t *testing.T) {
	t.Parallel()
	e := setup(t)
	host, _ := os.Hostname()
	for i, tc := range []struct {
		name    string
		before  int      // successes of usualRun first
		fails   int      // then this many quick failures
		last    []string // the success judged
		flags   []string
		code    int
		message string // a regexp for the message, after "<name> succeeded on <host> <age> ago in <duration>"
		prior   int    // prior_successes.successes in --json
	}{
		{"a success far shorter than the ones before it is WARNING", 5, 0, []string{"true"}, []string{"--duration-outlier"}, 1,
			`; under a third of its usual time \(--duration-outlier\): the 5 successes before it took ` + rangeRE, 5},
		{"a success far longer than the ones before it is WARNING", 5, 0, []string{"sleep", "1.5"}, []string{"--duration-outlier"}, 1,
			`; over 3 times its usual time \(--duration-outlier\): the 5 successes before it took ` + rangeRE, 5},
		{"a success like the ones before it is OK", 5, 0, usualRun, []string{"--duration-outlier"}, 0,
			`; the 5 successes before it took ` + rangeRE, 5},
		{"failures are not among the successes it is judged against", 5, 3, []string{"true"}, []string{"--duration-outlier"}, 1,
			`; under a third of its usual time \(--duration-outlier\): the 5 successes before it took ` + rangeRE, 5},
		{"too few successes before it is OK, and says so", 2, 0, []string{"true"}, []string{"--duration-outlier"}, 0,
			`; the 2 successes before it took ` + rangeRE + `; too few successes recorded before it to judge its duration \(2; --duration-outlier needs 5\)`, 2},
		{"no success before it is OK, and says so", 0, 0, []string{"true"}, []string{"--duration-outlier"}, 0,
			`; too few successes recorded before it to judge its duration \(0; --duration-outlier needs 5\)`, 0},
		{"a success under --min-duration is CRITICAL, with any history", 1, 0, []string{"true"}, []string{"--min-duration", "100ms"}, 2,
			`; under --min-duration 100ms: the 1 success before it took ` + rangeRE, 1},
		{"a success over --max-duration is CRITICAL, with any history", 0, 0, usualRun, []string{"--max-duration", "100ms"}, 2,
			`; over --max-duration 100ms`, 0},
		{"--max-duration beats --duration-outlier", 5, 0, []string{"sleep", "1.5"}, []string{"--duration-outlier", "--max-duration", "1s"}, 2,
			`; over --max-duration 1s: the 5 successes before it took ` + rangeRE, 5},
		{"a success too old and too short says both", 0, 0, []string{"true"}, []string{"--warn-age", "10ms", "--min-duration", "100ms"}, 2,
			`; it took [\d.]+ms, under --min-duration 100ms`, 0},
		{"a success within the thresholds is OK", 0, 0, usualRun, []string{"--min-duration", "100ms", "--max-duration", "1h"}, 0,
			``, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := &env{t: t, srv: e.srv, rdb: e.rdb, dir: e.dir} // the server, shared; failures this subtest's
			name := "job-" + strconv.Itoa(i)
			for range tc.before {
				e.mustRun(0, append([]string{name}, usualRun...)...)
			}
			for range tc.fails {
				e.mustRun(3, name, "sh", "-c", "exit 3")
			}
			e.mustRun(0, append([]string{name}, tc.last...)...)
			state := [...]string{"OK", "WARNING", "CRITICAL"}[tc.code]
			message := name + ` succeeded on ` + host + ` \d+m?s ago in [\d.]+m?s` + tc.message
			if slices.Contains(tc.flags, "--warn-age") { // the message begins "no success of <name> for <age>"
				time.Sleep(settle)
				message = `no success of ` + name + ` for \d+m?s \(--warn-age 10ms\); last on ` + host + tc.message
			}
			res := e.run(append([]string{"--check", name}, tc.flags...)...)
			checkLine(t, res, tc.code, `^WITH-LOCK `+state+` - `+message+`$`)

			res = e.run(append([]string{"--check", name, "--json"}, tc.flags...)...)
			var got struct {
				Status, Message string
				Code            int
				Prior           *durationsSeen `json:"prior_successes"`
			}
			if err := json.Unmarshal([]byte(res.Stdout), &got); err != nil {
				t.Fatalf("--json: %v: %q", err, res.Stdout)
			}
			if got.Code != tc.code || got.Status != state || !regexp.MustCompile(`^`+message+`$`).MatchString(got.Message) {
				t.Errorf("--json: %+v, want %s and the text line's message", got, state)
			}
			switch p := got.Prior; {
			case tc.prior == 0 && p != nil:
				t.Errorf("--json: prior_successes %+v with no success before the last", *p)
			case tc.prior > 0 && (p == nil || p.Successes != tc.prior || p.MinMs < 300 || p.MinMs > p.MedianMs || p.MedianMs > p.MaxMs):
				t.Errorf("--json: prior_successes %+v, want %d successes of %s, shortest to longest", p, tc.prior, usualRun)
			}
		})
	}
}

// --check judges no duration when the last run failed: that is CRITICAL
// already, and its duration says nothing of a success.
func TestCheckJudgesNoDurationAfterAFailedRun(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for range 5 {
		e.mustRun(0, append([]string{"job"}, usualRun...)...)
	}
	e.mustRun(3, "job", "sh", "-c", "exit 3")
	res := e.run("--check", "job", "--duration-outlier", "--min-duration", "1s")
	checkLine(t, res, 2, `^WITH-LOCK CRITICAL - last run of job failed on .* \(exit 3\) \d+m?s ago; last success on .* \d+m?s ago$`)
}

// --status shows how long the successes its history keeps took, failures
// left out; a name with no success kept shows none.
func TestStatusShowsTheUsualDurationOfTheSuccessesKept(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for range 3 {
		e.mustRun(0, append([]string{"job"}, usualRun...)...)
	}
	e.mustRun(3, "job", "sh", "-c", "exit 3")
	e.mustRun(3, "failing", "sh", "-c", "exit 3")

	res := e.run("--status", "job")
	if res.Code != 1 || !regexp.MustCompile(`(?m)^usual duration: `+rangeRE+`, of the last 3 successes kept$`).MatchString(res.Stdout) {
		t.Errorf("--status: exit %d, stdout %q, stderr %q; want 1 and the usual duration of 3 successes", res.Code, res.Stdout, res.Stderr)
	}
	res = e.run("--status", "--json", "job")
	var got struct {
		Durations *durationsSeen `json:"success_durations"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &got); err != nil {
		t.Fatalf("--status --json: %v: %q", err, res.Stdout)
	}
	if d := got.Durations; d == nil || d.Successes != 3 || d.MinMs < 300 || d.MinMs > d.MedianMs || d.MedianMs > d.MaxMs {
		t.Errorf("--status --json: success_durations %+v, want 3 successes of %s, shortest to longest", d, usualRun)
	}

	for _, name := range []string{"failing", "never-run"} {
		res := e.run("--status", name)
		if strings.Contains(res.Stdout, "usual duration") || res.Stderr != "" {
			t.Errorf("--status %s: stdout %q, stderr %q; want no usual duration, and no warning", name, res.Stdout, res.Stderr)
		}
		if res := e.run("--status", "--json", name); strings.Contains(res.Stdout, "success_durations") {
			t.Errorf("--status --json %s: %q; want no success_durations", name, res.Stdout)
		}
	}
}

// The metrics file carries this host's last success's duration and the
// range of the successes the history kept before it, parsed as Prometheus
// does and passed by promtool: none before the first success, NaN for a
// range of none, the same after a failure, and new with the next success.
func TestMetricsCarryTheLastSuccessDurationAndTheSuccessesBeforeIt(t *testing.T) {
	t.Parallel()
	e := setup(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "with-lock-job.prom")
	durations := []string{"with_lock_last_success_duration_seconds", "with_lock_prior_successes",
		"with_lock_prior_success_duration_min_seconds", "with_lock_prior_success_duration_median_seconds",
		"with_lock_prior_success_duration_max_seconds"}
	gauges := func() map[string]float64 {
		t.Helper()
		m, got := readMetrics(t, path, "job"), map[string]float64{}
		for _, name := range durations {
			if _, ok := m[name]; ok {
				got[name] = m.value(t, name, "")
			}
		}
		return got
	}

	e.mustRun(3, "--metrics-dir", dir, "job", "sh", "-c", "exit 3")
	if got := gauges(); len(got) != 0 {
		t.Errorf("before any success: %v, want none of the duration gauges", got)
	}
	e.mustRun(0, append([]string{"--metrics-dir", dir, "job"}, usualRun...)...)
	got := gauges()
	if got[durations[0]] < 0.3 || got[durations[1]] != 0 || !math.IsNaN(got[durations[2]]) ||
		!math.IsNaN(got[durations[3]]) || !math.IsNaN(got[durations[4]]) {
		t.Errorf("after a first success: %v, want its duration, 0 successes before it and NaN for their range", got)
	}
	for range 2 {
		e.mustRun(0, append([]string{"--metrics-dir", dir, "job"}, usualRun...)...)
	}
	e.mustRun(0, "--metrics-dir", dir, "job", "true")
	got = gauges()
	if took, lo, mid, hi := got[durations[0]], got[durations[2]], got[durations[3]], got[durations[4]]; got[durations[1]] != 3 ||
		took*3 >= mid || lo < 0.3 || lo > mid || mid > hi {
		t.Errorf("after 3 successes of %s and one of true: %v, want true's duration, 3 before it, and their range", usualRun, got)
	}
	e.mustRun(3, "--metrics-dir", dir, "job", "sh", "-c", "exit 3")
	if after := gauges(); !equalGauges(after, got) {
		t.Errorf("a failure changed the gauges of the last success: %v, were %v", after, got)
	}
}

// --metrics-push pushes the same gauges with a success, and a failure
// after it leaves them in place.
func TestMetricsPushCarriesTheLastSuccessDuration(t *testing.T) {
	t.Parallel()
	e := setup(t)
	url := pushgateway(t)
	for range 2 {
		e.mustRun(0, append([]string{"--metrics-push", url, "job"}, usualRun...)...)
	}
	e.mustRun(0, "--metrics-push", url, "job", "true")
	took := pushed(t, url, "with_lock_last_success_duration_seconds", "job").GetGauge().GetValue()
	median := pushed(t, url, "with_lock_prior_success_duration_median_seconds", "job").GetGauge().GetValue()
	if n := pushed(t, url, "with_lock_prior_successes", "job").GetGauge().GetValue(); n != 2 || took*3 >= median || median < 0.3 {
		t.Errorf("pushed: last success %vs, %v successes before it, median %vs; want true's, 2 and %s's", took, n, median, usualRun)
	}
	e.mustRun(3, "--metrics-push", url, "job", "sh", "-c", "exit 3")
	if after := pushed(t, url, "with_lock_last_success_duration_seconds", "job").GetGauge().GetValue(); after != took {
		t.Errorf("a failure changed the last success's duration pushed: %v, was %v", after, took)
	}
}

// durationsSeen is --status's success_durations and --check's
// prior_successes in --json.
type durationsSeen struct {
	Successes int `json:"successes"`
	MinMs     int `json:"min_ms"`
	MedianMs  int `json:"median_ms"`
	MaxMs     int `json:"max_ms"`
}

// equalGauges is a == b, NaN equal to NaN.
func equalGauges(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || (v != w && !(math.IsNaN(v) && math.IsNaN(w))) {
			return false
		}
	}
	return true
}

// The monitoring guide's duration alert fires, as --check --duration-outlier
// judges, for the last success of a name (whichever host ran it) that took
// under a third or over 3 times the median of the 5 or more before it: not
// for an odd success older than another host's, nor one with too few before it.
func TestReadmeDurationAlertFiresOnTheLastSuccessOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "durations.rules.yml"), []byte(readmeBlock(t, "WithLockSuccessDurationOutlier")), 0o644)
	// Per lock and host: the last success's end and duration, how many
	// successes before it, their median.
	var series strings.Builder
	for _, s := range []struct {
		lock, host           string
		end, took, n, median float64
	}{
		{"nightly-report", "db1", 2000, 0.05, 9, 40}, // the last success, far too short
		{"nightly-report", "db2", 1000, 41, 9, 40},
		{"backup", "db1", 1000, 500, 9, 40}, // the last success, far too long
		{"sync", "db1", 1000, 0.05, 9, 40},  // odd, but db2's success came after
		{"sync", "db2", 2000, 39, 9, 40},
		{"young", "db1", 1000, 0.05, 4, 40}, // too few before it
		{"steady", "db1", 1000, 38, 9, 40},
	} {
		for name, v := range map[string]float64{"with_lock_last_success_timestamp_seconds": s.end,
			"with_lock_last_success_duration_seconds": s.took, "with_lock_prior_successes": s.n,
			"with_lock_prior_success_duration_median_seconds": s.median} {
			series.WriteString("      - series: '" + name + `{lock="` + s.lock + `",host="` + s.host + `"}'` + "\n")
			series.WriteString("        values: '" + strconv.FormatFloat(v, 'f', -1, 64) + "x20'\n")
		}
	}
	tests := `rule_files: [durations.rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
` + series.String() + `    alert_rule_test:
      - eval_time: 10m
        alertname: WithLockSuccessDurationOutlier
        exp_alerts:
          - exp_labels: {lock: nightly-report, host: db1}
            exp_annotations:
              summary: "the last success of nightly-report, on db1, took 50ms: far from the median of the successes before it"
          - exp_labels: {lock: backup, host: db1}
            exp_annotations:
              summary: "the last success of backup, on db1, took 8m 20s: far from the median of the successes before it"
`
	writeFile(t, filepath.Join(dir, "tests.yml"), []byte(tests), 0o644)
	cmd := exec.Command(promtool(t), "test", "rules", "tests.yml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool test rules: %v\n%s", err, out)
	}
}

// A history that cannot be read (an ACL user without LRANGE) costs each
// reader of it what it adds, said in one line, and nothing else: a run's
// metrics are written without the successes before it, --status shows no
// usual duration, and --check, asked to judge a duration, is UNKNOWN.
func TestAHistoryThatCannotBeReadIsSaidOnce(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rules := strings.Replace(LeastPrivilegeACL, " +lrange", "", 1)
	if rules == LeastPrivilegeACL {
		t.Fatal("the least-privilege ACL has no +lrange")
	}
	args := []any{"ACL", "SETUSER", "nolrange", "reset", "on", ">pw"}
	for _, r := range strings.Fields(rules) {
		args = append(args, r)
	}
	if err := e.rdb.Do(context.Background(), args...).Err(); err != nil {
		t.Fatal(err)
	}
	env := []string{"WITH_LOCK_REDIS=redis://nolrange@" + e.srv.Addr() + "/0", "WITH_LOCK_PASSWORD=pw"}
	dir := t.TempDir()

	res := clitest.Run(t, env, "--metrics-dir", dir, "job", "true")
	if res.Code != 0 || strings.Count(res.Stderr, "\n") != 1 ||
		!hasLine(res.Stderr, "the metrics of job say nothing of the successes before this one", "NOPERM") {
		t.Errorf("run: exit %d, stderr %q; want 0 and one warning", res.Code, res.Stderr)
	}
	m := readMetrics(t, filepath.Join(dir, "with-lock-job.prom"), "job")
	if n := m.value(t, "with_lock_prior_successes", ""); n != 0 || m.value(t, "with_lock_last_success_duration_seconds", "") <= 0 {
		t.Errorf("metrics: %v successes before, want 0 and the run's own duration", n)
	}

	res = clitest.Run(t, env, "--status", "job")
	if res.Code != 1 || !strings.HasPrefix(res.Stdout, "lock:job is free\nlast run: ") || strings.Contains(res.Stdout, "usual duration") ||
		strings.Count(res.Stderr, "\n") != 1 || !hasLine(res.Stderr, "the usual duration is not shown", "NOPERM") {
		t.Errorf("--status: exit %d, stdout %q, stderr %q; want 1, the status without the usual duration, one warning", res.Code, res.Stdout, res.Stderr)
	}

	checkLine(t, clitest.Run(t, env, "--check", "job", "--duration-outlier"), 3, `^WITH-LOCK UNKNOWN - cannot read the records: .*NOPERM`)
	checkLine(t, clitest.Run(t, env, "--check", "job"), 0, `^WITH-LOCK OK - job succeeded on `)
}
