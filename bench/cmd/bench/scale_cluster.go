package main

import (
	"bytes"
	"context"
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

// The fleet view on a Redis Cluster of clusterMasters masters, each
// holding clusterKeys keys that are not with-lock's, beside clusterLocks
// locks: what `with-lock --list` costs where the keyspace is spread over
// nodes.
const (
	clusterMasters = 3
	clusterKeys    = 2_000_000
	clusterLocks   = 1000
	clusterRuns    = 5
	clusterTarget  = 100 * time.Millisecond
)

// clusterList is what the Cluster's fleet view measured.
type clusterList struct {
	ways     []listWay
	times    map[string][]time.Duration
	cpu      map[string]float64 // redis-server CPU seconds per run, all masters
	commands map[string]float64 // commands per run, all masters
}

// runClusterList starts a Cluster, fills every master with DEBUG POPULATE
// (keys in that node's database, whatever their slot: SCAN reads them all
// the same), takes the locks as the CLI takes and renews them, and times
// the with-lock binary built from root.
func runClusterList(root string) (*clusterList, error) {
	// DEBUG POPULATE blocks a master for seconds; with the test Clusters'
	// 2s node timeout the others then mark it failed and the Cluster
	// answers CLUSTERDOWN. A minute's timeout keeps it up through the fill.
	c, stop, err := redistest.StartClusterMain(clusterMasters, "enable-debug-command", "local", "cluster-node-timeout", "60000")
	if err != nil {
		return nil, err
	}
	defer stop()
	ctx := context.Background()
	nodes := make([]*redis.Client, len(c.Nodes))
	for i, s := range c.Nodes {
		// DEBUG POPULATE of 2,000,000 keys takes seconds, more than the
		// default read timeout of 3s on a loaded machine.
		nodes[i] = redis.NewClient(&redis.Options{Addr: s.Addr(), DisableIdentity: true, ReadTimeout: time.Minute})
		defer nodes[i].Close()
		if err := nodes[i].Do(ctx, "DEBUG", "POPULATE", clusterKeys, fmt.Sprintf("cache%d", i)).Err(); err != nil {
			return nil, fmt.Errorf("DEBUG POPULATE on %s: %w", s.Addr(), err)
		}
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Seeds(), DisableIdentity: true})
	defer rdb.Close()
	lc := withlock.New(rdb, nil)
	for i := range clusterLocks {
		l, err := lc.TryAcquire(ctx, fmt.Sprintf("job-%05d", i), time.Hour, nil)
		if err != nil {
			return nil, fmt.Errorf("take lock %d of %d on the Cluster: %w", i+1, clusterLocks, err)
		}
		if err := l.Extend(ctx, time.Hour); err != nil {
			return nil, fmt.Errorf("renew lock %d of %d on the Cluster: %w", i+1, clusterLocks, err)
		}
	}

	dir, err := os.MkdirTemp("", "with-lock-bench-cluster-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	wl := filepath.Join(dir, "with-lock")
	if err := goBuild(root, wl, "./cmd/with-lock"); err != nil {
		return nil, err
	}
	conn := []string{"--cluster"}
	for _, s := range c.Seeds() {
		conn = append(conn, "--redis", "redis://"+s)
	}
	res := &clusterList{times: map[string][]time.Duration{}, cpu: map[string]float64{}, commands: map[string]float64{}}
	res.ways = []listWay{
		{name: "with-lock --cluster --list", args: []string{"--list"}},
		{name: "with-lock --cluster --list --json", args: []string{"--list", "--json"}, want: clusterLocks},
		// What every Cluster's --list cost before it read the index of
		// names: measured beside it, not a target.
		{name: "with-lock --cluster --list --scan --json", args: []string{"--list", "--scan", "--json"}, want: clusterLocks, baseline: true},
	}
	for i := range clusterRuns + 1 { // the first run warms the page cache
		for _, w := range res.ways {
			var cpu0 time.Duration
			var cmds0 int64
			for _, n := range nodes {
				cpu0 += serverCPU(n)
				cmds0 += commandsProcessed(n)
			}
			cmd := exec.Command(wl, append(append([]string{}, conn...), w.args...)...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			t0 := time.Now()
			out, err := cmd.Output()
			d := time.Since(t0)
			if err != nil {
				return nil, fmt.Errorf("%s: %w\n%s", w.name, err, stderr.String())
			}
			if n := bytes.Count(out, []byte("\n")); w.want > 0 && n != w.want {
				return nil, fmt.Errorf("%s printed %d locks, want %d", w.name, n, w.want)
			}
			if i == 0 {
				continue
			}
			var cpu time.Duration
			var cmds int64
			for _, n := range nodes {
				cpu += serverCPU(n)
				cmds += commandsProcessed(n)
			}
			res.times[w.name] = append(res.times[w.name], d)
			res.cpu[w.name] += (cpu - cpu0).Seconds() / clusterRuns
			// Less the INFO that reads the count, one per node.
			res.commands[w.name] += float64(cmds-cmds0-int64(len(nodes))) / clusterRuns
		}
	}
	return res, nil
}

func (l *clusterList) table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n### Scale: the fleet view on a Cluster of %d masters, %d locks beside %d keys on each\n\n", clusterMasters, clusterLocks, clusterKeys)
	fmt.Fprintf(&b, "A Cluster of its own (redistest), each master filled with `DEBUG POPULATE %d`, %d locks taken with `Client.TryAcquire` on a Cluster client and renewed once, as the CLI takes and renews them; the with-lock binary built from the checkout, %d runs of each way after a warm-up run. Redis CPU and commands are summed over the masters. `--list` reads the index of names (one hash, on its slot's master), then each lock's keys with one pipeline per master; `--scan` reads every key of every master instead, as every Cluster's `--list` did before the index: measured beside it, not a target.\n\n", clusterKeys, clusterLocks, clusterRuns)
	var rows [][]string
	for _, w := range l.ways {
		t := l.times[w.name]
		rows = append(rows, []string{w.name, fmtMS(median(t)), fmtMS(percentile(t, 0)) + "–" + fmtMS(percentile(t, 100)),
			fmt.Sprintf("%.0f ms", 1000*l.cpu[w.name]), fmt.Sprintf("%.0f", l.commands[w.name])})
	}
	b.WriteString(mdTable([]string{"way", "median", "min–max", "Redis CPU", "commands"}, rows))
	return b.String()
}

func (l *clusterList) targets(add func(what string, met bool, format string, args ...any)) {
	for _, w := range l.ways {
		if w.baseline {
			continue
		}
		m := median(l.times[w.name])
		add(fmt.Sprintf("`%s` on %d masters with %d locks beside %d keys each ≤ %s", strings.TrimPrefix(w.name, "with-lock "), clusterMasters, clusterLocks, clusterKeys, fmtMS(clusterTarget)),
			m <= clusterTarget, "%s (%.1f×)", fmtMS(m), float64(m)/float64(clusterTarget))
	}
}
