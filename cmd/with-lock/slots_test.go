package main_test

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/with-lock/with-lock/internal/clitest"
)

// slotsScript is a holder's command: it marks itself present in $1, writes
// how many are present into $1/seen.<pid>, stays a while, and leaves. At
// any moment the files present are at most the holders.
const slotsScript = `touch "$1/in.$$"; ls "$1" | grep -c '^in\.' > "$1/seen.$$"; sleep 0.3; rm "$1/in.$$"`

func TestSlotsNeverExceedNProcesses(t *testing.T) {
	t.Parallel()
	e := setup(t)
	dir := t.TempDir()
	var procs []*clitest.Proc
	for range 8 {
		procs = append(procs, clitest.Start(t, nil, "--redis", e.srv.URL(), "--slots", "3", "-w", "60s", "crawl",
			"sh", "-c", slotsScript, "sh", dir))
	}
	for i, p := range procs {
		if r := p.Wait(clitest.RunTimeout); r.Code != 0 {
			t.Fatalf("holder %d: exit %d, stderr %q", i, r.Code, r.Stderr)
		}
	}
	seen, err := filepath.Glob(filepath.Join(dir, "seen.*"))
	if err != nil || len(seen) != len(procs) {
		t.Fatalf("%d of %d commands ran (%v)", len(seen), len(procs), err)
	}
	most := 0
	for _, f := range seen {
		n, err := strconv.Atoi(strings.TrimSpace(readFile(t, f)))
		if err != nil {
			t.Fatal(err)
		}
		most = max(most, n)
	}
	if most > 3 || most < 2 {
		t.Errorf("at most %d commands ran at once; want 3 (2 on a slow machine), never more", most)
	}
	e.gone(t, "lock:crawl")
	for i := 1; i <= 3; i++ {
		e.gone(t, "{lock:crawl}:s:"+strconv.Itoa(i))
	}
}

func TestSlotsMismatchExits78(t *testing.T) {
	t.Parallel()
	e := setup(t)
	j := e.startJob(0, "--slots", "3", "backup")
	if got := e.get("lock:backup"); got != "#slots=3" {
		t.Fatalf("lock:backup = %q, want the marker #slots=3", got)
	}
	run, ran := marker(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "3 slots"},
		{[]string{"--slots", "5"}, "3 slots"},
		{[]string{"--slots", "2", "-w", "5s"}, "3 slots"},
	} {
		r := e.run(append(append(tc.args, "backup"), run...)...)
		if r.Code != 78 {
			t.Errorf("%q: exit %d, want 78 (stderr %q)", tc.args, r.Code, r.Stderr)
		}
		oneLine(t, r, tc.want)
		if ran() {
			t.Fatalf("%q: the command ran", tc.args)
		}
	}
	if r := j.finish(); r.Code != 0 {
		t.Fatalf("holder: exit %d, stderr %q", r.Code, r.Stderr)
	}

	// And the other way round: a plain lock refuses a semaphore.
	j = e.startJob(0, "report")
	r := e.run("--slots", "3", "report", "true")
	if r.Code != 78 {
		t.Errorf("--slots 3 on a plain lock: exit %d, want 78 (stderr %q)", r.Code, r.Stderr)
	}
	oneLine(t, r, "plain lock")
	j.finish()
}

func TestSlotsBusyStatusListAndBreakShowEveryHolder(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a := e.startJob(0, "--slots", "2", "--ttl", "1s", "backup")
	b := e.startJob(0, "--slots", "2", "--ttl", "1s", "backup")
	if a.name != "backup" || a.token == b.token {
		t.Fatalf("holders saw %q/%q, tokens equal: %v", a.name, b.name, a.token == b.token)
	}

	// A third run finds every slot taken: busy, like a held lock.
	r := e.run("--slots", "2", "backup", "true")
	if r.Code != 75 {
		t.Errorf("with both slots held: exit %d, want 75 (stderr %q)", r.Code, r.Stderr)
	}
	oneLine(t, r, "all 2 slots of lock:backup are held; the first to free is ")

	r = e.run("--status", "backup")
	if r.Code != 0 || !strings.Contains(r.Stdout, "lock:backup is a semaphore: 2 of 2 slots held\n") ||
		!hasLine(r.Stdout, "slot 1: held by ") || !hasLine(r.Stdout, "slot 2: held by ") {
		t.Errorf("--status: exit %d, stdout %q", r.Code, r.Stdout)
	}
	for _, j := range []*job{a, b} {
		if !strings.Contains(r.Stdout, holderOf(j.token)) {
			t.Errorf("--status does not name holder %s: %q", holderOf(j.token), r.Stdout)
		}
		if strings.Contains(r.Stdout+r.Stderr, randomPart(j.token)) {
			t.Errorf("--status shows a token")
		}
	}
	r = e.run("--status", "--json", "backup")
	if st := parseLocks(t, r.Stdout)["lock:backup"]; r.Code != 0 || !st.Held || !strings.Contains(r.Stdout, `"slots":2`) ||
		strings.Count(r.Stdout, `"slot":`) != 2 {
		t.Errorf("--status --json: exit %d, %q", r.Code, r.Stdout)
	}
	r = e.run("--list")
	if r.Code != 0 || !strings.Contains(r.Stdout, "backup (slot 1/2)") || !strings.Contains(r.Stdout, "backup (slot 2/2)") {
		t.Errorf("--list: exit %d, stdout %q", r.Code, r.Stdout)
	}

	r = e.run("--break", "backup")
	if r.Code != 0 || !strings.Contains(r.Stdout, "slot 1 by ") || !strings.Contains(r.Stdout, "slot 2 by ") {
		t.Errorf("--break: exit %d, stdout %q", r.Code, r.Stdout)
	}
	// Both holders find out at their next renewal and stop their commands.
	for _, j := range []*job{a, b} {
		if r := j.Wait(clitest.RunTimeout); r.Code != 125 {
			t.Errorf("holder after --break: exit %d, want 125 (stderr %q)", r.Code, r.Stderr)
		}
	}
	if r := e.run("--status", "backup"); r.Code != 1 {
		t.Errorf("--status after --break: exit %d, stdout %q", r.Code, r.Stdout)
	}
}

func TestSlotsGiveEachCommandItsSlot(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a := e.startJob(0, "--slots", "2", "pool")
	out := filepath.Join(t.TempDir(), "slot")
	r := e.run("--slots", "2", "pool", "sh", "-c", `printf %s "$WITH_LOCK_SLOT" > "$1"`, "sh", out)
	if r.Code != 0 {
		t.Fatalf("second holder: exit %d, stderr %q", r.Code, r.Stderr)
	}
	if got := readFile(t, out); got != "2" {
		t.Errorf("the second holder's WITH_LOCK_SLOT = %q, want 2", got)
	}
	// A plain lock gives no slot.
	r = e.run("plain", "sh", "-c", `printf %s "${WITH_LOCK_SLOT-unset}" > "$1"`, "sh", out)
	if got := readFile(t, out); r.Code != 0 || got != "unset" {
		t.Errorf("plain lock: exit %d, WITH_LOCK_SLOT %q", r.Code, got)
	}
	a.finish()
}
