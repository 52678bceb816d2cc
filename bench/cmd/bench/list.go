package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/redistest"
)

// The fleet view at the size of a real Redis (issue 17): locks beside
// millions of keys that are not with-lock's, as on a shared cache.
const (
	listTarget   = 50 * time.Millisecond
	listFinished = 20 // names with a last-run record and no lock, for --all
)

// listBaseline names a git revision whose with-lock also runs each way,
// interleaved with the checkout's, so that a change's gain is measured in
// one run on one load: -list-baseline main, say.
var listBaseline = flag.String("list-baseline", "", "also time the fleet view's ways with with-lock built at this git `REV`, interleaved (for a change's gain)")

// listWay is one invocation of the fleet view and how many JSON lines it
// must print: a fast but wrong list is no gain.
type listWay struct {
	name   string
	bin    string // the with-lock binary
	args   []string
	want   int  // lines of output; 0 for a table (not counted)
	plugin bool // exits as a Nagios plugin: 0 to 3 are all answers
	// baseline is a way of the -list-baseline binary: measured, not a target.
	baseline bool
}

// listResult is what the list part measured.
type listResult struct {
	keys, locks int // unrelated keys and locks held
	ways        []listWay
	times       map[string][]time.Duration
	ownCPU      map[string][]time.Duration // the with-lock process's user+system time per run
	cpu         map[string]float64         // Redis CPU seconds per run (INFO cpu delta)
	commands    map[string]float64         // Redis commands per run
}

// runList fills a redis-server of its own with c.listKeys unrelated keys
// (DEBUG POPULATE), takes c.listLocks locks with the library as a CLI run
// takes them (TryAcquire under the default prefix, never renewed: every
// lock as young as a run that just started, with whatever its acquisition
// writes for the fleet view) and ends listFinished runs of the CLI so that
// --all has last-run records, then times the with-lock binary built from
// the checkout, which must print every lock: whatever --list does, this
// measures.
func runList(c config) (*listResult, error) {
	srv, stop, err := redistest.StartMain("enable-debug-command", "local")
	if err != nil {
		return nil, err
	}
	defer stop()
	// DEBUG POPULATE of millions of keys takes seconds on a loaded machine.
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true, ReadTimeout: 5 * time.Minute})
	defer rdb.Close()
	ctx := context.Background()

	dir, err := os.MkdirTemp("", "with-lock-bench-list-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	wl := filepath.Join(dir, "with-lock")
	if err := goBuild(c.root, wl, "./cmd/with-lock"); err != nil {
		return nil, err
	}
	base := filepath.Join(dir, "with-lock-base")
	if *listBaseline != "" {
		src, err := checkout(c.root, *listBaseline, filepath.Join(dir, "base-src"))
		if err != nil {
			return nil, err
		}
		if err := goBuild(src, base, "./cmd/with-lock"); err != nil {
			return nil, err
		}
	}
	env := append(os.Environ(), "WITH_LOCK_REDIS=redis://"+srv.Addr()+"/0")

	start := time.Now()
	if err := rdb.Do(ctx, "DEBUG", "POPULATE", c.listKeys, "cache").Err(); err != nil {
		return nil, fmt.Errorf("DEBUG POPULATE %d: %w", c.listKeys, err)
	}
	lc := withlock.New(rdb, nil)
	for i := range c.listLocks {
		if _, err := lc.TryAcquire(ctx, fmt.Sprintf("job-%05d", i), time.Hour, nil); err != nil {
			return nil, fmt.Errorf("take lock %d of %d: %w", i+1, c.listLocks, err)
		}
	}
	for i := range listFinished {
		cmd := exec.Command(wl, fmt.Sprintf("done-%02d", i), "true")
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("with-lock done-%02d true: %w\n%s", i, err, out)
		}
	}
	size, err := rdb.DBSize(ctx).Result()
	if err != nil {
		return nil, err
	}
	fmt.Printf("  %d keys in the database after %s\n", size, time.Since(start).Round(time.Millisecond))

	res := &listResult{keys: c.listKeys, locks: c.listLocks,
		times: map[string][]time.Duration{}, ownCPU: map[string][]time.Duration{}, cpu: map[string]float64{}, commands: map[string]float64{}}
	res.ways = []listWay{
		{name: "with-lock --list", bin: wl, args: []string{"--list"}},
		{name: "with-lock --list --json", bin: wl, args: []string{"--list", "--json"}, want: c.listLocks},
		{name: "with-lock --list --all --json", bin: wl, args: []string{"--list", "--all", "--json"}, want: c.listLocks + listFinished},
	}
	// --check (issue 17, item 4) reads one name's records fleet-wide; it
	// is timed where the binary has it.
	if help, _ := exec.Command(wl, "--help").CombinedOutput(); bytes.Contains(help, []byte("--check")) {
		res.ways = append(res.ways, listWay{name: "with-lock --check done-00", bin: wl, args: []string{"--check", "done-00"}, plugin: true})
	}
	if *listBaseline != "" {
		for _, w := range res.ways { // the ways as they are now: range reads them once
			w.name, w.bin, w.baseline = w.name+" at "+*listBaseline, base, true
			res.ways = append(res.ways, w)
		}
	}
	for i := range c.listRuns + 1 { // the first run warms the page cache
		for _, w := range res.ways {
			cpu0, cmds0 := serverCPU(rdb), commandsProcessed(rdb)
			cmd := exec.Command(w.bin, w.args...)
			cmd.Env = env
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			t0 := time.Now()
			out, err := cmd.Output()
			d := time.Since(t0)
			if code := cmd.ProcessState.ExitCode(); err != nil && !(w.plugin && code >= 0 && code <= 3) {
				return nil, fmt.Errorf("%s: %w\n%s", w.name, err, stderr.String())
			}
			if n := bytes.Count(out, []byte("\n")); w.want > 0 && n != w.want {
				return nil, fmt.Errorf("%s printed %d locks, want %d", w.name, n, w.want)
			}
			if i == 0 {
				continue
			}
			res.times[w.name] = append(res.times[w.name], d)
			res.ownCPU[w.name] = append(res.ownCPU[w.name], cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
			// Less the INFO that reads the count.
			res.cpu[w.name] += (serverCPU(rdb) - cpu0).Seconds() / float64(c.listRuns)
			res.commands[w.name] += float64(commandsProcessed(rdb)-cmds0-1) / float64(c.listRuns)
		}
	}
	return res, nil
}

func (r *results) listTable() string {
	l := r.list
	if l == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n### Fleet view: %d locks beside %d unrelated keys\n\n", l.locks, l.keys)
	fmt.Fprintf(&b, "A redis-server of its own filled with `DEBUG POPULATE %d cache`, %d locks taken with `Client.TryAcquire` and never renewed (each as young as a run that just started) and %d names with a last-run record only; the with-lock binary built from the checkout, %d runs of each way, interleaved, each checked to print every lock. Its CPU is the with-lock process's user+system time (median), which a loaded machine moves less than the wall time; Redis CPU is the server's user+system time per run (INFO cpu), commands its total_commands_processed per run.\n\n",
		l.keys, l.locks, listFinished, r.cfg.listRuns)
	var rows [][]string
	for _, w := range l.ways {
		t := l.times[w.name]
		rows = append(rows, []string{w.name, fmtMS(median(t)), fmtMS(percentile(t, 0)) + "–" + fmtMS(percentile(t, 100)),
			fmtMS(median(l.ownCPU[w.name])), fmt.Sprintf("%.0f ms", 1000*l.cpu[w.name]), fmt.Sprintf("%.0f", l.commands[w.name])})
	}
	b.WriteString(mdTable([]string{"way", "median", "min–max", "its CPU", "Redis CPU", "commands"}, rows))
	for _, w := range l.ways {
		if base := l.times[w.name+" at "+*listBaseline]; !w.baseline && len(base) > 0 {
			fmt.Fprintf(&b, "\n`%s` over the same at %s: %.3f× (median of paired ratios), medians %s vs %s\n",
				w.name, *listBaseline, pairedRatio(l.times[w.name], base), fmtMS(median(l.times[w.name])), fmtMS(median(base)))
		}
	}
	return b.String()
}

// listTargets is issue 17's: the fleet view costs O(locks), not O(keys).
func (r *results) listTargets(add func(what string, met bool, format string, args ...any)) {
	if r.list == nil {
		return
	}
	for _, w := range r.list.ways {
		if strings.Contains(w.name, "--all") || w.baseline {
			continue // not one of the targets; the baseline is there to compare
		}
		m := median(r.list.times[w.name])
		add(fmt.Sprintf("`%s` with %d locks beside %d keys ≤ %s", strings.TrimPrefix(w.name, "with-lock "), r.list.locks, r.list.keys, fmtMS(listTarget)),
			m <= listTarget, "%s (%.1f×)", fmtMS(m), float64(m)/float64(listTarget))
	}
}
