package main_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// --metrics-dir: the file node_exporter's textfile collector reads. Every
// file a test reads is parsed with the Prometheus text parser and checked
// with promtool, as the collector and CI would.

// Every way a run ends writes the file, with its outcome, exit code and
// times; only a run that held the lock has a duration.
func TestMetricsFileRecordsEveryOutcome(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	for _, tc := range []struct {
		outcome string
		code    int
		held    bool // the run held the lock
		run     func(t *testing.T, name, dir string) clitest.Result
	}{
		{"ok", 0, true, func(t *testing.T, name, dir string) clitest.Result {
			return e.run("--metrics-dir", dir, name, "true")
		}},
		{"failed", 3, true, func(t *testing.T, name, dir string) clitest.Result {
			return e.run("--metrics-dir", dir, name, "sh", "-c", "exit 3")
		}},
		{"timed-out", 124, true, func(t *testing.T, name, dir string) clitest.Result {
			return e.run("--metrics-dir", dir, "--max-run", "300ms", name, "sleep", "30")
		}},
		{"busy", 75, false, func(t *testing.T, name, dir string) clitest.Result {
			if err := e.rdb.Set(ctx, "lock:"+name, foreign, time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			return e.run("--metrics-dir", dir, name, "true")
		}},
		{"paused", 75, false, func(t *testing.T, name, dir string) clitest.Result {
			if r := e.run("--pause", name); r.Code != 0 {
				t.Fatalf("--pause: exit %d, stderr %q", r.Code, r.Stderr)
			}
			return e.run("--metrics-dir", dir, name, "true")
		}},
		{"lost", 125, true, func(t *testing.T, name, dir string) clitest.Result {
			j := e.startJob(0, "--metrics-dir", dir, "--ttl", "1s", name)
			if err := e.rdb.Set(ctx, j.key, foreign, time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			return j.Wait(clitest.RunTimeout)
		}},
		{"done", 0, true, func(t *testing.T, name, dir string) clitest.Result {
			// A success in the window, not counted here; then the skip. The
			// skip held the lock for the moment of reading the marker.
			once := []string{"--once-per", "1h", "--once-per-offset", midWindow(time.Hour)}
			if r := e.run(append(once, name, "true")...); r.Code != 0 {
				t.Fatalf("the run before: exit %d, stderr %q", r.Code, r.Stderr)
			}
			return e.run(append(append(once, "--metrics-dir", dir), name, "true")...)
		}},
		{"error", 69, false, func(t *testing.T, name, dir string) clitest.Result {
			nobody := "redis://127.0.0.1:" + strconv.Itoa(redistest.FreePort(t))
			return clitest.Run(t, nil, "--redis", nobody, "--metrics-dir", dir, name, "true")
		}},
	} {
		t.Run(tc.outcome, func(t *testing.T) {
			dir, name := t.TempDir(), "job-"+tc.outcome
			before := time.Now()
			res := tc.run(t, name, dir)
			after := time.Now()
			if res.Code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", res.Code, tc.code, res.Stderr)
			}
			m := readMetrics(t, filepath.Join(dir, "with-lock-"+name+".prom"), name)
			for _, o := range []string{"ok", "failed", "lost", "timed-out", "busy", "paused", "done", "error"} {
				want := 0.0
				if o == tc.outcome {
					want = 1
				}
				if got := m.value(t, "with_lock_last_run_outcome", o); got != want {
					t.Errorf("with_lock_last_run_outcome{outcome=%q} = %v, want %v", o, got, want)
				}
				if got := m.value(t, "with_lock_runs_total", o); got != want {
					t.Errorf("with_lock_runs_total{outcome=%q} = %v, want %v", o, got, want)
				}
			}
			if got := m.value(t, "with_lock_last_run_exit_code", ""); got != float64(tc.code) {
				t.Errorf("exit code gauge %v, want %d", got, tc.code)
			}
			start, end := m.value(t, "with_lock_last_run_start_timestamp_seconds", ""), m.value(t, "with_lock_last_run_end_timestamp_seconds", "")
			if lo, hi := unixSeconds(before)-1, unixSeconds(after)+1; start < lo || end < start || end > hi {
				t.Errorf("start %v, end %v: want %v <= start <= end <= %v", start, end, lo, hi)
			}
			held := m.value(t, "with_lock_last_run_duration_seconds", "")
			if waited := m.value(t, "with_lock_last_run_wait_seconds", ""); waited < 0 || held < 0 || held+waited > end-start+0.002 {
				t.Errorf("held %v + waited %v: want both >= 0 and within end-start %v", held, waited, end-start)
			}
			if !tc.held && held != 0 {
				t.Errorf("duration %v for a run that never held the lock, want 0", held)
			}
			success := m.value(t, "with_lock_last_success_timestamp_seconds", "")
			if tc.outcome == "ok" && success != end || tc.outcome != "ok" && success != 0 {
				t.Errorf("last success %v, want %v for outcome %s", success, map[bool]float64{true: end}[tc.outcome == "ok"], tc.outcome)
			}
			if entries, _ := filepath.Glob(filepath.Join(dir, "*.tmp*")); len(entries) != 0 {
				t.Errorf("temporary files left behind: %q", entries)
			}
		})
	}
}

// The counters and the last success are this host's history: a failure
// and a busy skip after a success count beside it and keep its time.
func TestMetricsCountersAndLastSuccessCarryAcrossRuns(t *testing.T) {
	t.Parallel()
	e := setup(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "with-lock-nightly-report.prom")
	if res := e.run("--metrics-dir", dir, "nightly-report", "true"); res.Code != 0 {
		t.Fatalf("exit %d: %q", res.Code, res.Stderr)
	}
	first := readMetrics(t, path, "nightly-report")
	succeeded := first.value(t, "with_lock_last_success_timestamp_seconds", "")
	if res := e.run("--metrics-dir", dir, "nightly-report", "sh", "-c", "exit 2"); res.Code != 2 {
		t.Fatalf("exit %d: %q", res.Code, res.Stderr)
	}
	j := e.startJob(0, "--metrics-dir", dir, "nightly-report")
	if res := e.run("--metrics-dir", dir, "-E", "0", "nightly-report", "true"); res.Code != 0 {
		t.Fatalf("busy run: exit %d: %q", res.Code, res.Stderr)
	}
	if res := j.finish(); res.Code != 0 {
		t.Fatalf("job: exit %d: %q", res.Code, res.Stderr)
	}
	m := readMetrics(t, path, "nightly-report")
	for o, want := range map[string]float64{"ok": 2, "failed": 1, "busy": 1, "lost": 0, "error": 0} {
		if got := m.value(t, "with_lock_runs_total", o); got != want {
			t.Errorf("with_lock_runs_total{outcome=%q} = %v, want %v", o, got, want)
		}
	}
	if got := m.value(t, "with_lock_last_success_timestamp_seconds", ""); got <= succeeded {
		t.Errorf("last success %v, want after the first success %v: the job's success is the latest", got, succeeded)
	}
	if got, first := m.value(t, "with_lock_wait_seconds_total", ""), first.value(t, "with_lock_wait_seconds_total", ""); got < first {
		t.Errorf("with_lock_wait_seconds_total went down from %v to %v", first, got)
	}

	// A failure alone keeps the last success where it was.
	last := m.value(t, "with_lock_last_success_timestamp_seconds", "")
	e.run("--metrics-dir", dir, "nightly-report", "false")
	if got := readMetrics(t, path, "nightly-report").value(t, "with_lock_last_success_timestamp_seconds", ""); got != last {
		t.Errorf("after a failure the last success is %v, want %v kept", got, last)
	}
}

// Runs of one name on one host that end together each count once: the
// read-modify-write of the file is serialised.
func TestMetricsConcurrentRunsLoseNoCount(t *testing.T) {
	t.Parallel()
	e := setup(t)
	dir := t.TempDir()
	const n = 12
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			// -E 0: the ones that find the lock busy succeed too.
			if res := e.run("-E", "0", "--metrics-dir", dir, "burst", "true"); res.Code != 0 {
				t.Errorf("exit %d: %q", res.Code, res.Stderr)
			}
		})
	}
	wg.Wait()
	m := readMetrics(t, filepath.Join(dir, "with-lock-burst.prom"), "burst")
	if got := m.value(t, "with_lock_runs_total", "ok") + m.value(t, "with_lock_runs_total", "busy"); got != n {
		t.Errorf("ok + busy runs counted %v, want %d", got, n)
	}
}

// A name that is no file name gets one of its own, and its label is the
// name exactly.
func TestMetricsFileNamesKeepNamesApart(t *testing.T) {
	t.Parallel()
	e := setup(t)
	base := t.TempDir()
	dir := filepath.Join(base, "metrics")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	names := []string{"a/b", "a_b", `odd "name" \ with spaces`, "../escape"}
	for _, name := range names {
		if res := e.run("--metrics-dir", dir, name, "true"); res.Code != 0 {
			t.Fatalf("%q: exit %d: %q", name, res.Code, res.Stderr)
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.prom"))
	if err != nil || len(files) != len(names) {
		t.Fatalf("files %q (%v), want one per name in %s", files, err, dir)
	}
	seen := map[string]bool{}
	for _, f := range files {
		fams := parseMetrics(t, f)
		promtoolCheck(t, f)
		lock := label(fams["with_lock_runs_total"].GetMetric()[0], "lock")
		seen[lock] = true
	}
	for _, name := range names {
		if !seen[name] {
			t.Errorf("no file has lock=%q; saw %v", name, seen)
		}
	}
	if entries, _ := os.ReadDir(base); len(entries) != 1 {
		t.Errorf("a name wrote outside --metrics-dir: %v", entries)
	}
}

// A directory that cannot be written costs one warning; the command's exit
// code stands.
func TestMetricsWriteFailureIsOneWarning(t *testing.T) {
	t.Parallel()
	e := setup(t)
	missing := filepath.Join(t.TempDir(), "missing")
	res := e.run("--metrics-dir", missing, "job", "sh", "-c", "exit 4")
	if res.Code != 4 {
		t.Errorf("exit %d, want the command's 4", res.Code)
	}
	oneLine(t, res, "metrics of job not written")
	if !strings.Contains(res.Stderr, "--metrics-dir") {
		t.Errorf("stderr %q does not name --metrics-dir", res.Stderr)
	}
}

// promMetrics is one parsed metrics file.
type promMetrics map[string]*dto.MetricFamily

// readMetrics parses the metrics file at path, checks it with promtool,
// and checks what every sample of with-lock's must have: the lock and
// host labels, and no timestamp (the textfile collector refuses those).
func readMetrics(t *testing.T, path, lock string) promMetrics {
	t.Helper()
	fams := parseMetrics(t, path)
	promtoolCheck(t, path)
	host, _ := os.Hostname()
	for name, fam := range fams {
		if !strings.HasPrefix(name, "with_lock_") || fam.GetHelp() == "" {
			t.Errorf("family %s: want the with_lock_ prefix and a HELP line", name)
		}
		for _, m := range fam.GetMetric() {
			if m.TimestampMs != nil {
				t.Errorf("%s has a timestamp", name)
			}
			if label(m, "lock") != lock || label(m, "host") != host {
				t.Errorf("%s: lock=%q host=%q, want %q and %q", name, label(m, "lock"), label(m, "host"), lock, host)
			}
		}
	}
	return fams
}

func parseMetrics(t *testing.T, path string) promMetrics {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return fams
}

// value is the sample of family name whose outcome label is outcome (""
// for a family without one).
func (p promMetrics) value(t *testing.T, name, outcome string) float64 {
	t.Helper()
	fam, ok := p[name]
	if !ok {
		t.Fatalf("no %s in the metrics", name)
	}
	for _, m := range fam.GetMetric() {
		if label(m, "outcome") != outcome {
			continue
		}
		switch fam.GetType() {
		case dto.MetricType_COUNTER:
			return m.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			return m.GetGauge().GetValue()
		}
		t.Fatalf("%s is a %s", name, fam.GetType())
	}
	t.Fatalf("no %s{outcome=%q}", name, outcome)
	return 0
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// promtool is Prometheus's own tool; `make test` installs it (make
// promtool). Missing, the test fails, in CI always: CI must not pass
// without the check. Only go test -short outside CI, which runs without
// servers and tools (make test-short), leaves the test out, as redistest
// does.
func promtool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	switch {
	case err == nil:
		return path
	case testing.Short() && os.Getenv("CI") != "true":
		t.Skip("runs promtool, which is not installed: not run under go test -short")
	}
	t.Fatalf("promtool not found: run make promtool (the Debian package prometheus ships it)")
	return ""
}

// promtoolCheck runs promtool check metrics, the linter of the exposition
// format and its naming conventions, on the file at path.
func promtoolCheck(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(promtool(t), "check", "metrics")
	cmd.Stdin = f
	if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
		t.Errorf("promtool check metrics %s: %v\n%s", path, err, out)
	}
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }
