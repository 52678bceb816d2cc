package main_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The alerting rules and the Grafana dashboard shipped in packaging/ (and
// the .deb's examples): the rules pass their promtool unit tests, and
// both read only series that with-lock writes, as a real run writes them.

// packagingFile is the path of a file of packaging/.
func packagingFile(name string) string { return filepath.Join("..", "..", "packaging", name) }

// Every alert fires when it should and stays quiet when it should not:
// promtool check rules, then promtool test rules on the unit tests beside
// the rules.
func TestShippedAlertRulesPassTheirUnitTests(t *testing.T) {
	t.Parallel()
	promtool := promtool(t)
	for _, args := range [][]string{
		{"check", "rules", "with-lock.rules.yml"},
		{"test", "rules", "with-lock.rules.test.yml"},
	} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = packagingFile("")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// seriesName is a with-lock series in PromQL or a test's input; a recorded
// threshold (with_lock:...) is not one.
var seriesName = regexp.MustCompile(`\bwith_lock_[a-zA-Z0-9_]*`)

// outcomeMatcher is a matcher on the outcome label: outcome="lost",
// outcome=~"failed|lost".
var outcomeMatcher = regexp.MustCompile(`outcome\s*=~?\s*\\?"([^"\\]*)\\?"`)

// grouping is the labels of a by (...) or on (...) clause.
var grouping = regexp.MustCompile(`\b(?:by|on)\s*\(([^)]*)\)`)

// The rules, their unit tests' input and the dashboard name only the
// families a run writes to its metrics file (the Pushgateway gets some of
// them), group by the labels it writes, and match only the outcomes it
// labels them with; the dashboard's queries are valid PromQL.
func TestShippedRulesAndDashboardReadOnlySeriesWithLockWrites(t *testing.T) {
	t.Parallel()
	promtool := promtool(t)
	e := setup(t)
	dir := t.TempDir()
	if res := e.run("--metrics-dir", dir, "written", "true"); res.Code != 0 {
		t.Fatalf("exit %d: %q", res.Code, res.Stderr)
	}
	written, labels, outcomes := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for name, fam := range parseMetrics(t, filepath.Join(dir, "with-lock-written.prom")) {
		written[name] = true
		for _, m := range fam.GetMetric() {
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = true
			}
			if o := label(m, "outcome"); o != "" {
				outcomes[o] = true
			}
		}
	}
	if len(written) == 0 || len(outcomes) == 0 {
		t.Fatalf("the run wrote families %v with outcomes %v", written, outcomes)
	}

	dashboard := dashboardQueries(t)
	texts := map[string]string{
		"with-lock.rules.yml":      readFile(t, packagingFile("with-lock.rules.yml")),
		"with-lock.rules.test.yml": readFile(t, packagingFile("with-lock.rules.test.yml")),
		"with-lock.dashboard.json": strings.Join(dashboard, "\n"),
	}
	for file, text := range texts {
		used := map[string]bool{}
		for _, name := range seriesName.FindAllString(text, -1) {
			used[name] = true
			if !written[name] {
				t.Errorf("%s reads %s, which with-lock does not write (it writes %v)", file, name, slices.Sorted(maps.Keys(written)))
			}
		}
		if len(used) < 4 {
			t.Errorf("%s reads %d series of with-lock's, want most of them: %v", file, len(used), used)
		}
		for _, m := range grouping.FindAllStringSubmatch(text, -1) {
			for _, l := range strings.Split(m[1], ",") {
				if l = strings.TrimSpace(l); l != "" && !labels[l] {
					t.Errorf("%s groups by %q, a label with-lock does not write (it writes %v)", file, l, slices.Sorted(maps.Keys(labels)))
				}
			}
		}
		for _, m := range outcomeMatcher.FindAllStringSubmatch(text, -1) {
			for _, o := range strings.Split(m[1], "|") {
				if !outcomes[o] {
					t.Errorf("%s matches outcome %q, which with-lock does not write (it writes %v)", file, o, slices.Sorted(maps.Keys(outcomes)))
				}
			}
		}
	}

	// Each query, with Grafana's variables given values, as a recording
	// rule: promtool check rules parses it as Prometheus would.
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	vars := strings.NewReplacer("$__rate_interval", "5m", "$__range", "1d", "$lock", ".*")
	for i, q := range dashboard {
		fmt.Fprintf(&rules, "      - record: dashboard_query_%d\n        expr: %q\n", i, vars.Replace(q))
	}
	path := writeFile(t, filepath.Join(t.TempDir(), "dashboard.rules.yml"), []byte(rules.String()), 0o644)
	if out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput(); err != nil {
		t.Errorf("the dashboard's queries are not valid PromQL: %v\n%s\n%s", err, out, rules.String())
	}
}

// dashboardQueries parses the dashboard and returns every query in it:
// each panel target's expr, and each variable's query.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	var dash struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Type       string `json:"type"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	b, err := os.ReadFile(packagingFile("with-lock.dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("with-lock.dashboard.json: %v", err)
	}
	var queries []string
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Expr == "" {
				t.Errorf("panel %q has a target without expr", p.Title)
			}
			queries = append(queries, tg.Expr)
		}
	}
	for _, v := range dash.Templating.List {
		if v.Type == "query" {
			// label_values(series, label) is Grafana's, not PromQL: the
			// series is what it reads.
			if m := regexp.MustCompile(`^label_values\((.+), *\w+\)$`).FindStringSubmatch(v.Definition); m != nil {
				queries = append(queries, m[1])
			} else {
				t.Errorf("variable %s: query %q, want label_values(series, label)", v.Name, v.Definition)
			}
		}
	}
	if dash.Title == "" || len(queries) == 0 {
		t.Fatalf("with-lock.dashboard.json: title %q, %d queries", dash.Title, len(queries))
	}
	return queries
}

// The monitoring guide's prometheus.yml and limits file, written beside a
// copy of the shipped rules as the guide says, pass promtool check config,
// and the limits reach the alerts: hourly-sync fires past its max age of
// 2h, not the default 25h, and daily-export once a 1d window from 02:00
// has passed without a success, not before.
func TestMonitoringGuideLoadsTheShippedRules(t *testing.T) {
	t.Parallel()
	promtool := promtool(t)
	dir := t.TempDir()
	for _, marker := range []string{"# prometheus.yml\n", "# with-lock.limits.yml\n"} {
		body := readmeBlock(t, marker)
		writeFile(t, filepath.Join(dir, strings.TrimSpace(strings.TrimPrefix(marker, "# "))), []byte(body), 0o644)
	}
	writeFile(t, filepath.Join(dir, "with-lock.rules.yml"), []byte(readFile(t, packagingFile("with-lock.rules.yml"))), 0o644)
	cmd := exec.Command(promtool, "check", "config", "prometheus.yml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}
	// hourly-sync last succeeded at 01:00; daily-export at 03:00 on day 0,
	// in the window that ends at 02:00 on day 1, so the one that ends at
	// 02:00 on day 2 is the first without a success (its max age is the
	// default, long passed by then).
	tests := `rule_files: [with-lock.rules.yml, with-lock.limits.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'with_lock_last_success_timestamp_seconds{lock="hourly-sync",host="db1"}'
        values: '3600x3100'
      - series: 'with_lock_last_success_timestamp_seconds{lock="daily-export",host="db1"}'
        values: '10800x3100'
    promql_expr_test:
      - expr: ALERTS{alertstate="firing"}
        eval_time: 2h50m
        exp_samples: []
      - expr: ALERTS{alertstate="firing"}
        eval_time: 3h10m
        exp_samples:
          - labels: '{__name__="ALERTS", alertname="WithLockNoRecentSuccess", alertstate="firing", lock="hourly-sync", severity="critical"}'
            value: 1
      - expr: ALERTS{alertstate="firing", lock="daily-export"}
        eval_time: 50h30m
        exp_samples:
          - labels: '{__name__="ALERTS", alertname="WithLockNoRecentSuccess", alertstate="firing", lock="daily-export", severity="critical"}'
            value: 1
          - labels: '{__name__="ALERTS", alertname="WithLockOncePerWindowMissed", alertstate="firing", lock="daily-export", severity="critical"}'
            value: 1
      - expr: ALERTS{alertstate="firing", lock="daily-export"}
        eval_time: 49h50m
        exp_samples:
          - labels: '{__name__="ALERTS", alertname="WithLockNoRecentSuccess", alertstate="firing", lock="daily-export", severity="critical"}'
            value: 1
`
	writeFile(t, filepath.Join(dir, "limits.test.yml"), []byte(tests), 0o644)
	cmd = exec.Command(promtool, "test", "rules", "limits.test.yml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool test rules with the guide's limits: %v\n%s", err, out)
	}
}
