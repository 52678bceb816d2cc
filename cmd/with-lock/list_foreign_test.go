package main_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
)

// --list --scan shows a lock whose key holds a token that is not ours, as
// text and as --json: one from another host with its host:pid and time
// left, and a value in no format without expiry as held by "unknown", never
// expiring; the foreign token's secret part is never printed.
func TestListShowsForeignToken(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	if err := e.rdb.Set(ctx, "lock:other-job", foreign, 30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if err := e.rdb.Set(ctx, "lock:odd-job", "no-format", 0).Err(); err != nil {
		t.Fatal(err)
	}

	r := e.run("--list", "--scan")
	t.Logf("--list --scan:\n%s", r.Stdout)
	if r.Code != 0 || r.Stderr != "" || !strings.HasPrefix(r.Stdout, "NAME") {
		t.Errorf("--list --scan: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n")[1:] {
		f := strings.Fields(line)
		rows[f[0]] = f
	}
	// NAME HOLDER HELD-FOR EXPIRES-IN FENCE LAST-RUN
	if f := rows["other-job"]; len(f) != 6 || f[1] != "otherhost:4242" || f[2] != "-" || !strings.HasSuffix(f[3], "s") || f[3] == "never" {
		t.Errorf("--list row of another host's lock: %q, want held by otherhost:4242 with time left", f)
	}
	if f := rows["odd-job"]; len(f) != 6 || f[1] != "unknown" || f[2] != "-" || f[3] != "never" {
		t.Errorf("--list row of a value in no format: %q, want held by unknown, never expiring", f)
	}
	if len(rows) != 2 {
		t.Errorf("--list has %d rows, want 2: %q", len(rows), r.Stdout)
	}

	r = e.run("--list", "--scan", "--json")
	locks := parseLocks(t, r.Stdout)
	if l, ok := locks["other-job"]; r.Code != 0 || !ok || !l.Held || l.Key != "lock:other-job" || l.Holder != "otherhost:4242" ||
		l.Host != "otherhost" || l.PID != 4242 || l.TTLMs <= 0 || l.TTLMs > 30000 || l.Since != nil {
		t.Errorf("--list --json, another host's lock: exit %d, %+v", r.Code, l)
	}
	if l, ok := locks["odd-job"]; !ok || !l.Held || l.Holder != "unknown" || l.Host != "" || l.PID != 0 || l.TTLMs != -1 {
		t.Errorf("--list --json, a value in no format: %+v, want held by unknown, ttl_ms -1", l)
	}
	if len(locks) != 2 {
		t.Errorf("--list --json has %d locks, want 2: %q", len(locks), r.Stdout)
	}
	for _, out := range []string{r.Stdout, e.run("--list", "--scan").Stdout} {
		if strings.Contains(out, foreignSecret) {
			t.Errorf("--list shows the foreign token's secret part: %q", out)
		}
	}
}

// A key another program set under the prefix (as the seed's bash way does,
// redis-cli SET lock:x ...) is in no index of names: --list, which reads
// the index, tells a terminal so in one line after the table, naming
// --list --scan, which shows the key (and needs no such line); a pipe gets
// the rows alone.
func TestListSaysHowToSeeKeysOfOtherPrograms(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	if r := e.run("ours", "true"); r.Code != 0 { // the index holds a name
		t.Fatalf("exit %d, stderr %q", r.Code, r.Stderr)
	}
	ours := e.startJob(0, "held-by-us")
	defer ours.finish()
	if err := e.rdb.Set(ctx, "lock:by-bash", foreign, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	const note = "(keys other programs set under lock: are not listed: with-lock --list --scan shows them)"
	terminal := func(args ...string) string {
		pty := clitest.OpenPTY(t)
		p := clitest.Spec{Env: redisEnv(e.srv), Terminal: pty, Args: args}.Start(t)
		if r := p.Wait(clitest.RunTimeout); r.Code != 0 {
			t.Fatalf("%q: exit %d", args, r.Code)
		}
		out := ""
		clitest.Eventually(t, 10*time.Second, "the terminal shows the table", func() bool {
			out = p.Stdout()
			return strings.Contains(out, "held-by-us")
		})
		return strings.ReplaceAll(out, "\r\n", "\n")
	}
	if out := terminal("--list"); !strings.HasSuffix(out, "\n"+note+"\n") || strings.Contains(out, "by-bash") {
		t.Errorf("--list in a terminal:\n%s\nwant our lock, not lock:by-bash, and last the line %q", out, note)
	}
	if out := terminal("--list", "--scan"); !strings.Contains(out, "by-bash") || strings.Contains(out, note) {
		t.Errorf("--list --scan in a terminal:\n%s\nwant lock:by-bash listed and no note", out)
	}
	if r := e.run("--list"); r.Code != 0 || r.Stderr != "" || strings.Contains(r.Stdout, note) || !strings.Contains(r.Stdout, "held-by-us") {
		t.Errorf("--list in a pipe: exit %d, stdout %q, stderr %q; want the rows alone", r.Code, r.Stdout, r.Stderr)
	}
}
