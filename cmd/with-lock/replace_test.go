package main_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
)

// replacedJob is a command that ignores SIGTERM, so only SIGKILL ends it,
// and checks that the job before it is gone: it reads the pids of the last
// run's shell and child from "$1/last" and appends any still alive to
// "$1/overlaps", then writes its own and appends them to "$1/runs".
const replacedJob = `for p in $(cat "$1/last" 2>/dev/null); do kill -0 "$p" 2>/dev/null && echo "$p" >> "$1/overlaps"; done
trap '' TERM
sleep 600 &
echo "$$ $!" > "$1/last"
echo "$$ $!" >> "$1/runs"
wait`

// Runs with --replace from four racing loops, each starting the next as
// soon as its last one ends, replace one another's jobs, which ignore
// SIGTERM: each replaced holder says who replaced it and exits 125 once
// --kill-after's SIGKILL ended its job, and each new run starts only after
// every process of the job before it is gone. A replacement costs up to a
// renewal interval (a third of the TTL, which must stay long enough for
// renewals on a loaded machine) plus --kill-after and two start-ups, about
// 0.55 s here: 200 would take two minutes, so 12 keep the test to seconds;
// `make replace-churn` runs 200 (WITH_LOCK_REPLACEMENTS).
func TestReplaceStopsTheHolderBeforeTheNextRunStarts(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("needs redis-server")
	}
	const hosts = 4
	replacements := 12
	if n, err := strconv.Atoi(os.Getenv("WITH_LOCK_REPLACEMENTS")); err == nil && n > 0 {
		replacements = n
	}
	// A replacement takes about half a second, twice that under load.
	endBy := 60*time.Second + time.Duration(replacements)*time.Second
	e := setup(t)
	host, _ := hostPid(t, 0)
	dir := t.TempDir()
	runs := func() int {
		b, _ := os.ReadFile(filepath.Join(dir, "runs"))
		return strings.Count(string(b), "\n")
	}
	var mu sync.Mutex
	stopped := false
	current := make([]*clitest.Proc, hosts)
	var replaced, other []string // stderr of the runs that ended
	gaveUp := 0
	var wg sync.WaitGroup
	for i := range hosts {
		wg.Go(func() {
			for {
				mu.Lock()
				if stopped {
					mu.Unlock()
					return
				}
				p := clitest.Start(t, nil, "--redis", e.srv.URL(), "--replace", "--ttl", "1s", "--kill-after", "100ms",
					"--stop-timeout", "100ms", "-w", "20s", "replaced", "sh", "-c", replacedJob, "sh", dir)
				current[i] = p
				mu.Unlock()
				select {
				case <-p.Done():
				case <-time.After(30 * time.Second):
					return // the test fails below, having waited for this
				}
				res := p.Wait(time.Second)
				mu.Lock()
				switch {
				case res.Code == 125 && hasLine(res.Stderr, "lock:replaced", "lost: replaced by "+host+":", "with --replace", "SIGKILL after 100ms"):
					replaced = append(replaced, res.Stderr)
				case res.Code == 75 && hasLine(res.Stderr, "gave up waiting for lock:replaced"):
					// Overtaken in line by newer replacers, each of
					// which goes first, until its -w ran out: a
					// defined end, and no overlap.
					gaveUp++
				case !stopped:
					other = append(other, strconv.Itoa(res.Code)+" "+res.Stderr)
				}
				mu.Unlock()
			}
		})
	}
	clitest.Eventually(t, endBy, "the replacements never reached their count", func() bool { return runs() >= replacements })
	// The end: SIGTERM to every run. A waiting one leaves the line; the
	// holder forwards it, and its job, ignoring it, is killed after
	// --stop-timeout before the release hands the lock on, so the check
	// holds to the last run.
	mu.Lock()
	stopped = true
	for _, p := range current {
		if p != nil {
			// One that ended meanwhile says os.ErrProcessDone.
			_ = p.Cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	mu.Unlock()
	ended := make(chan struct{})
	go func() { wg.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(30 * time.Second):
		t.Fatal("the runs did not end after SIGTERM")
	}
	if b, err := os.ReadFile(filepath.Join(dir, "overlaps")); err == nil {
		t.Errorf("runs started while the job before them was alive (pids %q)", strings.Fields(string(b)))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(other) > 0 {
		t.Errorf("%d runs ended otherwise than replaced (exit 125, \"replaced by %s:<pid> with --replace\"), first: %q", len(other), host, other[0])
	}
	if len(replaced) < replacements-hosts {
		t.Errorf("%d runs were replaced, want at least %d", len(replaced), replacements-hosts)
	}
	t.Logf("%d runs, %d replaced, %d gave up waiting", runs(), len(replaced), gaveUp)
}

// --replace is refused, with exit 64 and one line saying why, where it
// cannot put the replacing run first in a fair line (a quorum), and when
// told not to wait.
func TestReplaceRefusedWhereItCannotGoFirst(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		says string
	}{
		{"quorum", []string{"--redis", "redis://127.0.0.1:1", "--redis", "redis://127.0.0.1:2", "--redis", "redis://127.0.0.1:3"}, "not a quorum of masters"},
		{"nonblock", []string{"--redis", "redis://127.0.0.1:1", "-n"}, "give -w a positive DUR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := clitest.Run(t, nil, append(tt.args, "--replace", "job", "true")...)
			if res.Code != 64 || !hasLine(res.Stderr, "--replace", tt.says) || strings.Count(strings.TrimSpace(res.Stderr), "\n") > 1 {
				t.Errorf("exit %d, stderr %q; want 64 and a line with %q", res.Code, res.Stderr, tt.says)
			}
		})
	}
}

// fencedJob writes the fencing number its run was given to "$1/$2", then
// waits for a signal.
const fencedJob = `echo "$WITH_LOCK_FENCE" > "$1/$2.tmp" && mv "$1/$2.tmp" "$1/$2"; exec sleep 600`

// A run with --replace --fence gets a fencing number above the replaced
// run's, and runs once that one has stopped (125, "replaced by").
func TestReplaceWithFenceGivesTheNewRunAHigherNumber(t *testing.T) {
	t.Parallel()
	e := setup(t)
	dir := t.TempDir()
	old := clitest.Start(t, nil, "--redis", e.srv.URL(), "--fence", "--ttl", "1s", "fenced-replace", "sh", "-c", fencedJob, "sh", dir, "old")
	old.WaitFile(filepath.Join(dir, "old"))
	res := e.run("--fence", "--replace", "--ttl", "1s", "fenced-replace", "sh", "-c", `echo "$WITH_LOCK_FENCE" > "$1/new"`, "sh", dir)
	if res.Code != 0 {
		t.Fatalf("--replace --fence: exit %d, stderr %q", res.Code, res.Stderr)
	}
	if r := old.Wait(10 * time.Second); r.Code != 125 || !hasLine(r.Stderr, "replaced by") {
		t.Errorf("the replaced run: exit %d, stderr %q; want 125, replaced by", r.Code, r.Stderr)
	}
	before, err1 := strconv.ParseInt(strings.TrimSpace(readFile(t, filepath.Join(dir, "old"))), 10, 64)
	after, err2 := strconv.ParseInt(strings.TrimSpace(readFile(t, filepath.Join(dir, "new"))), 10, 64)
	if err1 != nil || err2 != nil || after <= before {
		t.Errorf("WITH_LOCK_FENCE: the replaced run had %d (%v), the new one %d (%v); want the new one higher", before, err1, after, err2)
	}
}

// --replace --min-replicas waits for the replicas as any run does: with
// too few it exits 69 without running the command, whether it took the
// free lock or was handed it by the run it replaced, and leaves the lock
// free.
func TestReplaceWithMinReplicasExits69WithTooFew(t *testing.T) {
	t.Parallel()
	e := setup(t) // a server without replicas
	for _, held := range []bool{false, true} {
		var old *clitest.Proc
		if held {
			dir := t.TempDir()
			old = clitest.Start(t, nil, "--redis", e.srv.URL(), "--ttl", "1s", "replicated-replace", "sh", "-c", fencedJob, "sh", dir, "old")
			old.WaitFile(filepath.Join(dir, "old"))
		}
		res := e.run("--replace", "--min-replicas", "1", "--ttl", "1s", "replicated-replace", "touch", e.path("ran"))
		if res.Code != 69 || e.exists("ran") || !hasLine(res.Stderr, "of the 1 replicas") {
			t.Errorf("held %v: exit %d (ran %v), stderr %q; want 69, not run", held, res.Code, e.exists("ran"), res.Stderr)
		}
		if old != nil {
			if r := old.Wait(10 * time.Second); r.Code != 125 {
				t.Errorf("the replaced run: exit %d, stderr %q; want 125", r.Code, r.Stderr)
			}
		}
		e.gone(t, "lock:replicated-replace")
	}
}

// --replace --slots N stops the oldest of the N holders, and only it: the
// new run takes its slot while the younger holder keeps running.
func TestReplaceWithSlotsStopsTheOldestHolder(t *testing.T) {
	t.Parallel()
	e := setup(t)
	dir := t.TempDir()
	holders := make([]*clitest.Proc, 2)
	for i, who := range []string{"oldest", "younger"} {
		holders[i] = clitest.Start(t, nil, "--redis", e.srv.URL(), "--slots", "2", "--ttl", "1s", "slots-replace", "sh", "-c", fencedJob, "sh", dir, who)
		holders[i].WaitFile(filepath.Join(dir, who))
	}
	res := e.run("--slots", "2", "--replace", "--ttl", "1s", "slots-replace", "touch", e.path("ran"))
	if res.Code != 0 || !e.exists("ran") {
		t.Fatalf("--replace --slots 2: exit %d, stderr %q", res.Code, res.Stderr)
	}
	if r := holders[0].Wait(10 * time.Second); r.Code != 125 || !hasLine(r.Stderr, "replaced by") {
		t.Errorf("the oldest holder: exit %d, stderr %q; want 125, replaced by", r.Code, r.Stderr)
	}
	// A younger holder asked to stop would have read it by its second
	// renewal since (each renewal sets its slot's PTTL back up).
	renewals, last := 0, time.Duration(0)
	clitest.Eventually(t, 10*time.Second, "the younger holder stopped renewing", func() bool {
		var d time.Duration
		for _, slot := range []string{"1", "2"} {
			d = max(d, e.rdb.PTTL(context.Background(), "{lock:slots-replace}:s:"+slot).Val())
		}
		if d > last {
			renewals++
		}
		last = d
		return renewals > 2 || holders[1].Exited()
	})
	if holders[1].Exited() {
		r := holders[1].Wait(time.Second)
		t.Fatalf("the younger holder ended too: exit %d, stderr %q", r.Code, r.Stderr)
	}
	holders[1].Signal(syscall.SIGTERM)
	holders[1].Wait(10 * time.Second)
}
