package main_test

// The docs' examples run as written: make demo, the alert rule, the Nagios
// command, the crontab lines.

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// The monitoring guide, docs/monitoring.md (the README links to it), is
// configuration people paste: the tests here run it as written.

// readmeBlocks returns the fenced blocks of the monitoring guide.
func readmeBlocks(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "monitoring.md"))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	parts := strings.Split(string(b), "```")
	for i := 1; i < len(parts); i += 2 {
		_, body, _ := strings.Cut(parts[i], "\n") // drop the info string
		blocks = append(blocks, body)
	}
	return blocks
}

// readmeBlock returns the first fenced block of the monitoring guide
// whose text contains marker.
func readmeBlock(t *testing.T, marker string) string {
	t.Helper()
	for _, body := range readmeBlocks(t) {
		if strings.Contains(body, marker) {
			return body
		}
	}
	t.Fatalf("docs/monitoring.md has no block with %q", marker)
	return ""
}

// The monitoring guide's alert rule stays quiet while a host's last success is under
// 25 h old, whatever a host that never succeeded says, and fires after.
func TestReadmeAlertRuleFiresAfter25hWithoutSuccess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rules := filepath.Join(dir, "with-lock.rules.yml")
	writeFile(t, rules, []byte(readmeBlock(t, "groups:")), 0o644)
	// db1 succeeded at 01:00 on day 0 and never since; db2 never did
	// (0), and a job of another name is not this alert's business.
	tests := `rule_files: [with-lock.rules.yml]
evaluation_interval: 1m
tests:
  - interval: 10m
    input_series:
      - series: 'with_lock_last_success_timestamp_seconds{lock="nightly-report",host="db1"}'
        values: '3600x200'
      - series: 'with_lock_last_success_timestamp_seconds{lock="nightly-report",host="db2"}'
        values: '0x200'
      - series: 'with_lock_last_success_timestamp_seconds{lock="other",host="db1"}'
        values: '0x200'
    alert_rule_test:
      - eval_time: 25h50m
        alertname: NightlyReportNotSucceeded
        exp_alerts: []
      - eval_time: 26h10m
        alertname: NightlyReportNotSucceeded
        exp_alerts:
          - exp_labels: {lock: nightly-report}
            exp_annotations:
              summary: "nightly-report has not succeeded on any host for 25h"
`
	writeFile(t, filepath.Join(dir, "tests.yml"), []byte(tests), 0o644)
	cmd := exec.Command(promtool(t), "test", "rules", "tests.yml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool test rules: %v\n%s", err, out)
	}
}

// The monitoring guide's Nagios command, with the service's arguments put in, says
// OK after a success and CRITICAL after a failure.
func TestReadmeNagiosCommandRunsAsWritten(t *testing.T) {
	t.Parallel()
	var command, service []string
	for _, line := range strings.Split(readmeBlock(t, "command_line"), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 1 && f[0] == "command_line":
			command = f[1:]
		case len(f) == 2 && f[0] == "check_command":
			service = strings.Split(f[1], "!")
		}
	}
	if len(command) < 2 || command[0] != "/usr/bin/with-lock" || len(service) < 2 {
		t.Fatalf("command_line %q, check_command %q: want /usr/bin/with-lock and its arguments", command, service)
	}
	args := command[1:]
	for i, a := range args {
		for n, v := range service[1:] {
			a = strings.ReplaceAll(a, "$ARG"+string(rune('1'+n))+"$", v)
		}
		if strings.Contains(a, "$") {
			t.Fatalf("argument %q has no value in check_command %q", a, service)
		}
		args[i] = a
	}
	e := setup(t)
	e.mustRun(0, "nightly-report", "true")
	res := clitest.Run(t, redisEnv(e.srv), args...)
	checkLine(t, res, 0, `^WITH-LOCK OK - nightly-report succeeded on `)
	e.mustRun(3, "nightly-report", "sh", "-c", "exit 3")
	res = clitest.Run(t, redisEnv(e.srv), args...)
	checkLine(t, res, 2, `^WITH-LOCK CRITICAL - last run of nightly-report failed on .* \(exit 3\) `)
}

// The monitoring guide's crontab lines run as written, with this test's
// directory, check server and a job that succeeds in their places: the
// metrics file and the pings arrive.
func TestReadmeCrontabLinesRunAsWritten(t *testing.T) {
	t.Parallel()
	var lines [][]string
	for _, body := range readmeBlocks(t) {
		for _, line := range strings.Split(body, "\n") {
			if f := strings.Fields(line); len(f) > 6 && f[5] == "with-lock" {
				lines = append(lines, f[6:])
			}
		}
	}
	if len(lines) < 2 {
		t.Fatalf("found %d crontab lines in docs/monitoring.md, want the metrics and the ping lines", len(lines))
	}
	for _, args := range lines {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			e := setup(t)
			dir := t.TempDir()
			srv := startPingServer(t, nil, "", nil)
			used := map[string]bool{}
			for i, a := range args {
				for from, to := range map[string]string{
					"/var/lib/prometheus/node-exporter": dir,
					"https://hc-ping.com/<check-uuid>":  srv.URL + "/check-uuid",
					"/opt/jobs/report.sh":               "true",
				} {
					if a == from {
						args[i], used[from] = to, true
					}
				}
			}
			if !used["/opt/jobs/report.sh"] || len(used) != 2 {
				t.Fatalf("line %q: want the job and a metrics directory or a check URL this test knows", args)
			}
			if res := e.run(args...); res.Code != 0 || res.Stderr != "" {
				t.Fatalf("exit %d, stderr %q: want 0 and nothing said", res.Code, res.Stderr)
			}
			if used["/var/lib/prometheus/node-exporter"] {
				m := readMetrics(t, filepath.Join(dir, "with-lock-nightly-report.prom"), "nightly-report")
				if m.value(t, "with_lock_last_run_outcome", "ok") != 1 {
					t.Errorf("metrics: the run's outcome is not ok")
				}
			}
			if used["https://hc-ping.com/<check-uuid>"] {
				if paths := srv.paths(); paths != "/check-uuid/start,/check-uuid/0" {
					t.Errorf("pings %q: want start and 0", paths)
				}
			}
		})
	}
}

// make demo's script, run on a test's Redis: one copy runs, two are
// refused, and the key it shows names the holder but never the token's
// random part, as nothing with-lock prints does.
func TestDemoShowsTheHolderNotTheToken(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	cmd := exec.Command("bash", "../../tools/demo.sh")
	cmd.Env = append(cmd.Environ(), "BIN="+clitest.Binary(t), "DEMO_PORT="+strconv.Itoa(srv.Port))
	done := make(chan struct{})
	var out []byte
	var err error
	go func() {
		out, err = cmd.CombinedOutput()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(clitest.RunTimeout):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("the demo did not finish within %s: %s", clitest.RunTimeout, out)
	}
	if err != nil || !strings.Contains(string(out), "== 1 ran, 2 refused with 75 (lock busy)") {
		t.Fatalf("demo: %v; output:\n%s", err, out)
	}
	shown := regexp.MustCompile(`GET lock:demo-nightly-report -> (\S+)`).FindStringSubmatch(string(out))
	if shown == nil || !regexp.MustCompile(`^[^:]+:\d+:[0-9a-z]+\.<`).MatchString(shown[1]) {
		t.Errorf("the demo shows the key as %q, want <host>:<pid>:<start> and the random part hidden:\n%s", shown, out)
	}
	if hex := regexp.MustCompile(`[0-9a-f]{32}`).FindString(string(out)); hex != "" {
		t.Errorf("the demo shows a token's random part %s:\n%s", hex, out)
	}
}
