package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/with-lock/with-lock/internal/redistest"
)

// The output part: a command that writes 100 MB, run alone and under
// with-lock without and with its output captured (--output-on-failure,
// --record-output), its stdout read by this process as cron or systemd
// would read it. What capturing costs a command's throughput.

// pipedBytes is how much the command writes.
const pipedBytes = 100_000_000

// The row the capturing ways are compared with: with-lock as it runs
// without any of the output settings, the command writing to with-lock's
// stdout directly.
const pipedDirect = "with-lock x head"

// pipedWay is one way to run the command; code is its expected exit, out
// how many bytes it should print.
type pipedWay struct {
	name, desc string
	argv       []string
	code       int
	out        int64
}

// pipedWays are the ways, with the with-lock binary wl on srv.
func pipedWays(wl string) []pipedWay {
	head := []string{"head", "-c", strconv.Itoa(pipedBytes), "/dev/zero"}
	failing := []string{"sh", "-c", `head -c "$0" /dev/zero; exit 1`, strconv.Itoa(pipedBytes)}
	under := func(flags ...string) []string { return append(append(append([]string{wl}, flags...), "x"), head...) }
	return []pipedWay{
		{"head alone", "the command without with-lock", head, 0, pipedBytes},
		{pipedDirect, "flags off: the command writes to with-lock's stdout itself", under(), 0, pipedBytes},
		{"with-lock --output-on-failure x head", "held back in a temporary file; the run succeeds, nothing is printed",
			under("--output-on-failure"), 0, 0},
		{"with-lock --record-output 4 x head", "passed through by with-lock, its last 4 KiB kept for the record",
			under("--record-output", "4"), 0, pipedBytes},
		{"with-lock --output-on-failure x head, failing", "held back, then printed whole once the run failed",
			append(append([]string{wl}, "--output-on-failure", "x"), failing...), 1, pipedBytes},
	}
}

// runPiped builds with-lock and runs every way n times, interleaved after
// a warm-up round, and returns each way's wall times.
func runPiped(root string, srv *redistest.Server, n int) ([]pipedWay, map[string][]time.Duration, error) {
	dir, err := os.MkdirTemp("", "with-lock-bench-piped-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	wl := filepath.Join(dir, "with-lock")
	if err := goBuild(root, wl, "./cmd/with-lock"); err != nil {
		return nil, nil, err
	}
	ways := pipedWays(wl)
	env := append(os.Environ(), "WITH_LOCK_REDIS=redis://"+srv.Addr()+"/0")
	times := map[string][]time.Duration{}
	for i := range n + 1 {
		for _, w := range ways {
			d, err := runPipedOnce(w, env)
			if err != nil {
				return nil, nil, err
			}
			if i > 0 {
				times[w.name] = append(times[w.name], d)
			}
		}
	}
	return ways, times, nil
}

// runPipedOnce runs w once, reading its stdout through a pipe as fast as
// it comes, and returns how long it took until it exited and its output
// ended.
func runPipedOnce(w pipedWay, env []string) (time.Duration, error) {
	r, wr, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	cmd := exec.Command(w.argv[0], w.argv[1:]...)
	cmd.Env, cmd.Stdout = env, wr
	var stderr strings.Builder
	cmd.Stderr = &stderr
	read := make(chan int64, 1)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		wr.Close()
		return 0, err
	}
	wr.Close()
	go func() {
		n, _ := io.CopyBuffer(io.Discard, struct{ io.Reader }{r}, make([]byte, 128<<10))
		read <- n
	}()
	err = cmd.Wait()
	n := <-read
	d := time.Since(start)
	if code := cmd.ProcessState.ExitCode(); code != w.code || n != w.out {
		return 0, fmt.Errorf("%s: exit %d (%v), %d bytes out; want %d and %d\n%s", w.name, code, err, n, w.code, w.out, stderr.String())
	}
	return d, nil
}

// pipedTable is the output part's table.
func (r *results) pipedTable() string {
	if len(r.pipedWays) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n### Output: a command writing %d MB, read through a pipe\n\n", pipedBytes/1_000_000)
	b.WriteString("`head -c 100000000 /dev/zero` (8 KiB writes), its stdout a pipe this process reads in 128 KiB reads, as cron reads a job's; wall time from start to the exit and the end of the output. Ratios of medians; in brackets the median of the ratios of the two ways timed one after the other in each round.\n\n")
	direct := r.piped[pipedDirect]
	var rows [][]string
	for _, w := range r.pipedWays {
		t := r.piped[w.name]
		rows = append(rows, []string{w.name, fmtMS(median(t)), fmtMS(percentile(t, 90)),
			fmt.Sprintf("%.0f MB/s", float64(pipedBytes)/1e6/median(t).Seconds()),
			fmt.Sprintf("%.2f× (%.2f×)", float64(median(t))/float64(median(direct)), pairedRatio(t, direct)), w.desc})
	}
	b.WriteString(mdTable([]string{"way", "median", "p90", "throughput", "vs " + pipedDirect, "what"}, rows))
	return b.String()
}

// pipedTargets: capturing the output costs a command's throughput at most
// a tenth, held back or passed through.
func (r *results) pipedTargets(add func(what string, met bool, format string, args ...any)) {
	if len(r.pipedWays) == 0 {
		return
	}
	direct := r.piped[pipedDirect]
	for _, name := range []string{"with-lock --output-on-failure x head", "with-lock --record-output 4 x head"} {
		t := r.piped[name]
		ratio := pairedRatio(t, direct)
		add(fmt.Sprintf("`%s` ≤ 1.10× `%s` (100 MB)", strings.TrimSuffix(name, " x head"), pipedDirect), ratio <= 1.10,
			"%.2f× (median of paired ratios; medians %s vs %s)", ratio, fmtMS(median(t)), fmtMS(median(direct)))
	}
}
