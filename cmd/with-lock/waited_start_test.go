package main_test

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// A run that waited for the lock holds it from when it got it, not from
// when it began to wait: of two consecutive runs (B waits with -w for A),
// B's record does not start before A's ends, and while B holds the lock
// --status, --list and the busy line of a third run date its hold from
// A's end, not from its wait.
func TestWaitedRunHoldsFromWhenItGotTheLock(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	a := startJob(t, redisEnv(srv), 0, "seq")
	bDir := t.TempDir()
	b := startWaiting(t, srv, rdb, "lock:seq", "-w", "1m", "seq", "sh", "-c", jobScript, "sh", bDir, "0")
	waitStarted := time.Now() // B's wait began before this
	if r := a.finish(); r.Code != 0 {
		t.Fatalf("A: exit %d, stderr %q", r.Code, r.Stderr)
	}
	b.WaitFile(filepath.Join(bDir, "info")) // B's command runs: B holds the lock

	type run struct{ Started, Finished time.Time }
	var st struct {
		Held    bool
		Since   *time.Time
		LastRun *run `json:"last_run"`
	}
	statusJSON(t, srv, &st)
	if !st.Held || st.Since == nil || st.LastRun == nil {
		t.Fatalf("--status --json while B holds the lock: %+v; want held, since and A's last run", st)
	}
	aFinished := st.LastRun.Finished
	if !aFinished.After(waitStarted) {
		t.Fatalf("A finished at %s, before B began to wait (%s): the test proves nothing", aFinished, waitStarted)
	}
	if st.Since.Before(aFinished) {
		t.Errorf("--status says B holds the lock since %s, before A finished (%s): that is when B began to wait",
			st.Since.Format(time.RFC3339Nano), aFinished.Format(time.RFC3339Nano))
	}
	var listed struct{ Since *time.Time }
	r := clitest.Run(t, redisEnv(srv), "--list", "--json")
	if err := json.Unmarshal([]byte(r.Stdout), &listed); r.Code != 0 || err != nil || listed.Since == nil {
		t.Fatalf("--list --json: exit %d, stdout %q, stderr %q (%v)", r.Code, r.Stdout, r.Stderr, err)
	}
	if listed.Since.Before(aFinished) {
		t.Errorf("--list says B holds the lock since %s, before A finished (%s)", listed.Since.Format(time.RFC3339Nano), aFinished.Format(time.RFC3339Nano))
	}

	// The busy line, in JSON for its milliseconds.
	r = clitest.Run(t, redisEnv(srv), "--log-format", "json", "seq", "true")
	var busy struct{ Event, Since string }
	if err := json.Unmarshal([]byte(r.Stderr), &busy); r.Code != 75 || err != nil || busy.Event != "busy" {
		t.Fatalf("a third run: exit %d, stderr %q (%v); want 75 and the busy event", r.Code, r.Stderr, err)
	}
	if since, err := time.Parse(time.RFC3339Nano, busy.Since); err != nil || since.Before(aFinished.Truncate(time.Millisecond)) {
		t.Errorf("the busy line says B holds the lock since %q, before A finished (%s)", busy.Since, aFinished.Format(time.RFC3339Nano))
	}

	touch(t, filepath.Join(bDir, "go"))
	if r := b.Wait(waitFor); r.Code != 0 {
		t.Fatalf("B: exit %d, stderr %q", r.Code, r.Stderr)
	}
	statusJSON(t, srv, &st)
	if st.LastRun == nil || st.LastRun.Started.Before(aFinished) {
		t.Errorf("B's record %+v starts before A's run finished (%s): the records overlap", st.LastRun, aFinished.Format(time.RFC3339Nano))
	}
}

// statusJSON reads --status --json seq into v.
func statusJSON(t *testing.T, srv *redistest.Server, v any) {
	t.Helper()
	r := clitest.Run(t, redisEnv(srv), "--status", "--json", "seq")
	if err := json.Unmarshal([]byte(r.Stdout), v); err != nil {
		t.Fatalf("--status --json: exit %d, stdout %q, stderr %q: %v", r.Code, r.Stdout, r.Stderr, err)
	}
}
