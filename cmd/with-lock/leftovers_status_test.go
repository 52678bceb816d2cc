package main_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// oneLeftJob starts one background process, which writes its pid to
// "$0/pid" and sleeps, and exits 3 once the pid is there.
const oneLeftJob = `sh -c 'echo $$ > "$0/pid.tmp" && mv "$0/pid.tmp" "$0/pid"; exec sleep 100' "$0" &
while [ ! -e "$0/pid" ]; do sleep 0.01; done; exit 3`

// While the lock is held for what a finished command left running,
// --status and --list (text and --json) say that the command has exited,
// with its code, and how many processes of its job still run; past the
// lock's TTL too, for the note is renewed with the lock. Once the last
// process ends, the lock is free and the note is gone. The note is never
// listed as a lock, also where --list --scan finds it beside a name with a
// hash tag.
func TestStatusAndListShowCommandExitedWithProcessesLeft(t *testing.T) {
	for _, tc := range []struct{ name, note string }{
		{"left", "{lock:left}:left"},
		{"{tag}left", "lock:{tag}left:left"},
	} {
		t.Run(tc.name, func(t *testing.T) { statusShowsLeftovers(t, tc.name, tc.note) })
	}
}

func statusShowsLeftovers(t *testing.T, name, note string) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	env := redisEnv(srv)
	dir := t.TempDir()
	p := clitest.Start(t, env, "--ttl", "1s", name, "sh", "-c", oneLeftJob, dir)
	pid := clitest.ReadPids(t, 10*time.Second, filepath.Join(dir, "pid"), 1)[0]
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	p.WaitStderr("remaining process")

	const said = ": the command exited 3 at "
	status := func() string { return clitest.Run(t, env, "--status", name).Stdout }
	clitest.Eventually(t, 10*time.Second, "--status to say the command exited", func() bool {
		return strings.Contains(status(), said)
	})
	time.Sleep(1500 * time.Millisecond) // past the TTL: the note must be renewed with the lock
	if out := status(); !strings.Contains(out, "lock:"+name+" is held by ") || !strings.Contains(out, said) ||
		!strings.Contains(out, "; 1 process of its job still runs, expires in ") {
		t.Errorf("--status printed %q: want the lock held by a command that exited 3 with 1 process left", out)
	}

	type shown struct {
		Held      bool `json:"held"`
		Leftovers *struct {
			ExitCode  int       `json:"exit_code"`
			Exited    time.Time `json:"exited"`
			Processes int       `json:"processes"`
		} `json:"leftovers"`
	}
	check := func(what, line string) {
		t.Helper()
		var s shown
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("%s printed %q: %v", what, line, err)
		}
		if l := s.Leftovers; !s.Held || l == nil || l.ExitCode != 3 || l.Processes != 1 || time.Since(l.Exited) > time.Minute {
			t.Errorf("%s printed %q: want held, leftovers with exit code 3, 1 process, exited just now", what, line)
		}
	}
	check("--status --json", strings.TrimSpace(clitest.Run(t, env, "--status", "--json", name).Stdout))
	for _, scan := range [][]string{nil, {"--scan"}} { // --scan reads the keyspace: the note is no lock
		list := clitest.Run(t, env, append([]string{"--list", "--json"}, scan...)...).Stdout
		if lines := strings.Split(strings.TrimSpace(list), "\n"); len(lines) != 1 {
			t.Errorf("--list --json %v printed %q: want one lock", scan, list)
		} else {
			check("--list --json", lines[0])
		}
		if out := clitest.Run(t, env, append([]string{"--list"}, scan...)...).Stdout; !strings.Contains(out, "(command exited 3; 1 process left)") ||
			strings.Count(out, "\n") != 2 {
			t.Errorf("--list %v printed %q: want one row, held by a command that exited 3 with 1 process left", scan, out)
		}
	}

	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatalf("end the background process: %v", err)
	}
	if res := p.Wait(10 * time.Second); res.Code != 3 {
		t.Errorf("exit %d, want the command's 3; stderr %q", res.Code, res.Stderr)
	}
	if out := status(); !strings.HasPrefix(out, "lock:"+name+" is free") || strings.Contains(out, said) {
		t.Errorf("--status printed %q after the job ended: want free", out)
	}
	if n := rdb.Exists(context.Background(), note).Val(); n != 0 {
		t.Error("the note of what the command left running outlived the job")
	}
}
