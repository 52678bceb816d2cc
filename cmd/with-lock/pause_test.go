package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
)

// pauseHosts is how many hosts' runs meet one pause at once.
const pauseHosts = 8

// runEverywhere starts pauseHosts runs of name at once, each with its own
// marker, and returns how each ended and whether its command ran.
func (e *env) runEverywhere(t *testing.T, name string, flags ...string) ([]clitest.Result, []bool) {
	t.Helper()
	results := make([]clitest.Result, pauseHosts)
	markers := make([]string, pauseHosts)
	var wg sync.WaitGroup
	for i := range pauseHosts {
		markers[i] = filepath.Join(e.dir, fmt.Sprintf("ran-%s-%d", name, i))
		wg.Go(func() {
			args := append(append([]string{"--redis", e.srv.URL()}, flags...), name, "touch", markers[i])
			results[i] = clitest.Run(t, nil, args...)
		})
	}
	wg.Wait()
	ran := make([]bool, pauseHosts)
	for i, m := range markers {
		ran[i] = exists(m)
	}
	return results, ran
}

// pauser runs --pause or --resume as the user alice, so that the refusals
// can be checked for her name.
func (e *env) pauser(args ...string) clitest.Result {
	e.t.Helper()
	return clitest.Run(e.t, []string{"USER=alice"}, append([]string{"--redis", e.srv.URL()}, args...)...)
}

// A pause stops every host's runs, each with one line that names who
// paused, since when and why, until --resume; then they run again.
func TestPauseRefusesEveryHostUntilResume(t *testing.T) {
	t.Parallel()
	e := setup(t)
	host, _ := os.Hostname()
	if r := e.pauser("--pause", "--reason", "db migration", "nightly"); r.Code != 0 || !strings.Contains(r.Stdout, "paused lock:nightly until --resume") {
		t.Fatalf("--pause: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	results, ran := e.runEverywhere(t, "nightly")
	for i, r := range results {
		if r.Code != 75 || ran[i] {
			t.Errorf("run %d while paused: exit %d, ran %v; want 75 and not run", i, r.Code, ran[i])
		}
		oneLine(t, r, "lock:nightly is paused by "+host+":alice since ")
		if !strings.Contains(r.Stderr, "(db migration), until resumed; command not run") {
			t.Errorf("run %d: stderr %q does not say why and until when", i, r.Stderr)
		}
	}
	// -E's code, and a waiter does not wait out its -w.
	if r := e.run("-E", "3", "nightly", "true"); r.Code != 3 {
		t.Errorf("-E 3 while paused: exit %d, want 3", r.Code)
	}
	if r := e.run("-w", "60s", "nightly", "true"); r.Code != 75 || r.Duration > 30*time.Second || !strings.Contains(r.Stderr, "paused by") {
		t.Errorf("-w 60s while paused: exit %d after %v, stderr %q; want 75 at once", r.Code, r.Duration, r.Stderr)
	}
	if r := e.run("--status", "nightly"); !strings.Contains(r.Stdout, "lock:nightly is paused by "+host+":alice") {
		t.Errorf("--status while paused: %q", r.Stdout)
	}
	if r := e.run("--check", "nightly"); r.Code != 1 && r.Code != 2 || !strings.Contains(r.Stdout, "paused by") {
		t.Errorf("--check while paused: exit %d, %q; want at least WARNING naming the pause", r.Code, r.Stdout)
	}
	if r := e.run("--list"); !strings.Contains(r.Stdout, "nightly") || !strings.Contains(r.Stdout, "(paused by "+host+":alice)") {
		t.Errorf("--list while paused: %q", r.Stdout)
	}

	if r := e.pauser("--resume", "nightly"); r.Code != 0 {
		t.Fatalf("--resume: exit %d, stderr %q", r.Code, r.Stderr)
	}
	if r := e.pauser("--resume", "nightly"); r.Code != 1 {
		t.Errorf("--resume again: exit %d, want 1", r.Code)
	}
	results, ran = e.runEverywhere(t, "nightly")
	n := 0
	for i, r := range results {
		if r.Code == 0 && ran[i] {
			n++
		} else if r.Code != 75 || strings.Contains(r.Stderr, "paused") {
			t.Errorf("run %d after --resume: exit %d, stderr %q", i, r.Code, r.Stderr)
		}
	}
	if n == 0 {
		t.Error("no run took the lock after --resume")
	}
}

// --for ends a pause by itself: the key's TTL is the pause's.
func TestPauseForEndsByItself(t *testing.T) {
	t.Parallel()
	e := setup(t)
	if r := e.pauser("--pause", "--for", "1500ms", "--reason", "reboot", "nightly"); r.Code != 0 {
		t.Fatalf("--pause --for: exit %d, stderr %q", r.Code, r.Stderr)
	}
	results, ran := e.runEverywhere(t, "nightly")
	for i, r := range results {
		if r.Code != 75 || ran[i] || !strings.Contains(r.Stderr, "(reboot), until ") || strings.Contains(r.Stderr, "until resumed") {
			t.Errorf("run %d while paused for 1.5s: exit %d, ran %v, stderr %q", i, r.Code, ran[i], r.Stderr)
		}
	}
	clitest.Eventually(t, 10*time.Second, "a run after the pause's --for", func() bool {
		return e.run("nightly", "true").Code == 0
	})
	if r := e.run("--status", "nightly"); strings.Contains(r.Stdout, "paused") {
		t.Errorf("--status after --for ran out: %q", r.Stdout)
	}
}

// A pause does not stop the holder that runs: it takes effect when that
// holder releases, and the -w waiter behind it then stops waiting.
func TestPauseWaitsForTheRunningHolder(t *testing.T) {
	t.Parallel()
	e := setup(t)
	j := e.startJob(4, "nightly")
	r := e.pauser("--pause", "--reason", "deploy", "nightly")
	if r.Code != 0 || !strings.Contains(r.Stdout, holderOf(j.token)+" holds it and is not stopped") {
		t.Fatalf("--pause with a holder: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	if j.Exited() {
		t.Fatal("--pause stopped the running holder")
	}
	if r := e.run("--status", "nightly"); !strings.Contains(r.Stdout, "held by "+holderOf(j.token)) ||
		!strings.Contains(r.Stdout, "takes effect when this holder releases") {
		t.Errorf("--status with the pause waiting: %q", r.Stdout)
	}
	waiter := clitest.Start(t, nil, "--redis", e.srv.URL(), "-w", "60s", "nightly", "touch", e.path("waited"))
	// The line holds the pause, first, then the waiter once it has joined;
	// a waiter that exits instead says why below, from its stderr.
	clitest.Eventually(t, 10*time.Second, "the waiter in line behind the pause", func() bool {
		return e.rdb.LLen(t.Context(), "{lock:nightly}:q").Val() == 2 || waiter.Exited()
	})
	if r := j.finish(); r.Code != 4 {
		t.Errorf("holder: exit %d, want its command's 4", r.Code)
	}
	w := waiter.Wait(30 * time.Second)
	if w.Code != 75 || e.exists("waited") || !strings.Contains(w.Stderr, "paused by") || !strings.Contains(w.Stderr, "(deploy)") {
		t.Errorf("-w waiter at the holder's release: exit %d, stderr %q; want 75, not run, the pause named", w.Code, w.Stderr)
	}
	results, ran := e.runEverywhere(t, "nightly")
	for i, r := range results {
		if r.Code != 75 || ran[i] || !strings.Contains(r.Stderr, "paused by") {
			t.Errorf("run %d after the holder released: exit %d, ran %v, stderr %q", i, r.Code, ran[i], r.Stderr)
		}
	}
}

// The README's top-of-script idiom: a script that re-executes itself
// under with-lock. Two copies at once: one runs, one exits with the busy
// code; the one that runs sees WITH_LOCK_NAME and its arguments.
func TestSelfExecScriptRunsOnceAtATime(t *testing.T) {
	t.Parallel()
	e := setup(t)
	script := e.path("nightly.sh")
	body := `#!/bin/sh
[ -n "$WITH_LOCK_NAME" ] || exec with-lock nightly "$0" "$@"
echo "$WITH_LOCK_NAME $1" > "$1/ran.$$"
while [ ! -e "$1/go" ]; do sleep 0.02; done
`
	writeFile(t, script, []byte(body), 0o755)
	env := []string{"PATH=" + filepath.Dir(clitest.Binary(t)) + ":" + os.Getenv("PATH"), "WITH_LOCK_REDIS=" + e.srv.URL()}
	first := clitest.Spec{Program: script, Args: []string{e.dir}, Env: env}.Start(t)
	clitest.Eventually(t, 10*time.Second, "the first copy runs", func() bool {
		m, _ := filepath.Glob(e.path("ran.*"))
		return len(m) == 1
	})
	second := clitest.Spec{Program: script, Args: []string{e.dir}, Env: env}.Start(t).Wait(clitest.RunTimeout)
	if second.Code != 75 || !strings.Contains(second.Stderr, "lock:nightly is held by") {
		t.Errorf("second copy: exit %d, stderr %q; want 75, busy", second.Code, second.Stderr)
	}
	touch(t, e.path("go"))
	if r := first.Wait(clitest.RunTimeout); r.Code != 0 {
		t.Errorf("first copy: exit %d, stderr %q", r.Code, r.Stderr)
	}
	m, _ := filepath.Glob(e.path("ran.*"))
	if len(m) != 1 {
		t.Fatalf("%d copies ran, want 1", len(m))
	}
	if got := readFile(t, m[0]); got != "nightly "+e.dir+"\n" {
		t.Errorf("the copy under the lock saw %q, want WITH_LOCK_NAME and its own argument", got)
	}
}

// A holder that dies without releasing leaves its key to expire: the -w
// waiter in line finds the key free at its check, and the check puts the
// pause in instead of handing the lock on.
func TestPauseTakesEffectWhenACrashedHoldersKeyExpires(t *testing.T) {
	t.Parallel()
	e := setup(t)
	j := e.startJob(0, "--ttl", "1s", "nightly")
	if r := e.pauser("--pause", "--reason", "crash drill", "nightly"); r.Code != 0 || !strings.Contains(r.Stdout, "is not stopped") {
		t.Fatalf("--pause with a holder: exit %d, stdout %q", r.Code, r.Stdout)
	}
	waiter := clitest.Start(t, nil, "--redis", e.srv.URL(), "-w", "60s", "nightly", "touch", e.path("waited"))
	clitest.Eventually(t, 10*time.Second, "the waiter in line", func() bool {
		return e.rdb.LLen(t.Context(), "{lock:nightly}:q").Val() == 2 // the pause's entry, then the waiter's
	})
	j.Signal(syscall.SIGKILL) // no release: the key expires within its 1s
	w := waiter.Wait(30 * time.Second)
	if w.Code != 75 || e.exists("waited") || !strings.Contains(w.Stderr, "(crash drill)") {
		t.Errorf("-w waiter once the dead holder's key expired: exit %d, stderr %q; want 75, not run, the pause named", w.Code, w.Stderr)
	}
	if r := e.run("nightly", "true"); r.Code != 75 || !strings.Contains(r.Stderr, "paused by") {
		t.Errorf("a run after: exit %d, stderr %q; want the pause", r.Code, r.Stderr)
	}
}

// A --replace while a pause waits for the holder's release does not stop
// the holder: a paused name starts no new run, a replacing one neither.
// The replacer waits behind the pause, as any waiter, and meets it at the
// holder's release.
func TestReplaceWhileAPauseWaitsLeavesTheHolderAndMeetsThePause(t *testing.T) {
	t.Parallel()
	e := setup(t)
	j := e.startJob(4, "nightly")
	if r := e.pauser("--pause", "--reason", "deploy", "nightly"); r.Code != 0 {
		t.Fatalf("--pause with a holder: exit %d, stderr %q", r.Code, r.Stderr)
	}
	queued := e.rdb.LLen(t.Context(), "{lock:nightly}:q").Val()
	replacer := clitest.Start(t, nil, "--redis", e.srv.URL(), "--replace", "-w", "60s", "nightly", "touch", e.path("replaced"))
	clitest.Eventually(t, 10*time.Second, "the replacer in line", func() bool {
		return e.rdb.LLen(t.Context(), "{lock:nightly}:q").Val() == queued+1
	})
	if n := e.rdb.Exists(t.Context(), "{lock:nightly}:replaced").Val(); n != 0 {
		t.Error("the holder was asked to stop while a pause waited for it")
	}
	if r := j.finish(); r.Code != 4 {
		t.Errorf("holder: exit %d, stderr %q; want its command's 4, not stopped", r.Code, r.Stderr)
	}
	w := replacer.Wait(30 * time.Second)
	if w.Code != 75 || e.exists("replaced") || !strings.Contains(w.Stderr, "paused by") || !strings.Contains(w.Stderr, "(deploy)") {
		t.Errorf("--replace at the holder's release: exit %d, stderr %q; want 75, not run, the pause named", w.Code, w.Stderr)
	}
}
