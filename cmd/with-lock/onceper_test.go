package main_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/keys"
	"github.com/with-lock/with-lock/internal/redistest"
)

// midWindow is a --once-per-offset that puts now in the middle of a
// window of every, so that no boundary passes while a test runs.
func midWindow(every time.Duration) string {
	into := time.Duration(time.Now().UnixNano() % every.Nanoseconds())
	return (into - every/2).Truncate(time.Second).String()
}

// appendRun is a command that appends a line to file, then sleeps for
// sleep: two runs that overlap would both append.
func appendRun(file, sleep string) []string {
	return []string{"sh", "-c", `echo ran >> "$0"; sleep "$1"`, file, sleep}
}

// runs counts the lines appendRun wrote to file.
func runs(t *testing.T, file string) int {
	t.Helper()
	if !exists(file) {
		return 0
	}
	return strings.Count(readFile(t, file), "ran\n")
}

// Two processes that arrive together in one window run the command once:
// the second waits for the lock (-w), finds the window done and exits 0
// without a word. A later run in the window does not run either; -v says
// why, --status shows the window, --done-exit-code changes the code, and a
// key kept by --min-hold after the success is a done skip too, not busy.
func TestOncePerTwoProcessesInOneWindowRunItOnce(t *testing.T) {
	t.Parallel()
	e := setup(t)
	once := []string{"--redis", e.srv.URL(), "--once-per", "1h", "--once-per-offset", midWindow(time.Hour)}
	out := e.path("ran")
	var procs []*clitest.Proc
	for range 2 {
		procs = append(procs, clitest.Start(t, nil, append(append(once, "-w", "30s", "nightly"), appendRun(out, "1")...)...))
	}
	for i, p := range procs {
		if r := p.Wait(60 * time.Second); r.Code != 0 || r.Stderr != "" || r.Stdout != "" {
			t.Errorf("process %d: exit %d, stdout %q, stderr %q; want 0 and silence", i, r.Code, r.Stdout, r.Stderr)
		}
	}
	if n := runs(t, out); n != 1 {
		t.Fatalf("the command ran %d times in one window, want once", n)
	}

	r := clitest.Run(t, nil, append(append(once, "-v", "nightly"), appendRun(out, "0")...)...)
	if r.Code != 0 || r.Stdout != "" || !hasLine(r.Stderr, "lock:nightly already succeeded in the window starting ", "(--once-per 1h); command not run") {
		t.Errorf("-v in a done window: exit %d, stdout %q, stderr %q; want 0 and the reason", r.Code, r.Stdout, r.Stderr)
	}
	if strings.Contains(r.Stderr, "recorded") {
		t.Errorf("a done skip recorded a run: %q", r.Stderr)
	}
	r = clitest.Run(t, nil, append(append(once, "--done-exit-code", "3", "nightly"), appendRun(out, "0")...)...)
	if r.Code != 3 || r.Stderr != "" {
		t.Errorf("--done-exit-code 3: exit %d, stderr %q", r.Code, r.Stderr)
	}
	if n := runs(t, out); n != 1 {
		t.Fatalf("the command ran %d times in one window, want once", n)
	}
	r = e.run("--status", "nightly")
	if r.Code != 1 || !hasLine(r.Stdout, "done for the window starting ", " UTC, until ") {
		t.Errorf("--status: exit %d, stdout %q; want the window done", r.Code, r.Stdout)
	}
	if e.get("lock:nightly") != "" {
		t.Error("a done skip left the lock held")
	}

	held := append(once, "--min-hold", "30s", "held")
	if r := clitest.Run(t, nil, append(held, appendRun(out, "0")...)...); r.Code != 0 {
		t.Fatalf("first run under --min-hold: exit %d, stderr %q", r.Code, r.Stderr)
	}
	if r := clitest.Run(t, nil, append(held, appendRun(out, "0")...)...); r.Code != 0 || r.Stderr != "" {
		t.Errorf("a run during the min-hold after a success: exit %d, stderr %q; want a silent done skip", r.Code, r.Stderr)
	}
	if r := e.run("held", "true"); r.Code != 75 {
		t.Errorf("without --once-per during the min-hold: exit %d, want 75 (busy)", r.Code)
	}
	if n := runs(t, out); n != 2 {
		t.Errorf("the command ran %d times, want twice (once per name)", n)
	}
}

// A failed run marks nothing: the next attempt in the window runs, and
// only its success ends the window.
func TestOncePerRetriesAFailedRunInTheWindow(t *testing.T) {
	t.Parallel()
	e := setup(t)
	once := []string{"--once-per", "1h", "--once-per-offset", midWindow(time.Hour), "retry"}
	if r := e.run(append(once, "sh", "-c", "exit 3")...); r.Code != 3 {
		t.Fatalf("failing run: exit %d, stderr %q", r.Code, r.Stderr)
	}
	if v := e.get("{lock:retry}:done"); v != "" {
		t.Fatalf("a failure marked the window: %q", v)
	}
	out := e.path("ran")
	if r := e.run(append(once, appendRun(out, "0")...)...); r.Code != 0 || runs(t, out) != 1 {
		t.Fatalf("retry after a failure: exit %d, ran %d times, stderr %q; want it to run", r.Code, runs(t, out), r.Stderr)
	}
	if r := e.run(append(once, appendRun(out, "0")...)...); r.Code != 0 || runs(t, out) != 1 {
		t.Errorf("after the success: exit %d, ran %d times; want no second run", r.Code, runs(t, out))
	}
}

// A window's marker says which window it is for, so the next window runs
// again; it expires with its window plus a margin (the window's length
// up to an hour).
func TestOncePerMarkerDoesNotLeakIntoTheNextWindow(t *testing.T) {
	t.Parallel()
	e := setup(t)
	once := []string{"--once-per", "2s", "leak"}
	out := e.path("ran")
	if r := e.run(append(once, appendRun(out, "0")...)...); r.Code != 0 || runs(t, out) != 1 {
		t.Fatalf("first run: exit %d, stderr %q", r.Code, r.Stderr)
	}
	// The window the run marked, whichever it was: it may have started just
	// before or after a boundary.
	start, end, ok := strings.Cut(e.get("{lock:leak}:done"), ":")
	endMs, err := strconv.ParseInt(end, 10, 64)
	startMs, err2 := strconv.ParseInt(start, 10, 64)
	if !ok || err != nil || err2 != nil || endMs-startMs != 2000 || startMs%2000 != 0 {
		t.Fatalf("marker %q, want <start ms>:<end ms> of a 2s window aligned to the epoch", e.get("{lock:leak}:done"))
	}
	// The TTL was computed before the SET reached Redis: allow for that.
	left := time.Until(time.UnixMilli(endMs).Add(2 * time.Second))
	if ttl := e.rdb.PTTL(context.Background(), "{lock:leak}:done").Val(); ttl <= 0 || ttl > left+250*time.Millisecond {
		t.Errorf("marker TTL %s, want at most about %s (the window's end plus 2s)", ttl, left)
	}
	clitest.Eventually(t, 10*time.Second, "the marked window ended", func() bool {
		return time.Now().After(time.UnixMilli(endMs).Add(50 * time.Millisecond))
	})
	if r := e.run(append(once, appendRun(out, "0")...)...); r.Code != 0 || runs(t, out) != 2 {
		t.Errorf("in the next window: exit %d, ran %d times, stderr %q; want it to run again", r.Code, runs(t, out), r.Stderr)
	}
}

// --once-per on a Cluster and through Sentinel: the marker lives in the
// lock's slot, and a second run in the window does not run.
func TestOncePerOnAClusterAndThroughSentinel(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	cluster := []string{"--cluster", "--redis-timeout", "2s"}
	for _, n := range cl.Nodes {
		cluster = append(cluster, "--redis", n.URL())
	}
	g := redistest.StartSentinels(t)
	sentinel := []string{"--sentinel-master", redistest.MasterName, "--redis-timeout", "2s"}
	for _, a := range g.Addrs() {
		sentinel = append(sentinel, "--sentinel", a)
	}
	for name, deployment := range map[string][]string{"cluster": cluster, "sentinel": sentinel} {
		t.Run(name, func(t *testing.T) {
			out := t.TempDir() + "/ran"
			args := append(deployment, "--once-per", "1h", "--once-per-offset", midWindow(time.Hour), "--fence", "op-"+name)
			for i := range 2 {
				if r := clitest.Run(t, nil, append(args, appendRun(out, "0")...)...); r.Code != 0 || r.Stderr != "" {
					t.Fatalf("run %d: exit %d, stderr %q", i, r.Code, r.Stderr)
				}
			}
			if n := runs(t, out); n != 1 {
				t.Errorf("ran %d times in one window, want once", n)
			}
		})
	}
}

// What --once-per cannot do is a usage error (64) that says why.
func TestOncePerRefusesWhatItCannotDo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--once-per", "1h", "--slots", "2"}, "--once-per and --slots do not go together"},
		{[]string{"--once-per", "1h", "--redis", "redis://127.0.0.1:1/0", "--redis", "redis://127.0.0.1:2/0", "--redis", "redis://127.0.0.1:3/0"}, "--once-per needs one Redis deployment"},
		{[]string{"--once-per", "500ms"}, "--once-per 500ms is below 1s"},
		{[]string{"--once-per-offset", "1h"}, "--once-per-offset goes with --once-per"},
		{[]string{"--once-per", "1h", "--done-exit-code", "256"}, "--done-exit-code 256 is outside 0-255"},
	} {
		r := clitest.Run(t, nil, append(tc.args, "job", "true")...)
		if r.Code != 64 || !strings.Contains(r.Stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 64 saying %q", tc.args, r.Code, r.Stderr, tc.want)
		}
	}
}

// --once-per-offset moves the windows' edges: with an offset that puts an
// edge a second or two ahead of Redis's clock, a run just before the edge
// marks a window that ends there, and a run just after it runs again. The
// edge is placed by Redis's TIME, the clock windows are taken from. Without
// the offset both runs would fall in one clock hour and the second would
// not run.
func TestOncePerOffsetMovesTheWindowsEdge(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	const every = time.Hour
	for try := range 3 { // a run slowed past the edge by a loaded machine tries again
		now, err := e.rdb.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		edge := now.Add(2 * time.Second).Truncate(time.Millisecond)
		offset := time.Duration(edge.UnixNano() % every.Nanoseconds())
		name := "offset" + strconv.Itoa(try)
		out := e.path(name)
		once := []string{"--once-per", "1h", "--once-per-offset", offset.String(), name}
		if r := e.run(append(once, appendRun(out, "0")...)...); r.Code != 0 || runs(t, out) != 1 {
			t.Fatalf("run before the edge: exit %d, ran %d times, stderr %q", r.Code, runs(t, out), r.Stderr)
		}
		start, end, _ := strings.Cut(e.get(keys.Window("lock:"+name)), ":")
		if start == strconv.FormatInt(edge.UnixMilli(), 10) {
			continue // the run read Redis's clock after the edge
		}
		if end != strconv.FormatInt(edge.UnixMilli(), 10) {
			t.Fatalf("the run before the edge marked the window %s:%s, want one ending at the edge %d (--once-per-offset %s)",
				start, end, edge.UnixMilli(), offset)
		}
		clitest.Eventually(t, 10*time.Second, "Redis's clock passed the edge", func() bool {
			now, err := e.rdb.Time(ctx).Result()
			return err == nil && now.After(edge)
		})
		if r := e.run(append(once, appendRun(out, "0")...)...); r.Code != 0 || runs(t, out) != 2 {
			t.Errorf("run after the edge: exit %d, ran %d times in all, stderr %q; want it to run again", r.Code, runs(t, out), r.Stderr)
		}
		if start, _, _ := strings.Cut(e.get(keys.Window("lock:"+name)), ":"); start != strconv.FormatInt(edge.UnixMilli(), 10) {
			t.Errorf("the run after the edge marked the window starting %s, want the edge %d", start, edge.UnixMilli())
		}
		return
	}
	t.Fatal("three runs in a row reached Redis only after an edge two seconds ahead")
}
