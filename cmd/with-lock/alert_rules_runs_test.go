package main_test

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
)

// The shipped alerts against what real runs write: each run's metrics
// file, as node_exporter would show it, becomes a promtool test's input.

// Slots of the promtool test's clock, in minutes from the epoch: the runs'
// files appear at runsAt, each for snapshotMinutes, the last until
// totalMinutes. runsAt is past 6h, so that a last success of 0 ("never")
// is older than the 6h FailingRepeatedly looks back.
const (
	runsAt          = 7 * 60
	snapshotMinutes = 10
	totalMinutes    = 32 * 60
)

// Real runs of five locks: one that succeeds, one that fails four times,
// one that loses its lock, one stopped by --max-run and one paused. Their
// files, scraped each minute, make exactly the alerts they should: the
// lost lock, the run stopped by --max-run and the repeated failures at
// once; a day later the paused name, and no recent success for each name
// that never succeeded.
func TestShippedAlertsFireOnWhatRealRunsWrite(t *testing.T) {
	t.Parallel()
	promtool := promtool(t)
	e := setup(t)
	ctx := context.Background()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	begun := time.Now()
	// Each lock's file after each of its runs.
	snapshots := map[string][]promSamples{}
	runs := func(lock string, n int, run func(dir string) clitest.Result, want int) {
		dir := t.TempDir()
		for range n {
			if res := run(dir); res.Code != want {
				t.Fatalf("%s: exit %d, want %d; stderr %q", lock, res.Code, want, res.Stderr)
			}
			snapshots[lock] = append(snapshots[lock], readSamples(t, filepath.Join(dir, "with-lock-"+lock+".prom")))
		}
	}
	runs("ok-run", 1, func(dir string) clitest.Result { return e.run("--metrics-dir", dir, "ok-run", "true") }, 0)
	runs("failing-run", 4, func(dir string) clitest.Result {
		return e.run("--metrics-dir", dir, "failing-run", "sh", "-c", "exit 3")
	}, 3)
	runs("lost-run", 1, func(dir string) clitest.Result {
		j := e.startJob(0, "--metrics-dir", dir, "--ttl", "1s", "lost-run")
		if err := e.rdb.Set(ctx, j.key, foreign, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		return j.Wait(clitest.RunTimeout)
	}, 125)
	runs("timeout-run", 1, func(dir string) clitest.Result {
		return e.run("--metrics-dir", dir, "--max-run", "300ms", "timeout-run", "sleep", "30")
	}, 124)
	e.mustRun(0, "--pause", "paused-run")
	runs("paused-run", 1, func(dir string) clitest.Result { return e.run("--metrics-dir", dir, "paused-run", "true") }, 75)

	// The runs' times, moved to the test's clock: begun is at runsAt.
	shift := float64(begun.Unix()) - runsAt*60
	rules, err := filepath.Abs(packagingFile("with-lock.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var in strings.Builder
	fmt.Fprintf(&in, "rule_files: [%s]\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n", rules)
	for _, lock := range slices.Sorted(maps.Keys(snapshots)) {
		for _, series := range seriesOf(snapshots[lock]) {
			fmt.Fprintf(&in, "      - series: '%s'\n        values: '%s'\n", series, inputValues(snapshots[lock], series, shift))
		}
	}
	alert := func(name, lock string, withHost bool, severity string) string {
		l := fmt.Sprintf(`__name__="ALERTS", alertname=%q, alertstate="firing", lock=%q, severity=%q`, name, lock, severity)
		if withHost {
			l += fmt.Sprintf(", host=%q", host)
		}
		return "{" + l + "}"
	}
	lost, stopped := alert("WithLockLostLock", "lost-run", true, "warning"), alert("WithLockRunStoppedByMaxRun", "timeout-run", true, "warning")
	never := func(lock string) string { return alert("WithLockNoRecentSuccess", lock, false, "critical") }
	expected := []struct {
		minutes int
		firing  []string
	}{
		{runsAt - 10, nil},
		{runsAt + 45, []string{lost, stopped, alert("WithLockFailingRepeatedly", "failing-run", false, "critical")}},
		{runsAt + 24*60 + 10, []string{lost, stopped, alert("WithLockPausedTooLong", "paused-run", false, "warning"),
			never("failing-run"), never("lost-run"), never("timeout-run"), never("paused-run")}},
	}
	in.WriteString("    promql_expr_test:\n")
	for _, at := range expected {
		fmt.Fprintf(&in, "      - expr: 'ALERTS{alertstate=\"firing\"}'\n        eval_time: %dm\n        exp_samples:", at.minutes)
		if len(at.firing) == 0 {
			in.WriteString(" []\n")
			continue
		}
		in.WriteString("\n")
		for _, l := range at.firing {
			fmt.Fprintf(&in, "          - labels: '%s'\n            value: 1\n", l)
		}
	}
	path := writeFile(t, filepath.Join(t.TempDir(), "runs.test.yml"), []byte(in.String()), 0o644)
	if out, err := exec.Command(promtool, "test", "rules", path).CombinedOutput(); err != nil {
		t.Errorf("promtool test rules on the runs' files: %v\n%s", err, out)
	}
}

// promSamples is a metrics file's samples by series, `name{l="v",...}`.
type promSamples map[string]float64

func readSamples(t *testing.T, path string) promSamples {
	t.Helper()
	s := promSamples{}
	for name, fam := range readMetrics(t, path, strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "with-lock-"), ".prom")) {
		for _, m := range fam.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			slices.Sort(labels)
			s[name+"{"+strings.Join(labels, ",")+"}"] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	return s
}

// seriesOf is every series in any of the snapshots, sorted.
func seriesOf(snaps []promSamples) []string {
	seen := map[string]bool{}
	for _, s := range snaps {
		for k := range s {
			seen[k] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// inputValues is the promtool values of series: absent before runsAt,
// then each snapshot for snapshotMinutes, the last until totalMinutes;
// times other than 0 ("never") moved back by shift.
func inputValues(snaps []promSamples, series string, shift float64) string {
	var v []string
	for range runsAt {
		v = append(v, "_")
	}
	for i, s := range snaps {
		x, ok := s[series]
		// promtool's series notation has no NaN (a duration gauge with no
		// successes to judge by): such a sample is left absent, which the
		// alerts read alike.
		val := "_"
		if ok && !math.IsNaN(x) {
			if strings.Contains(series, "_timestamp_seconds{") && x != 0 {
				x -= shift
			}
			val = strconv.FormatFloat(x, 'f', -1, 64)
		}
		if i == len(snaps)-1 {
			v = append(v, fmt.Sprintf("%sx%d", val, totalMinutes-len(v)))
			break
		}
		for range snapshotMinutes {
			v = append(v, val)
		}
	}
	return strings.Join(v, " ")
}
