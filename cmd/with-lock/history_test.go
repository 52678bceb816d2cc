package main_test

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// runJSON is one line of --history --json, or a last run in --status --json.
type runJSON struct {
	Holder     string    `json:"holder"`
	Host       string    `json:"host"`
	Started    time.Time `json:"started"`
	Finished   time.Time `json:"finished"`
	DurationMs int64     `json:"duration_ms"`
	ExitCode   int       `json:"exit_code"`
	Outcome    string    `json:"outcome"`
}

// --status, --status --json and --list --json show the last success beside
// a later failure, which does not overwrite it.
func TestStatusShowsTheLastSuccessBesideALaterFailure(t *testing.T) {
	e := setup(t)
	if r := e.run("nightly", "true"); r.Code != 0 {
		t.Fatalf("first run: exit %d, stderr %q", r.Code, r.Stderr)
	}
	if r := e.run("nightly", "sh", "-c", "exit 3"); r.Code != 3 {
		t.Fatalf("second run: exit %d, stderr %q", r.Code, r.Stderr)
	}
	r := e.run("--status", "nightly")
	if r.Code != 1 || !hasLine(r.Stdout, "last run: ", "exit 3") || !hasLine(r.Stdout, "last success: ", "exit 0") {
		t.Errorf("--status: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	for _, args := range [][]string{{"--status", "--json", "nightly"}, {"--list", "--all", "--json"}} {
		r := e.run(args...)
		var got struct {
			LastRun     *runJSON `json:"last_run"`
			LastSuccess *runJSON `json:"last_success"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil {
			t.Fatalf("%v: JSON %q: %v", args, r.Stdout, err)
		}
		if got.LastRun == nil || got.LastRun.ExitCode != 3 || got.LastRun.Outcome != "failed" ||
			got.LastSuccess == nil || got.LastSuccess.ExitCode != 0 || got.LastSuccess.Outcome != "ok" || got.LastSuccess.Host == "" {
			t.Errorf("%v: last run %+v, last success %+v; want exit 3 failed, exit 0 ok", args, got.LastRun, got.LastSuccess)
		}
	}
}

// --history prints the kept runs newest first, --history-size of them, as
// a table or JSON lines; a name that never ran prints nothing and exits 0.
func TestHistoryPrintsTheLastRunsNewestFirst(t *testing.T) {
	e := setup(t)
	for _, code := range []string{"0", "1", "2", "3"} {
		if r := e.run("--history-size", "3", "report", "sh", "-c", "exit "+code); r.Stderr != "" {
			t.Fatalf("run exiting %s: exit %d, stderr %q", code, r.Code, r.Stderr)
		}
	}
	r := e.run("--history", "report")
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if r.Code != 0 || len(lines) != 4 || !strings.HasPrefix(lines[0], "FINISHED") ||
		!hasLine(lines[1], "failed", "exit 3") || !hasLine(lines[2], "failed", "exit 2") || !hasLine(lines[3], "failed", "exit 1") {
		t.Errorf("--history: exit %d, stdout %q, stderr %q; want a header and exits 3, 2, 1", r.Code, r.Stdout, r.Stderr)
	}

	r = e.run("--history", "--json", "report")
	var codes []int
	sc := bufio.NewScanner(strings.NewReader(r.Stdout))
	for sc.Scan() {
		var run runJSON
		if err := json.Unmarshal(sc.Bytes(), &run); err != nil {
			t.Fatalf("JSON line %q: %v", sc.Text(), err)
		}
		if run.Holder == "" || run.Host == "" || run.Started.IsZero() || run.Finished.Before(run.Started) || run.DurationMs < 0 {
			t.Errorf("run %+v lacks its holder or times", run)
		}
		codes = append(codes, run.ExitCode)
	}
	if r.Code != 0 || len(codes) != 3 || codes[0] != 3 || codes[1] != 2 || codes[2] != 1 {
		t.Errorf("--history --json: exit %d, exit codes %v, stderr %q; want [3 2 1]", r.Code, codes, r.Stderr)
	}

	if r := e.run("--history", "never-ran"); r.Code != 0 || r.Stdout != "" || r.Stderr != "" {
		t.Errorf("--history of a name that never ran: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	if r := e.run("--history", "report", "true"); r.Code != 64 {
		t.Errorf("--history with a command: exit %d, want 64", r.Code)
	}
}
