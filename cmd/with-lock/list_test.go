package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// lockJSON is one line of --list --json, or --status --json.
type lockJSON struct {
	Name     string     `json:"name"`
	Key      string     `json:"key"`
	Held     bool       `json:"held"`
	Holder   string     `json:"holder"`
	Host     string     `json:"host"`
	PID      int        `json:"pid"`
	TTLMs    int64      `json:"ttl_ms"`
	Fence    int64      `json:"fence"`
	Since    *time.Time `json:"since"`
	Finished bool       `json:"finished"`
	Holders  []struct {
		Slot   int    `json:"slot"`
		Holder string `json:"holder"`
	} `json:"holders"`
	LastRun *struct {
		Holder     string    `json:"holder"`
		Started    time.Time `json:"started"`
		Finished   time.Time `json:"finished"`
		DurationMs int64     `json:"duration_ms"`
		ExitCode   int       `json:"exit_code"`
		Lost       bool      `json:"lost"`
	} `json:"last_run"`
}

// parseLocks reads JSON lines, by name (by key for --status).
func parseLocks(t *testing.T, stdout string) map[string]lockJSON {
	t.Helper()
	locks := map[string]lockJSON{}
	sc := bufio.NewScanner(strings.NewReader(stdout))
	for sc.Scan() {
		var l lockJSON
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("JSON line %q: %v", sc.Text(), err)
		}
		name := l.Name
		if name == "" {
			name = l.Key
		}
		locks[name] = l
	}
	return locks
}

// seeAndClearLocks is the behaviour of --list, --break, last-run records
// and --status on the deployment that args name: the same on one Redis, a
// Cluster and a quorum.
func seeAndClearLocks(t *testing.T, args ...string) {
	wl := func(more ...string) clitest.Result {
		t.Helper()
		return clitest.Run(t, nil, append(append([]string{}, args...), more...)...)
	}

	// A run that ended leaves a record, shown by --status and --list --all.
	start := time.Now()
	if r := wl("done-job", "sh", "-c", "exit 3"); r.Code != 3 || r.Stderr != "" {
		t.Fatalf("run: exit %d, stderr %q", r.Code, r.Stderr)
	}
	r := wl("--status", "--json", "done-job")
	st := parseLocks(t, r.Stdout)["lock:done-job"]
	if r.Code != 1 || st.Held || st.LastRun == nil || st.LastRun.ExitCode != 3 || st.LastRun.Lost ||
		st.LastRun.Started.Before(start.Add(-time.Second)) || st.LastRun.Finished.Before(st.LastRun.Started) {
		t.Fatalf("--status --json after the run: exit %d, %q", r.Code, r.Stdout)
	}
	if r := wl("--status", "done-job"); r.Code != 1 || !strings.Contains(r.Stdout, "lock:done-job is free\nlast run: ") ||
		!strings.Contains(r.Stdout, ", exit 3\n") {
		t.Errorf("--status after the run: exit %d, stdout %q", r.Code, r.Stdout)
	}

	// Nothing held: --list prints nothing and exits 0; --all shows the record.
	if r := wl("--list"); r.Code != 0 || r.Stdout != "" || r.Stderr != "" {
		t.Errorf("--list with nothing held: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	r = wl("--list", "--all", "--json")
	if l, ok := parseLocks(t, r.Stdout)["done-job"]; r.Code != 0 || !ok || l.Held || l.LastRun == nil || l.LastRun.ExitCode != 3 {
		t.Errorf("--list --all --json: exit %d, stdout %q", r.Code, r.Stdout)
	}

	// A held lock is listed with its holder; --break removes it, and the
	// holder stops its command with 125 at its next renewal.
	pidfile := filepath.Join(t.TempDir(), "pids")
	holder := clitest.Start(t, nil, append(append([]string{}, args...), "--ttl", "1s", "held-job", "sh", "-c",
		`echo $$ > "$0.tmp" && mv "$0.tmp" "$0"; exec sleep 100`, pidfile)...)
	cmdPid := clitest.ReadPids(t, 10*time.Second, pidfile, 1)[0]
	host, pid := hostPid(t, holder.Pid())
	// Listed from the moment it is taken, as is a --no-renew lock, on every
	// deployment: from the index of names or by a scan.
	young := startJob(t, nil, 0, append(append([]string{}, args...), "--no-renew", "--ttl", "60s", "young-job")...)
	r = wl("--list", "--json")
	if y := parseLocks(t, r.Stdout)["young-job"]; !y.Held || y.Holder != holderOf(young.token) {
		t.Errorf("--list --json right after young-job was taken: %q", r.Stdout)
	}
	if r := young.finish(); r.Code != 0 {
		t.Errorf("young-job: exit %d, stderr %q", r.Code, r.Stderr)
	}
	l := parseLocks(t, r.Stdout)["held-job"]
	if r.Code != 0 || !l.Held || l.Holder != host+":"+pid || l.TTLMs <= 0 || l.TTLMs > 1000 {
		t.Errorf("--list --json with a holder: exit %d, stdout %q", r.Code, r.Stdout)
	}
	// Since when: from the holder's token, before this list and not long before.
	if l.Since == nil || l.Since.After(time.Now()) || time.Since(*l.Since) > time.Minute {
		t.Errorf("--list --json: since %v, want when the holder started", l.Since)
	}
	if _, ok := parseLocks(t, r.Stdout)["done-job"]; ok {
		t.Errorf("--list without --all shows a free name: %q", r.Stdout)
	}
	if r := wl("--list"); r.Code != 0 || !hasLine(r.Stdout, "held-job", host+":"+pid) || !strings.HasPrefix(r.Stdout, "NAME") {
		t.Errorf("--list: exit %d, stdout %q", r.Code, r.Stdout)
	}
	r = wl("--break", "held-job")
	if r.Code != 0 || r.Stdout != "removed lock:held-job, held by "+host+":"+pid+"\n" || r.Stderr != "" {
		t.Errorf("--break: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	res := holder.Wait(10 * time.Second)
	if res.Code != 125 || !strings.Contains(res.Stderr, "lost") {
		t.Errorf("the holder after --break: exit %d, stderr %q; want 125", res.Code, res.Stderr)
	}
	clitest.WaitDead(t, 5*time.Second, cmdPid)
	r = wl("--break", "held-job")
	if r.Code != 1 || r.Stdout != "" || !strings.Contains(r.Stderr, "not held") {
		t.Errorf("--break of a free lock: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	r = wl("--status", "--json", "held-job")
	if st := parseLocks(t, r.Stdout)["lock:held-job"]; st.LastRun == nil || st.LastRun.ExitCode != 125 || !st.LastRun.Lost ||
		st.LastRun.Holder != host+":"+pid {
		t.Errorf("--status of the broken lock: %q; want its last run lost with 125", r.Stdout)
	}

	// During --min-hold after the command ended, --status says the run
	// finished rather than naming a running holder.
	p := clitest.Start(t, nil, append(append([]string{}, args...), "--min-hold", "30s", "kept-job", "true")...)
	if res := p.Wait(10 * time.Second); res.Code != 0 {
		t.Fatalf("--min-hold run: exit %d, stderr %q", res.Code, res.Stderr)
	}
	host, pid = hostPid(t, p.Pid())
	r = wl("--status", "kept-job")
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "lock:kept-job: the run of "+host+":"+pid+" has finished; --min-hold keeps the key") ||
		!strings.Contains(r.Stdout, "\nlast run: "+host+":"+pid+", ") {
		t.Errorf("--status during --min-hold: exit %d, stdout %q", r.Code, r.Stdout)
	}
	r = wl("--status", "--json", "kept-job")
	if st := parseLocks(t, r.Stdout)["lock:kept-job"]; !st.Held || !st.Finished || st.LastRun == nil || st.LastRun.ExitCode != 0 {
		t.Errorf("--status --json during --min-hold: %q", r.Stdout)
	}
}

func TestSeeAndClearLocksOnOneRedis(t *testing.T) {
	srv := redistest.Start(t)
	seeAndClearLocks(t, "--redis", srv.URL())
}

func TestSeeAndClearLocksOnACluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	args := []string{"--cluster", "--redis-timeout", "2s"}
	for _, n := range cl.Nodes {
		args = append(args, "--redis", n.URL())
	}
	seeAndClearLocks(t, args...)

	// --list scans every master: a lock on each is listed.
	ctx := context.Background()
	c := withlock.New(cl.Client(), nil)
	onNode := map[*redistest.Server]string{}
	for i := 0; len(onNode) < 3 && i < 100; i++ {
		name := fmt.Sprint("spread-", i)
		if node := cl.NodeFor("lock:" + name); onNode[node] == "" {
			onNode[node] = name
			l, err := c.TryAcquire(ctx, name, time.Minute, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release(ctx)
		}
	}
	r := clitest.Run(t, nil, append(args, "--list", "--json")...)
	listed := parseLocks(t, r.Stdout)
	for node, name := range onNode {
		if !listed[name].Held {
			t.Errorf("--list misses %s, held on %s: %q", name, node.Addr(), r.Stdout)
		}
	}
}

func TestSeeAndClearLocksOnAQuorum(t *testing.T) {
	_, _, args, _ := quorumMasters(t)
	seeAndClearLocks(t, args...)
}

// The record is kept for --record-ttl, or not written with --no-record.
func TestRecordRetentionAndOffSwitch(t *testing.T) {
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
