package main_test

import (
	"maps"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// pushgateway starts Debian's prometheus-pushgateway on a free port of the
// loopback, without persistence, for the test; `make test` installs it
// (make pushgateway), and CI fails without it, as with promtool.
func pushgateway(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus-pushgateway")
	switch {
	case err == nil:
	case testing.Short() && os.Getenv("CI") != "true":
		t.Skip("runs prometheus-pushgateway, which is not installed: not run under go test -short")
	default:
		t.Fatalf("prometheus-pushgateway not found: run make pushgateway (the Debian package prometheus-pushgateway)")
	}
	addr := "127.0.0.1:" + strconv.Itoa(redistest.FreePort(t))
	cmd := exec.Command(bin, "--web.listen-address="+addr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := "http://" + addr
	clitest.Eventually(t, 10*time.Second, "the Pushgateway answering at "+url, func() bool {
		resp, err := http.Get(url + "/-/ready")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	})
	return url
}

// pushed is the metric family name's sample of lock in the Pushgateway's
// /metrics; nil when there is none.
func pushed(t *testing.T, url, name, lock string) *dto.Metric {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the Pushgateway's /metrics: %v", err)
	}
	for _, m := range families[name].GetMetric() {
		if label(m, "lock") == lock && label(m, "job") == "with-lock" {
			return m
		}
	}
	return nil
}

// --metrics-push posts each run's metrics to a Pushgateway, grouped by
// job="with-lock" and the lock's name (any name: base64 in the URL): the
// last run's exit code and outcome, and the last success, which a failed
// run after it leaves in place. A Pushgateway that is down costs one
// warning and changes nothing else.
func TestMetricsPushReachesAPushgateway(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	url := pushgateway(t)
	const lock = "reports/nightly"
	if res := clitest.Run(t, redisEnv(srv), "--metrics-push", url, lock, "true"); res.Code != 0 || res.Stderr != "" {
		t.Fatalf("exit %d, stderr %q", res.Code, res.Stderr)
	}
	success := pushed(t, url, "with_lock_last_success_timestamp_seconds", lock)
	if success == nil || time.Since(time.UnixMilli(int64(success.GetGauge().GetValue()*1000))) > time.Minute {
		t.Fatalf("after a run that succeeded, the last success pushed is %v", success)
	}
	if m := pushed(t, url, "with_lock_last_run_outcome", lock); m == nil || label(m, "host") == "" {
		t.Errorf("the outcome pushed is %v, want it with the host the run ran on", m)
	}

	if res := clitest.Run(t, redisEnv(srv), "--metrics-push", url, lock, "sh", "-c", "exit 3"); res.Code != 3 || res.Stderr != "" {
		t.Fatalf("exit %d, stderr %q", res.Code, res.Stderr)
	}
	if m := pushed(t, url, "with_lock_last_run_exit_code", lock); m.GetGauge().GetValue() != 3 {
		t.Errorf("after a failed run the exit code pushed is %v, want 3", m)
	}
	if m := pushed(t, url, "with_lock_last_success_timestamp_seconds", lock); m.GetGauge().GetValue() != success.GetGauge().GetValue() {
		t.Errorf("the failed run changed the last success pushed: %v, was %v", m, success)
	}

	down := "http://127.0.0.1:" + strconv.Itoa(redistest.FreePort(t))
	res := clitest.Run(t, redisEnv(srv), "--metrics-push", down, lock, "sh", "-c", "exit 4")
	if res.Code != 4 || !hasLine(res.Stderr, "metrics of "+lock+" not pushed", "--metrics-push") {
		t.Errorf("with the Pushgateway down: exit %d, stderr %q; want the command's 4 and one warning", res.Code, res.Stderr)
	}
	if strings.Count(res.Stderr, "\n") != 1 {
		t.Errorf("more than one line for a Pushgateway that is down: %q", res.Stderr)
	}
}

// A run that skips the job (the lock busy, the name paused, the
// --once-per window done) pushes nothing: the group keeps the gauges of
// the last run that did the work, its exit code, end and duration, rather
// than the skip's.
func TestMetricsPushKeepsTheLastRealRunWhenARunIsSkipped(t *testing.T) {
	t.Parallel()
	e := setup(t)
	url := pushgateway(t)
	// The run that does the work has a duration and an exit code of its
	// own; --once-per's window is done by a success.
	tests := []struct {
		outcome string
		flags   []string // both runs', before the name
		skip    func(t *testing.T, lock string)
		script  string // the run's that does the work, and its exit code
		code    int
	}{
		{"busy", []string{"-E", "0"}, func(t *testing.T, lock string) {
			if err := e.rdb.Set(t.Context(), "lock:"+lock, foreign, time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
		}, "sleep 0.1; exit 3", 3},
		{"paused", nil, func(t *testing.T, lock string) {
			if r := e.run("--pause", lock); r.Code != 0 {
				t.Fatalf("--pause: exit %d, stderr %q", r.Code, r.Stderr)
			}
		}, "sleep 0.1; exit 3", 3},
		{"done", []string{"--once-per", "24h"}, func(*testing.T, string) {}, "sleep 0.1", 0},
	}
	for _, tt := range tests {
		t.Run(tt.outcome, func(t *testing.T) {
			lock := "skip-" + tt.outcome
			args := append(append(append([]string{"--metrics-push", url}, tt.flags...), lock), "sh", "-c", tt.script)
			real := e.run(args...)
			gauges := func() map[string]float64 {
				g := map[string]float64{}
				for _, name := range []string{"with_lock_last_run_exit_code", "with_lock_last_run_end_timestamp_seconds",
					"with_lock_last_run_duration_seconds"} {
					if m := pushed(t, url, name, lock); m != nil {
						g[name] = m.GetGauge().GetValue()
					}
				}
				return g
			}
			before := gauges()
			if real.Code != tt.code || len(before) != 3 || before["with_lock_last_run_duration_seconds"] == 0 {
				t.Fatalf("the run that did the work (exit %d, stderr %q) pushed %v", real.Code, real.Stderr, before)
			}
			tt.skip(t, lock)
			args = append(append(append([]string{"--metrics-push", url, "-v"}, tt.flags...), lock), "sh", "-c", "exit 9")
			r := e.run(args...)
			if r.Code == 9 || !strings.Contains(r.Stderr, "metrics of "+lock+" not pushed: the run was "+tt.outcome) {
				t.Errorf("the skipped run: exit %d, stderr %q; want the command not run, and -v saying nothing was pushed", r.Code, r.Stderr)
			}
			if after := gauges(); !maps.Equal(after, before) {
				t.Errorf("after a %s run the group shows %v; want the last real run's %v", tt.outcome, after, before)
			}
		})
	}
}
