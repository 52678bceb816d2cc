package main_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
)

// A lock is in --list and --list --json from the moment it is taken, once
// the index of names holds other names and long before any renewal,
// whatever its flags: a plain run, --no-renew, a long --ttl, --slots,
// --fence, --min-hold, --once-per, and a waiter handed the lock in the fair
// line (-w). Each is listed as soon as its command runs, with its holder.
func TestListShowsALockFromTheMomentItIsTaken(t *testing.T) {
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
