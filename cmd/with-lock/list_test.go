package main_test

// --list and --break: what is shown on one Redis, a Cluster and a quorum,
// and keys of other programs.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
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
	t.Parallel()
	srv := redistest.Start(t)
	seeAndClearLocks(t, "--redis", srv.URL())
}

func TestSeeAndClearLocksOnACluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	args := []string{"--cluster", "--redis-timeout", "2s"}
	for _, n := range cl.Nodes {
		args = append(args, "--redis", n.URL())
	}
	seeAndClearLocks(t, args...)

	// --list reads the index on its master and the locks on theirs: a lock
	// on each master is listed.
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
	t.Parallel()
	_, _, args, _ := quorumMasters(t)
	seeAndClearLocks(t, args...)
}

// --list --scan shows a lock whose key holds a token that is not ours, as
// text and as --json: one from another host with its host:pid and time
// left, and a value in no format without expiry as held by "unknown", never
// expiring; the foreign token's secret part is never printed.
func TestListShowsForeignToken(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	if err := e.rdb.Set(ctx, "lock:other-job", foreign, 30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if err := e.rdb.Set(ctx, "lock:odd-job", "no-format", 0).Err(); err != nil {
		t.Fatal(err)
	}

	r := e.run("--list", "--scan")
	t.Logf("--list --scan:\n%s", r.Stdout)
	if r.Code != 0 || r.Stderr != "" || !strings.HasPrefix(r.Stdout, "NAME") {
		t.Errorf("--list --scan: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n")[1:] {
		f := strings.Fields(line)
		rows[f[0]] = f
	}
	// NAME HOLDER HELD-FOR EXPIRES-IN FENCE LAST-RUN
	if f := rows["other-job"]; len(f) != 6 || f[1] != "otherhost:4242" || f[2] != "-" || !strings.HasSuffix(f[3], "s") || f[3] == "never" {
		t.Errorf("--list row of another host's lock: %q, want held by otherhost:4242 with time left", f)
	}
	if f := rows["odd-job"]; len(f) != 6 || f[1] != "unknown" || f[2] != "-" || f[3] != "never" {
		t.Errorf("--list row of a value in no format: %q, want held by unknown, never expiring", f)
	}
	if len(rows) != 2 {
		t.Errorf("--list has %d rows, want 2: %q", len(rows), r.Stdout)
	}

	r = e.run("--list", "--scan", "--json")
	locks := parseLocks(t, r.Stdout)
	if l, ok := locks["other-job"]; r.Code != 0 || !ok || !l.Held || l.Key != "lock:other-job" || l.Holder != "otherhost:4242" ||
		l.Host != "otherhost" || l.PID != 4242 || l.TTLMs <= 0 || l.TTLMs > 30000 || l.Since != nil {
		t.Errorf("--list --json, another host's lock: exit %d, %+v", r.Code, l)
	}
	if l, ok := locks["odd-job"]; !ok || !l.Held || l.Holder != "unknown" || l.Host != "" || l.PID != 0 || l.TTLMs != -1 {
		t.Errorf("--list --json, a value in no format: %+v, want held by unknown, ttl_ms -1", l)
	}
	if len(locks) != 2 {
		t.Errorf("--list --json has %d locks, want 2: %q", len(locks), r.Stdout)
	}
	for _, out := range []string{r.Stdout, e.run("--list", "--scan").Stdout} {
		if strings.Contains(out, foreignSecret) {
			t.Errorf("--list shows the foreign token's secret part: %q", out)
		}
	}
}

// A key another program set under the prefix (as the seed's bash way does,
// redis-cli SET lock:x ...) is in no index of names: --list, which reads
// the index, tells a terminal so in one line after the table, naming
// --list --scan, which shows the key (and needs no such line); a pipe gets
// the rows alone.
func TestListSaysHowToSeeKeysOfOtherPrograms(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	if r := e.run("ours", "true"); r.Code != 0 { // the index holds a name
		t.Fatalf("exit %d, stderr %q", r.Code, r.Stderr)
	}
	ours := e.startJob(0, "held-by-us")
	defer ours.finish()
	if err := e.rdb.Set(ctx, "lock:by-bash", foreign, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	const note = "(keys other programs set under lock: are not listed: with-lock --list --scan shows them)"
	terminal := func(args ...string) string {
		pty := clitest.OpenPTY(t)
		p := clitest.Spec{Env: redisEnv(e.srv), Terminal: pty, Args: args}.Start(t)
		if r := p.Wait(clitest.RunTimeout); r.Code != 0 {
			t.Fatalf("%q: exit %d", args, r.Code)
		}
		out := ""
		clitest.Eventually(t, 10*time.Second, "the terminal shows the table", func() bool {
			out = p.Stdout()
			return strings.Contains(out, "held-by-us")
		})
		return strings.ReplaceAll(out, "\r\n", "\n")
	}
	if out := terminal("--list"); !strings.HasSuffix(out, "\n"+note+"\n") || strings.Contains(out, "by-bash") {
		t.Errorf("--list in a terminal:\n%s\nwant our lock, not lock:by-bash, and last the line %q", out, note)
	}
	if out := terminal("--list", "--scan"); !strings.Contains(out, "by-bash") || strings.Contains(out, note) {
		t.Errorf("--list --scan in a terminal:\n%s\nwant lock:by-bash listed and no note", out)
	}
	if r := e.run("--list"); r.Code != 0 || r.Stderr != "" || strings.Contains(r.Stdout, note) || !strings.Contains(r.Stdout, "held-by-us") {
		t.Errorf("--list in a pipe: exit %d, stdout %q, stderr %q; want the rows alone", r.Code, r.Stdout, r.Stderr)
	}
}

// A lock is in --list and --list --json from the moment it is taken, once
// the index of names holds other names and long before any renewal,
// whatever its flags: a plain run, --no-renew, a long --ttl, --slots,
// --fence, --min-hold, --once-per, and a waiter handed the lock in the fair
// line (-w). Each is listed as soon as its command runs, with its holder.
func TestListShowsALockFromTheMomentItIsTaken(t *testing.T) {
	t.Parallel()
	e := setup(t)
	if r := e.run("earlier", "true"); r.Code != 0 { // the index holds a name
		t.Fatalf("exit %d, stderr %q", r.Code, r.Stderr)
	}
	check := func(t *testing.T, name string, j *job) {
		t.Helper()
		host, pid := hostPid(t, j.Pid())
		r := e.run("--list", "--json")
		l, ok := parseLocks(t, r.Stdout)[name]
		holders := []string{l.Holder}
		for _, h := range l.Holders { // a semaphore's
			holders = append(holders, h.Holder)
		}
		if r.Code != 0 || !ok || !l.Held || !slices.Contains(holders, host+":"+pid) {
			t.Errorf("--list --json while %s runs: exit %d, stdout %q; want it held by %s:%s", name, r.Code, r.Stdout, host, pid)
		}
		if r := e.run("--list"); r.Code != 0 || !hasLine(r.Stdout, name, host+":"+pid) {
			t.Errorf("--list while %s runs: exit %d, stdout %q", name, r.Code, r.Stdout)
		}
	}
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"plain", nil},
		{"no-renew", []string{"--no-renew", "--ttl", "60s"}},
		{"long-ttl", []string{"--ttl", "10m"}},
		{"slots", []string{"--slots", "2"}},
		{"fenced", []string{"--fence"}},
		{"min-hold", []string{"--min-hold", "1m"}},
		{"once-per", []string{"--once-per", "1h"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := e.startJob(0, append(tc.flags, tc.name)...)
			check(t, tc.name, j)
			if r := j.finish(); r.Code != 0 {
				t.Errorf("the run: exit %d, stderr %q", r.Code, r.Stderr)
			}
		})
	}

	t.Run("handed over in the fair line", func(t *testing.T) {
		holder := e.startJob(0, "handed")
		dir := t.TempDir()
		waiter := &job{t: t, dir: dir, Proc: clitest.Start(t, nil, "--redis", e.srv.URL(), "-w", "20s", "handed",
			"sh", "-c", jobScript, "sh", dir, "0")}
		clitest.Eventually(t, 10*time.Second, "the waiter queued", func() bool {
			return e.rdb.LLen(context.Background(), "{lock:handed}:q").Val() == 1
		})
		if r := holder.finish(); r.Code != 0 {
			t.Fatalf("the holder: exit %d, stderr %q", r.Code, r.Stderr)
		}
		waiter.WaitFile(filepath.Join(dir, "info"))
		check(t, "handed", waiter)
		if r := waiter.finish(); r.Code != 0 || strings.TrimSpace(r.Stderr) != "" {
			t.Errorf("the waiter: exit %d, stderr %q", r.Code, r.Stderr)
		}
	})
}

// --list with nothing held tells a person at a terminal so, and gives a
// pipe nothing, as a script counting rows expects.
func TestListWithNothingHeld(t *testing.T) {
	t.Parallel()
	e := setup(t)
	t.Run("pipe", func(t *testing.T) {
		for _, args := range [][]string{{"--list"}, {"--list", "--all"}, {"--list", "--json"}} {
			r := e.run(args...)
			if r.Code != 0 || r.Stdout != "" || r.Stderr != "" {
				t.Errorf("%v: exit %d, stdout %q, stderr %q: want 0 and nothing", args, r.Code, r.Stdout, r.Stderr)
			}
		}
	})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--list"}, "no locks held under lock:"},
		{[]string{"--list", "--all"}, "no locks held and no last runs under lock:"},
	} {
		t.Run("terminal "+strings.Join(tc.args, " "), func(t *testing.T) {
			pty := clitest.OpenPTY(t)
			p := clitest.Spec{Env: redisEnv(e.srv), Terminal: pty, Args: tc.args}.Start(t)
			r := p.Wait(clitest.RunTimeout)
			if r.Code != 0 {
				t.Errorf("exit %d, want 0", r.Code)
			}
			clitest.Eventually(t, 10*time.Second, "the terminal never showed "+tc.want, func() bool {
				return strings.Contains(p.Stdout(), tc.want)
			})
		})
	}
}
