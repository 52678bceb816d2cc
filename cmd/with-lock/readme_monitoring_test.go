package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The README's Monitoring section is configuration people paste: the
// tests here run it as written.

// readmeBlock returns the first fenced block of the README's Monitoring
// section whose text contains marker.
func readmeBlock(t *testing.T, marker string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Monitoring\n")
	if !ok {
		t.Fatal("README has no Monitoring section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	parts := strings.Split(section, "```")
	for i := 1; i < len(parts); i += 2 {
		_, body, _ := strings.Cut(parts[i], "\n") // drop the info string
		if strings.Contains(body, marker) {
			return body
		}
	}
	t.Fatalf("the README's Monitoring section has no block with %q", marker)
	return ""
}

// The README's alert rule stays quiet while a host's last success is under
// 25 h old, whatever a host that never succeeded says, and fires after.
func TestReadmeAlertRuleFiresAfter25hWithoutSuccess(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "with-lock.rules.yml")
	if err := os.WriteFile(rules, []byte(readmeBlock(t, "groups:")), 0o644); err != nil {
		t.Fatal(err)
	}
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
	if err := os.WriteFile(filepath.Join(dir, "tests.yml"), []byte(tests), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(promtool(t), "test", "rules", "tests.yml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool test rules: %v\n%s", err, out)
	}
}
