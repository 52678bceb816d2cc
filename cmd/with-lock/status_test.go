package main_test

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
