package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// The start-up cost of each way with-lock follows a job. On this machine
// (cgroups, no systemd) the CLI table has the host's ways; under systemd
// the job gets a scope of its own over D-Bus, which only a booted systemd
// can show: the beds module's BenchmarkStartUpByTrackingUnderSystemd
// boots Debian 12's (systemd-nspawn) and times `with-lock x true` in a
// service with each --tracking mode, inside the machine. It needs root,
// the beds' packages and make image's static binary (make bench builds
// it); where it cannot run, the report says why.

// trackingModes are the benchmark's metrics, in the table's order, with
// what each row is.
var trackingModes = []struct{ metric, way, what string }{
	{"subreaper-ms", "--tracking subreaper", "the subreaper alone, in the service's group"},
	{"cgroup-ms", "--tracking cgroup", "a group below the service's own, which systemd's rules forbid where it did not delegate; no D-Bus"},
	{"auto-ms", "auto: a scope", "a transient scope of the job's own, asked of systemd over D-Bus (the default under systemd)"},
	{"delegated-auto-ms", "auto, Delegate=yes", "in a service that delegated: auto makes the group below it; against the subreaper alone in that service, timed beside it"},
	{"version-ms", "with-lock --version", "start-up and exit only, for scale"},
}

// trackingResult is the benchmark's medians by metric, or why it did not
// run.
type trackingResult struct {
	ms      map[string]float64
	skipped string
}

// runTracking runs the beds' benchmark and reads its metrics.
func runTracking(root string) *trackingResult {
	if os.Geteuid() != 0 {
		return &trackingResult{skipped: "not root: the beds boot a systemd-nspawn machine"}
	}
	cmd := exec.Command("go", "test", "-count=1", "-run", "^$", "-bench", "BenchmarkStartUpByTrackingUnderSystemd",
		"-benchtime", "1x", "-timeout", "20m", "./systemd")
	cmd.Dir = filepath.Join(root, "beds")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return &trackingResult{skipped: fmt.Sprintf("the beds' benchmark failed: %v: %s", err, lastLines(out, 5))}
	}
	res := &trackingResult{ms: map[string]float64{}}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || !strings.HasPrefix(f[0], "BenchmarkStartUpByTrackingUnderSystemd") {
			continue
		}
		for i := 2; i+1 < len(f); i += 2 { // "N ns/op" first, then "value unit" pairs
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				res.ms[f[i+1]] = v
			}
		}
	}
	if len(res.ms) == 0 {
		return &trackingResult{skipped: "no figures in the beds' benchmark's output: " + lastLines(out, 5)}
	}
	return res
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " / ")
}

// trackingTable is the part's table.
func (r *results) trackingTable() string {
	t := r.tracking
	if t == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n### Start-up by tracking mode, under systemd: `with-lock x true` in a service\n\n")
	if t.skipped != "" {
		fmt.Fprintf(&b, "Not measured in this run: %s.\n", t.skipped)
		return b.String()
	}
	b.WriteString("Timed inside a booted Debian 12 (systemd 252, systemd-nspawn; beds/systemd/startup_bench_test.go): " +
		"15 rounds, in each a batch of 10 runs of every mode, one after the other; the median of the batches' mean per run. " +
		"A scope's cost is the D-Bus round trip and systemd's start of the unit, before the command starts; a run that does not get the lock asks for none. " +
		"`--tracking cgroup` or `subreaper` is the way out where that matters.\n\n")
	base := t.ms["subreaper-ms"]
	var rows [][]string
	for _, m := range trackingModes {
		v, ok := t.ms[m.metric]
		if !ok {
			continue
		}
		vs, base := "—", base
		if m.metric == "delegated-auto-ms" {
			base = t.ms["delegated-subreaper-ms"]
		}
		if base > 0 && m.metric != "version-ms" {
			vs = fmt.Sprintf("%+.2f ms (%.2f×)", v-base, v/base)
		}
		rows = append(rows, []string{m.way, fmt.Sprintf("%.2f ms", v), vs, m.what})
	}
	b.WriteString(mdTable([]string{"way", "median", "vs the subreaper alone", "what"}, rows))
	return b.String()
}
