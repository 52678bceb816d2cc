package main_test

// --status: free or held, by whom, with which fence, and a command's
// leftovers; a Redis out of memory still answers.

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// --status says whether the lock is free or who holds it, for how long and
// with which fence, as text or JSON, without the token's secret; exit 1
// when free, 0 when held, 69 when Redis is down.
func TestStatusReportsFreeOrHolderTTLAndFence(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	env := redisEnv(srv)

	res := clitest.Run(t, env, "--status", "st")
	if res.Code != 1 || strings.TrimSpace(res.Stdout) != "lock:st is free" {
		t.Errorf("free: exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
	}
	res = clitest.Run(t, env, "--status", "--json", "st")
	if res.Code != 1 || strings.TrimSpace(res.Stdout) != `{"key":"lock:st","held":false,"ttl_ms":0}` {
		t.Errorf("free, JSON: exit %d, stdout %q", res.Code, res.Stdout)
	}

	pidfile := filepath.Join(t.TempDir(), "pids")
	p := clitest.Start(t, env, "--fence", "--ttl", "20s", "st", "sh", "-c",
		`echo "$WITH_LOCK_TOKEN" > "$0.token"; echo "$WITH_LOCK_FENCE" > "$0.fence"; echo $$ > "$0.tmp" && mv "$0.tmp" "$0"; exec sleep 100`, pidfile)
	clitest.ReadPids(t, 10*time.Second, pidfile, 1)
	host, pid := hostPid(t, p.Pid())
	fence := strings.TrimSpace(readFile(t, pidfile+".fence")) // the command's own

	res = clitest.Run(t, env, "--status", "st")
	t.Logf("held: %q", res.Stdout)
	if res.Code != 0 || !strings.HasPrefix(res.Stdout, "lock:st is held by "+host+":"+pid+", expires in ") || !strings.HasSuffix(res.Stdout, ", fence "+fence+"\n") {
		t.Errorf("held: exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
	}
	res = clitest.Run(t, env, "--status", "--json", "st")
	t.Logf("held, JSON: %q", res.Stdout)
	var js lockJSON // list_test.go
	if err := json.Unmarshal([]byte(res.Stdout), &js); err != nil {
		t.Fatalf("JSON %q: %v", res.Stdout, err)
	}
	if res.Code != 0 || js.Key != "lock:st" || !js.Held || js.Holder != host+":"+pid || js.Host != host ||
		strconv.Itoa(js.PID) != pid || js.TTLMs <= 0 || js.TTLMs > 20000 || strconv.FormatInt(js.Fence, 10) != fence {
		t.Errorf("held, JSON: exit %d, %+v", res.Code, js)
	}
	token := strings.TrimSpace(readFile(t, pidfile+".token"))
	secret := token[strings.LastIndexByte(token, ':')+1:]
	if strings.Contains(res.Stdout, secret) {
		t.Error("--status shows the token's secret part")
	}
	p.Signal(syscall.SIGTERM)
	p.Wait(10 * time.Second)

	down := redistest.FreePort(t)
	res = clitest.Run(t, []string{"WITH_LOCK_REDIS=redis://127.0.0.1:" + strconv.Itoa(down) + "/0"}, "--status", "st")
	if res.Code != 69 || res.Stderr == "" {
		t.Errorf("Redis down: exit %d, stderr %q; want 69", res.Code, res.Stderr)
	}
}

// A Redis out of memory (maxmemory reached under noeviction) refuses a new
// lock, in words, but answers every read: --status, --status --json,
// --list and --check answer as usual, and a holder keeps renewing and
// releases, its run recorded.
func TestOutOfMemoryRedisStillAnswers(t *testing.T) {
	t.Parallel()
	e := setup(t, "maxmemory", "4mb", "maxmemory-policy", "noeviction")
	holder := e.startJob(0, "--ttl", "1s", "job")
	e.srv.FillUntilOOM()

	pttl := func() time.Duration { return e.rdb.PTTL(context.Background(), "lock:job").Val() } // lookAt's MULTI would be refused
	low := pttl()
	clitest.Eventually(t, 5*time.Second, "a renewal when out of memory", func() bool {
		p := pttl()
		low = min(low, p)
		return p > low+100*time.Millisecond // it fell, and a renewal set it back
	})
	cmd, ran := marker(t)
	res := e.run(append([]string{"other"}, cmd...)...)
	if res.Code != 69 || ran() {
		t.Errorf("a new run: exit %d (ran %v), want 69 and not run", res.Code, ran())
	}
	oneLine(t, res, "acquire lock:other: Redis refuses to write while its used memory is above maxmemory; command not run")
	matchesDoc(t, res, logsRow("Redis out of memory"), "lock:x", "lock:other") // log_test.go

	who := holderOf(holder.token)
	if res := e.run("--status", "job"); res.Code != 0 || !strings.HasPrefix(res.Stdout, "lock:job is held by "+who+", expires in ") {
		t.Errorf("--status: exit %d, stdout %q, stderr %q; want held by %s", res.Code, res.Stdout, res.Stderr, who)
	}
	res = e.run("--status", "--json", "job")
	var js lockJSON // list_test.go
	if err := json.Unmarshal([]byte(res.Stdout), &js); err != nil || res.Code != 0 || !js.Held || js.Holder != who {
		t.Errorf("--status --json: exit %d, %q (%v); want held by %s", res.Code, res.Stdout, err, who)
	}
	if res := e.run("--list"); res.Code != 0 || !strings.Contains(res.Stdout, "\njob   "+who+" ") {
		t.Errorf("--list: exit %d, stdout %q, stderr %q; want job listed, held by %s", res.Code, res.Stdout, res.Stderr, who)
	}
	res = e.run("--check", "job", "--running-ok", "1h")
	checkLine(t, res, 0, `^WITH-LOCK OK - job running on .* for \d+m?s \(--running-ok 1h\)$`)

	if res := holder.finish(); res.Code != 0 || res.Stderr != "" {
		t.Errorf("the holder: exit %d, stderr %q; want 0 and nothing said", res.Code, res.Stderr)
	}
	e.gone(t, "lock:job")
	if res := e.run("--status", "job"); res.Code != 1 || !strings.Contains(res.Stdout, "\nlast run: "+who+", ") {
		t.Errorf("--status after the release: exit %d, stdout %q; want free, the holder's run recorded", res.Code, res.Stdout)
	}
}

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
	t.Parallel()
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
