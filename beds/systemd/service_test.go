package systemd_test

import (
	"strings"
	"testing"

	"github.com/with-lock/with-lock/beds/testbed"
)

// untilGo is a job that runs until the test creates /tmp/go, then exits 3.
const untilGo = "#!/bin/sh\necho $$ > /tmp/job.pid\nwhile [ ! -e /tmp/go ]; do sleep 0.1; done\nexit 3\n"

// with-lock as a transient service (systemd-run --wait, as an operator
// runs a job by hand under systemd) runs the job, passes its exit code to
// systemd and releases the lock; a second run while the first holds it is
// refused with 75 and says who holds it, leaving nothing behind for
// systemd to kill (its guard has exited when with-lock exits).
func TestTransientServiceRunsJobAndReleasesLock(t *testing.T) {
	b := boot(t, testbed.BootOptions{})
	b.WriteFile("/opt/jobs/until-go.sh", untilGo, 0o755)
	run := func(unit string) (string, error) {
		return b.Exec(2*wait, "systemd-run", "--wait", "--collect", "--unit", unit,
			"--setenv=WITH_LOCK_REDIS="+b.URL(), "/usr/bin/with-lock", "once", "/opt/jobs/until-go.sh")
	}
	first := make(chan string, 1)
	go func() {
		out, _ := run("once-first")
		first <- out
	}()
	b.waitFor("/tmp/job.pid")
	token := b.WaitHeld("once")

	out, _ := run("once-second")
	if !strings.Contains(out, "status=75") || !strings.Contains(b.Journal("once-second"), "is held by") {
		t.Errorf("a second run while the first holds the lock, want status 75 and the holder in the journal:\n%s\njournal:\n%s",
			out, b.Journal("once-second"))
	}
	if b.Holder("once") != token {
		t.Errorf("the refused run changed the lock's holder")
	}
	if j := b.Journal("once-second"); strings.Contains(j, "Killing process") {
		t.Errorf("the refused run left a process (its guard) for systemd to kill:\n%s", j)
	}

	b.WriteFile("/tmp/go", "go", 0o644)
	if out := <-first; !strings.Contains(out, "status=3") {
		t.Errorf("the first run, want the job's exit status 3:\n%s\njournal:\n%s", out, b.Journal("once-first"))
	}
	b.WaitFree("once")
}
