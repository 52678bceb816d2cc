package main_test

// The run records: --history, the last success, the output's end, retention
// and the off switch.

import (
	"bufio"
	"context"
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
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
	Output     string    `json:"output"`
}

// --status, --status --json and --list --json show the last success beside
// a later failure, which does not overwrite it.
func TestStatusShowsTheLastSuccessBesideALaterFailure(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	for _, run := range historyJSON(t, r.Stdout) {
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

// With --record-output N each run's record keeps the last N KiB of its
// output, from the start of a line: another process reads them in
// --history --json, newest first, and --history and --status show them
// below each run. Without it no output is stored.
func TestHistoryShowsTheEndOfEachRunsOutput(t *testing.T) {
	t.Parallel()
	e := setup(t)
	// All of it on stderr: stdout and stderr are two pipes, read as they
	// come, whose order between them the record cannot know.
	if r := e.run("--record-output", "1", "report", "sh", "-c", `seq 1 2000 >&2; echo failed >&2; exit 3`); r.Code != 3 {
		t.Fatalf("first run: exit %d, stderr %q", r.Code, r.Stderr)
	}
	if r := e.run("--record-output", "1", "report", "sh", "-c", `echo done`); r.Code != 0 || r.Stdout != "done\n" {
		t.Fatalf("second run: exit %d, stdout %q: want its output passed through", r.Code, r.Stdout)
	}
	if r := e.run("report", "sh", "-c", `echo not kept`); r.Code != 0 {
		t.Fatalf("third run: exit %d, stderr %q", r.Code, r.Stderr)
	}

	r := e.run("--history", "--json", "report")
	runs := historyJSON(t, r.Stdout)
	if len(runs) != 3 {
		t.Fatalf("--history --json: %d runs, want 3; stdout %q", len(runs), r.Stdout)
	}
	if runs[0].Output != "" {
		t.Errorf("a run without --record-output stored %q", runs[0].Output)
	}
	if runs[1].Output != "done\n" {
		t.Errorf("second run's output %q, want %q", runs[1].Output, "done\n")
	}
	first := runs[2].Output
	if len(first) > 1024 || !strings.HasSuffix(first, "1999\n2000\nfailed\n") || !strings.HasPrefix(first, strconv.Itoa(2000-strings.Count(first, "\n")+2)+"\n") {
		t.Errorf("first run's output %q: want at most 1 KiB, whole lines, ending with its last", first)
	}

	r = e.run("--history", "report")
	if !hasLine(r.Stdout, "  | failed") || !hasLine(r.Stdout, "  | 2000") || !hasLine(r.Stdout, "  | done") ||
		!hasLine(r.Stdout, "  | … ", " lines before") || strings.Contains(r.Stdout, "  | 1990\n") {
		t.Errorf("--history: stdout %q; want each run's last lines below it", r.Stdout)
	}
	if r := e.run("--status", "report"); !hasLine(r.Stdout, "last run: ") || strings.Contains(r.Stdout, "  | ") {
		t.Errorf("--status after a run without --record-output: %q; want no output shown", r.Stdout)
	}
	e.run("--record-output", "1", "report", "printf", `one\ttab\n\033[31mred\r\n`)
	if r := e.run("--status", "report"); !strings.Contains(r.Stdout, "\n  | one\ttab\n  | \uFFFD[31mred\n") {
		t.Errorf("--status: %q; want the last run's output below it, its escape sequence defused", r.Stdout)
	}
}

// historyJSON reads the runs of --history --json's stdout, one per line.
func historyJSON(t *testing.T, stdout string) []runJSON {
	t.Helper()
	var runs []runJSON
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(nil, 1<<20) // a line carries up to --record-output's 64 KiB, escaped
	for sc.Scan() {
		var run runJSON
		if err := json.Unmarshal(sc.Bytes(), &run); err != nil {
			t.Fatalf("JSON line %q: %v", sc.Text(), err)
		}
		runs = append(runs, run)
	}
	return runs
}

// The record is kept for --record-ttl, or not written with --no-record.
func TestRecordRetentionAndOffSwitch(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	if r := e.run("--record-ttl", "1h", "kept", "true"); r.Code != 0 {
		t.Fatalf("exit %d, stderr %q", r.Code, r.Stderr)
	}
	if ttl := e.rdb.PTTL(ctx, "{lock:kept}:last").Val(); ttl <= 59*time.Minute || ttl > time.Hour {
		t.Errorf("record kept for %s, want 1h", ttl)
	}
	if r := e.run("kept-default", "true"); r.Code != 0 {
		t.Fatalf("exit %d, stderr %q", r.Code, r.Stderr)
	}
	if ttl := e.rdb.PTTL(ctx, "{lock:kept-default}:last").Val(); ttl <= 29*24*time.Hour || ttl > 30*24*time.Hour {
		t.Errorf("record kept for %s by default, want 30 days", ttl)
	}
	if r := clitest.Run(t, []string{"WITH_LOCK_NO_RECORD=1"}, "--redis", e.srv.URL(), "unrecorded", "true"); r.Code != 0 {
		t.Fatalf("exit %d, stderr %q", r.Code, r.Stderr)
	}
	if n := e.rdb.Exists(ctx, "{lock:unrecorded}:last").Val(); n != 0 {
		t.Error("WITH_LOCK_NO_RECORD=1 stored a record")
	}
}

// A Redis that is down when the run ends costs one warning, and the
// command's exit code stands.
func TestRecordWithRedisDownIsOneWarning(t *testing.T) {
	t.Parallel()
	for _, quiet := range []bool{false, true} {
		e := setup(t)
		args := []string{"--redis-timeout", "500ms"}
		if quiet {
			args = append(args, "-q")
		}
		j := e.startJob(4, append(args, "down")...)
		e.srv.Kill()
		start := time.Now()
		r := j.finish()
		// -q prints errors only, and this is a warning: the command ran.
		if quiet && (r.Code != 4 || r.Stderr != "") {
			t.Errorf("-q: exit %d, stderr %q; want 4 and silence", r.Code, r.Stderr)
		}
		if !quiet && (r.Code != 4 || strings.Count(r.Stderr, "\n") != 1 || !strings.Contains(r.Stderr, "not recorded")) {
			t.Errorf("exit %d, stderr %q; want 4 and one warning", r.Code, r.Stderr)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("-q %v: the end took %s", quiet, d)
		}
	}
}

// A run has one outcome however much happened to it: one that --max-run
// was stopping when its lock was lost is recorded lost, and exits 125 as
// any lost run does. The job ignores --max-run's SIGTERM and ends on the
// one the loss sends.
func TestARunLostWhileMaxRunStopsItIsRecordedLost(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const job = `n=0; trap 'n=$((n+1)); [ $n -ge 2 ] && exit 0' TERM; while :; do sleep 0.05; done`
	p := clitest.Start(t, redisEnv(e.srv), "--ttl", "1s", "--max-run", "1s", "--kill-after", "30s", "max-run-lost", "sh", "-c", job)
	p.WaitStderr("still running after --max-run")
	if r := e.run("--break", "max-run-lost"); r.Code != 0 {
		t.Fatalf("--break: exit %d, stderr %q", r.Code, r.Stderr)
	}
	r := p.Wait(20 * time.Second)
	if r.Code != 125 {
		t.Errorf("exit %d, want 125 (lost); stderr %q", r.Code, r.Stderr)
	}
	st := e.run("--status", "--json", "max-run-lost")
	var got struct {
		LastRun *runJSON `json:"last_run"`
	}
	if err := json.Unmarshal([]byte(st.Stdout), &got); err != nil {
		t.Fatalf("--status --json %q: %v", st.Stdout, err)
	}
	if got.LastRun == nil || got.LastRun.Outcome != "lost" || got.LastRun.ExitCode != 125 {
		t.Errorf("last run %+v, want outcome lost, exit 125", got.LastRun)
	}
}

// --record-output N stores at most the output's last N KiB, from the start
// of a line, whatever else captures more of it: the end ping's
// --ping-output, --output-on-failure's whole.
func TestRecordOutputKeepsAtMostItsKiBWhateverElseCaptures(t *testing.T) {
	t.Parallel()
	e := setup(t)
	srv := startPingServer(t, nil, "", nil)
	out, _ := exec.Command("seq", "1", "3000").Output() // 13,893 bytes
	for _, flags := range [][]string{
		nil,
		{"--ping", srv.URL + "/check"}, // --ping-output's 10 KiB
		{"--ping", srv.URL + "/check", "--ping-output", "64"},
		{"--output-on-failure"},
	} {
		args := append(append([]string{"--record-output", "1"}, flags...), "rec", "sh", "-c", "seq 1 3000; exit 3")
		if r := e.run(args...); r.Code != 3 {
			t.Fatalf("%q: exit %d, stderr %q", flags, r.Code, r.Stderr)
		}
		st := e.run("--status", "--json", "rec")
		var got struct {
			LastRun *runJSON `json:"last_run"`
		}
		if err := json.Unmarshal([]byte(st.Stdout), &got); err != nil || got.LastRun == nil {
			t.Fatalf("%q: --status --json %q: %v", flags, st.Stdout, err)
		}
		rec := got.LastRun.Output
		start := len(out) - len(rec)
		if len(rec) > 1024 || len(rec) < 1024-len("3000\n") || !strings.HasSuffix(string(out), rec) || start < 1 || out[start-1] != '\n' {
			t.Errorf("%q: the record holds %d bytes, %q...; want the output's last lines within 1 KiB", flags, len(rec), rec[:min(len(rec), 20)])
		}
	}
}
