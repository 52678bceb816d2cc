package main_test

// --break: the lock goes to the waiting run, a pending pause stays, a
// replica says so.

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// --break through a replica says it is a replica and what to do, exit 69;
// not that a lock of ours was lost to a demotion, while the lock is held
// on the master and stays so.
func TestBreakThroughAReplicaSaysItIsAReplica(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	master := redistest.Start(t, "repl-diskless-sync-delay", "0") // the replica in sync at once
	replica := redistest.Start(t, "replicaof", "127.0.0.1 "+strconv.Itoa(master.Port))
	if err := master.Client().Set(ctx, "lock:x", foreign, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	clitest.Eventually(t, 10*time.Second, "the replica never had lock:x", func() bool {
		return replica.Client().Get(ctx, "lock:x").Val() == foreign
	})
	r := clitest.Run(t, nil, "--redis", replica.URL(), "--break", "x")
	if r.Code != 69 {
		t.Errorf("exit %d, want 69", r.Code)
	}
	oneLine(t, r, "(that server is a read-only replica: point --redis / WITH_LOCK_REDIS at the master, or use --sentinel to find it)")
	for _, wrong := range []string{"demoted", "no longer held", "not held"} {
		if strings.Contains(r.Stderr, wrong) {
			t.Errorf("stderr %q says %q", r.Stderr, wrong)
		}
	}
	if v := master.Client().Get(ctx, "lock:x").Val(); v != foreign {
		t.Errorf("the master's lock:x holds %q, want the holder's value", v)
	}
}

// --break removes holders, not a pause: on a paused name it removes
// nothing, exits 1 as for a name not held, and says how a pause ends; the
// name stays paused.
func TestBreakLeavesAPauseAlone(t *testing.T) {
	t.Parallel()
	e := setup(t)
	if r := e.pauser("--pause", "--reason", "maint", "nightly"); r.Code != 0 {
		t.Fatalf("--pause: exit %d, stderr %q", r.Code, r.Stderr)
	}
	r := e.run("--break", "nightly")
	if r.Code != 1 || !hasLine(r.Stderr, "lock:nightly is not held: it is paused by", "(maint)", "nothing removed", "--resume nightly") {
		t.Errorf("--break of a paused name: exit %d, stdout %q, stderr %q; want 1 and the pause named", r.Code, r.Stdout, r.Stderr)
	}
	if r := e.run("nightly", "touch", e.path("ran")); r.Code != 75 || e.exists("ran") {
		t.Errorf("a run after --break of a paused name: exit %d, stderr %q; want 75, still paused", r.Code, r.Stderr)
	}
}

// The line's head is handed the lock by --break at once: a CLI waiter with
// -w runs its command within a bound well under the line's one-second
// check, measured from just before --break was started to the command's
// file.
//
// Not parallel: it holds a bound in time, kept clear of the parallel
// tests' load.
func TestBreakHandsTheLockToTheWaitingRunAtOnce(t *testing.T) {
	e := setup(t)
	holder := e.startJob(0, "break-head")
	waiter := clitest.Start(t, nil, "--redis", e.srv.URL(), "-w", "30s", "break-head", "touch", e.path("ran"))
	clitest.Eventually(t, 10*time.Second, "the waiter never joined the line", func() bool {
		return e.rdb.LLen(context.Background(), "{lock:break-head}:q").Val() == 1
	})
	// Right after joining, the waiter's first check is a second away.
	broke := time.Now()
	if res := e.run("--break", "break-head"); res.Code != 0 {
		t.Fatalf("--break: exit %d, stderr %q", res.Code, res.Stderr)
	}
	clitest.Eventually(t, 10*time.Second, "the waiter never ran", func() bool { return e.exists("ran") })
	st, err := os.Stat(e.path("ran"))
	if err != nil {
		t.Fatal(err)
	}
	took := st.ModTime().Sub(broke)
	t.Logf("the waiter ran %s after --break started", took.Round(time.Millisecond))
	if bound := 600 * time.Millisecond; took > bound {
		t.Errorf("the waiter ran %s after --break, want within %s (handed over, not found at its check)", took, bound)
	}
	if res := waiter.Wait(10 * time.Second); res.Code != 0 {
		t.Errorf("waiter: exit %d, stderr %q", res.Code, res.Stderr)
	}
	holder.finish()
}

// --break hands the lock on in the line's order, and a pause waiting at the
// head of the line for the running holder is first: the break puts it into
// the key, so a run after it refuses as paused, as it would after the
// holder's release.
func TestBreakPutsAPendingPauseIntoTheKey(t *testing.T) {
	t.Parallel()
	e := setup(t)
	// The broken holder learns of the break at its next renewal: a second
	// with a 3s TTL, not the default's ten.
	j := e.startJob(0, "--ttl", "3s", "paused-break")
	if r := e.run("--pause", "--reason", "deploy", "paused-break"); r.Code != 0 {
		t.Fatalf("--pause: exit %d, stderr %q", r.Code, r.Stderr)
	}
	if r := e.run("--break", "paused-break"); r.Code != 0 {
		t.Fatalf("--break: exit %d, stderr %q", r.Code, r.Stderr)
	}
	if r := e.run("paused-break", "touch", e.path("ran")); r.Code != 75 || e.exists("ran") || !strings.Contains(r.Stderr, "(deploy)") {
		t.Errorf("a run after --break: exit %d, stderr %q; want 75, not run, the pause named", r.Code, r.Stderr)
	}
	if r := j.Wait(clitest.RunTimeout); r.Code != 125 {
		t.Errorf("the broken holder: exit %d, stderr %q; want 125, its lock lost", r.Code, r.Stderr)
	}
}
