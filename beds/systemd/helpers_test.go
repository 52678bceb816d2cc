// Package systemd_test runs with-lock under a real systemd (Debian 12's,
// booted by testbed.Boot) the ways a server runs it: as a service, from
// cron.service, from the shipped timer and service units; and stops,
// restarts and kills it there as an operator would.
package systemd_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/with-lock/with-lock/beds/testbed"
	"github.com/with-lock/with-lock/internal/clitest"
)

const wait = testbed.Wait

// bed is a booted machine and the test's Redis, which the machine reaches
// on the shared loopback.
type bed struct {
	*testbed.Machine
	*testbed.Redis
	t testing.TB
}

func boot(t testing.TB, o testbed.BootOptions) *bed {
	t.Helper()
	r := testbed.StartRedis(t) // first: stopped after the machine
	return &bed{Machine: testbed.Boot(t, o), Redis: r, t: t}
}

// longJob is a job that runs until stopped, as a shell script a user would
// write: a background child, a child that left for a session of its own
// (setsid), and the script waiting for them; each writes its pid in dir.
const longJob = `#!/bin/sh
mkdir -p "$1"
echo $$ > "$1/sh.pid"
sleep 1000 & echo $! > "$1/bg.pid"
setsid sleep 1000 & echo $! > "$1/escapee.pid"
wait
`

// jobPids are the pids longJob writes in dir, once all three are there.
func (b *bed) jobPids(dir string) map[string]int {
	b.t.Helper()
	pids := map[string]int{}
	clitest.Eventually(b.t, wait, "the job did not start its processes in "+dir, func() bool {
		for _, name := range []string{"sh", "bg", "escapee"} {
			pids[name] = b.pidIn(filepath.Join(dir, name+".pid"))
		}
		return pids["sh"] > 0 && pids["bg"] > 0 && pids["escapee"] > 0
	})
	return pids
}

// pidIn is the pid written in the machine's file p; 0 before it is there.
func (b *bed) pidIn(p string) int {
	pid, _ := strconv.Atoi(strings.TrimSpace(b.ReadFile(p)))
	return pid
}

// allGone waits until none of pids runs, and fails naming those that do.
func (b *bed) allGone(pids map[string]int) {
	b.t.Helper()
	clitest.Eventually(b.t, wait, "processes of the job still run", func() bool {
		for _, pid := range pids {
			if b.Alive(pid) {
				return false
			}
		}
		return true
	})
}

// waitFor waits until the machine's file p exists.
func (b *bed) waitFor(p string) {
	b.t.Helper()
	clitest.Eventually(b.t, wait, p+" never appeared", func() bool { return b.ReadFile(p) != "" })
}

// installShippedUnits puts packaging/systemd's example service and timer
// into /etc/systemd/system under name, edited as the README tells a user
// to: ExecStart= runs execStart and WITH_LOCK_REDIS names the test's
// Redis. Everything else is as shipped.
func (b *bed) installShippedUnits(name, execStart string) {
	b.t.Helper()
	dir := filepath.Join(testbed.RepoRoot(), "packaging", "systemd")
	service, err := os.ReadFile(filepath.Join(dir, "with-lock-example.service"))
	if err != nil {
		b.t.Fatal(err)
	}
	timer, err := os.ReadFile(filepath.Join(dir, "with-lock-example.timer"))
	if err != nil {
		b.t.Fatal(err)
	}
	edited := replaceLine(b.t, string(service), "ExecStart=", "ExecStart="+execStart)
	edited = replaceLine(b.t, edited, "Environment=WITH_LOCK_REDIS=", "Environment=WITH_LOCK_REDIS="+b.URL())
	b.WriteFile("/etc/systemd/system/"+name+".service", edited, 0o644)
	b.WriteFile("/etc/systemd/system/"+name+".timer", string(timer), 0o644)
	b.MustExec("systemctl", "daemon-reload")
}

// replaceLine replaces the one line of text that starts with prefix.
func replaceLine(t testing.TB, text, prefix, line string) string {
	t.Helper()
	lines := strings.Split(text, "\n")
	n := 0
	for i, l := range lines {
		if strings.HasPrefix(l, prefix) {
			lines[i] = line
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the shipped unit has %d lines starting %q, want the one the README says to edit", n, prefix)
	}
	return strings.Join(lines, "\n")
}

// waitInactive waits until unit is no longer starting, running or
// stopping.
func (b *bed) waitInactive(unit string) {
	b.t.Helper()
	clitest.Eventually(b.t, wait, unit+" did not end", func() bool {
		s := b.Show(unit, "ActiveState")["ActiveState"]
		return s == "inactive" || s == "failed"
	})
}

// state is how a unit ended: ActiveState, Result and the main process's
// exit status, as systemctl show says.
func (b *bed) state(unit string) string {
	p := b.Show(unit, "ActiveState", "Result", "ExecMainStatus")
	return p["ActiveState"] + " (result " + p["Result"] + ", status " + p["ExecMainStatus"] + ")"
}
