//go:build cronfleet

package cronfleet

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
)

// The README's crontab block, as it is written, installed as root's crontab
// on three hosts (UTS namespaces, one Debian cron daemon each) whose clocks
// are 5 s apart, sharing one Redis as redis.internal:6379, for at least
// three windows: at every minute (and five-minute slot, and night) each of
// its jobs runs exactly once across the fleet, and nothing is mailed but
// a failed run's own output: every job prints a line when it succeeds,
// which cron would mail unless the block holds it back. A job fails on
// its first attempt in some windows: another host then runs it again in
// the same window. The jobs
// are stand-ins that record host and time by Redis's clock; with-lock is
// this checkout's, called through a wrapper that records each call.
// Debian's cron reads /etc/environment through pam_env, and the crontab's
// own variables win over it: the test-bed's /etc/environment sets a marker
// the jobs must see, and a PATH and WITH_LOCK_REDIS they must not.
func TestReadmeCrontabRunsOncePerWindowOnAFleet(t *testing.T) {
	for _, tool := range []string{"cron", "unshare", "redis-server", "redis-cli", "ip", "dpkg"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is missing: run make test-cron, which installs cron, faketime and redis-server", tool)
		}
	}
	block, lines := readmeCrontab(t)
	bin := clitest.Binary(t)
	dir := t.TempDir()
	layOut(t, dir, block, lines, bin)
	p := planFleet(t, lines, time.Now())
	p.write(t, dir)
	t.Logf("the fleet runs until %s; cron's clocks are moved by %s from Redis's, then skewed by host: %+v",
		p.until.Format(time.TimeOnly), p.cronAhead, fleet)
	runFleet(t, dir, p)
	check(t, dir, p, lines, envValue(block, "PATH"))
}

// layOut writes what fleet.sh mounts: the crontab, the jobs' stand-ins,
// the with-lock wrapper, the mail stub and /etc/environment.
func layOut(t *testing.T, dir, block string, lines []cronLine, bin string) {
	t.Helper()
	for _, d := range []string{"opt/jobs", "bin", "log", "mail"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		"crontab": block,
		// Debian's pam_env reads it for every cron job.
		"environment": "FLEET_FROM_PAM=read\nPATH=/nonexistent\nWITH_LOCK_REDIS=redis://127.0.0.1:1/0\n",
		"sendmail": "#!/bin/sh\n# cron's mailer: files each mail under mail/, named for the host that sent it\n" +
			"f=$(mktemp " + dir + "/mail/$(hostname).XXXXXX)\n{ echo \"sendmail $*\"; cat; } >\"$f\"\n",
		"bin/with-lock": "#!/bin/sh\n# with-lock as cron calls it, recorded: host, start, exit code, arguments\n" +
			"start=$(date +%s)\n" + bin + " \"$@\"\ncode=$?\n" +
			"echo \"$(hostname) $start $code $*\" >>" + dir + "/log/calls\nexit $code\n",
	}
	for _, l := range lines {
		files[strings.TrimPrefix(l.job, "/")] = standIn(dir, l.name())
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// standIn is a job that records on which host and when, by Redis's clock,
// it started and what PAM and the crontab gave it. In the slots listed in
// fails/<job> it takes 8 s, longer than the hosts' skew, so that the others
// wait for it, and fails once; elsewhere it takes a second, so that it is
// over before the next host's cron fires. Either way it prints a line: a
// failure's is to be mailed, a success's is not.
func standIn(dir, job string) string {
	return `#!/bin/sh
log=` + dir + `/log/runs
host=$(hostname)
now=$(redis-cli -h redis.internal TIME | head -n 1)
slot=$(( (now + 30) / 60 * 60 ))
echo "$host $now ` + job + ` start ${FLEET_FROM_PAM:-unset} $PATH" >>"$log"
if grep -qx "$slot" ` + dir + `/fails/` + job + `; then
	sleep 8
	if mkdir ` + dir + `/log/failed-` + job + `-$slot 2>/dev/null; then
		echo "$host $now ` + job + ` failed" >>"$log"
		echo "` + job + ` failed on purpose on $host"
		exit 1
	fi
else
	sleep 1
fi
echo "$host $now ` + job + ` ok" >>"$log"
echo "` + job + ` succeeded on $host"
`
}

// write records the plan for fleet.sh and the stand-ins.
func (p *plan) write(t *testing.T, dir string) {
	t.Helper()
	var hosts strings.Builder
	for _, h := range fleet {
		fmt.Fprintf(&hosts, "%s %+d\n", h.name, int64((p.cronAhead+h.skew)/time.Second))
	}
	files := map[string]string{"hosts": hosts.String(),
		"start": strconv.FormatInt(p.start.Unix(), 10) + "\n", "until": strconv.FormatInt(p.until.Unix(), 10) + "\n"}
	for job, slots := range p.fails {
		var b strings.Builder
		for s := range slots {
			fmt.Fprintln(&b, s)
		}
		files["fails/"+job] = b.String()
	}
	if err := os.MkdirAll(filepath.Join(dir, "fails"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// runFleet runs fleet.sh as process 1 of new PID, mount and network
// namespaces until the plan's end. Whatever happens to the test, nothing
// is left running: the kernel ends a PID namespace's processes with its
// process 1, which --kill-child kills with unshare, which dies with this
// test process (Pdeathsig) or at the deadline.
func runFleet(t *testing.T, dir string, p plan) {
	t.Helper()
	ctx, cancel := context.WithDeadline(context.Background(), p.until.Add(time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", "--pid", "--fork", "--kill-child", "--mount", "--net", "--mount-proc",
		"bash", "fleet.sh", dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	runtime.LockOSThread() // Pdeathsig follows the thread that started unshare
	out, err := cmd.CombinedOutput()
	runtime.UnlockOSThread()
	if err != nil {
		t.Fatalf("the fleet: %v\n%s%s", err, out, logs(dir))
	}
}

// logs are the crons' and Redis's own output, for a failure's message.
func logs(dir string) string {
	var b strings.Builder
	paths, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, p := range paths {
		text, _ := os.ReadFile(p)
		fmt.Fprintf(&b, "--- %s\n%s", filepath.Base(p), text)
	}
	return b.String()
}

// envValue is the value a variable line of the crontab block sets.
func envValue(block, name string) string {
	for _, line := range strings.Split(block, "\n") {
		if v, ok := strings.CutPrefix(line, name+"="); ok {
			return v
		}
	}
	return ""
}

// slotOf is the minute, by the shared clock, nearest to Unix second s:
// every fire and every retry starts within 30 s of its minute.
func slotOf(s int64) int64 { return (s + 30) / 60 * 60 }

// check reads what the fleet did against the plan.
func check(t *testing.T, dir string, p plan, lines []cronLine, path string) {
	t.Helper()
	when := func(s int64) string { return time.Unix(s, 0).UTC().Format(time.TimeOnly) }
	// Every host's cron called with-lock once per line per slot the line
	// fires in, the three 5 s apart; with-lock exited 0, or with the job's 1
	// where the job failed.
	calls := map[string][]fields{} // "<args> <slot>" -> calls
	for _, f := range records(t, filepath.Join(dir, "log", "calls")) {
		start, _ := strconv.ParseInt(f[1], 10, 64)
		k := strings.Join(f[3:], " ") + " " + strconv.FormatInt(slotOf(start), 10)
		calls[k] = append(calls[k], f)
	}
	windows := 0
	for _, l := range lines {
		windows = max(windows, len(p.fires[l.name()]))
		for _, s := range p.fires[l.name()] {
			k := strings.Join(l.args, " ") + " " + strconv.FormatInt(s, 10)
			got := calls[k]
			delete(calls, k)
			hosts, first, last, failed := map[string]bool{}, int64(1<<62), int64(0), 0
			for _, f := range got {
				start, _ := strconv.ParseInt(f[1], 10, 64)
				hosts[f[0]], first, last = true, min(first, start), max(last, start)
				switch {
				case f[2] == "1" && p.fails[l.name()][s]:
					failed++
				case f[2] != "0":
					t.Errorf("%s at %s: with-lock exited %s on %s", l.name(), when(s), f[2], f[0])
				}
			}
			if len(got) != len(fleet) || len(hosts) != len(fleet) {
				t.Errorf("%s at %s: with-lock was called %d times by %d hosts, want once by each of %d: %q",
					l.name(), when(s), len(got), len(hosts), len(fleet), got)
			} else if last-first < 7 {
				t.Errorf("%s at %s: the hosts called with-lock within %ds, want their clocks' 10s apart", l.name(), when(s), last-first)
			}
		}
	}
	for k, c := range calls {
		t.Errorf("with-lock %s: called when its line should not fire: %q", k, c)
	}
	if windows < 3 {
		t.Errorf("the fleet ran for %d windows of its most frequent line, want at least 3", windows)
	}

	// One successful run per window, after a failure on another host where
	// the plan made the first attempt fail, and no run outside the plan.
	type outcome struct{ ok, failed []string }
	runs := map[string]*outcome{} // "<job> <slot>"
	for _, f := range records(t, filepath.Join(dir, "log", "runs")) {
		at, _ := strconv.ParseInt(f[1], 10, 64)
		k := f[2] + " " + strconv.FormatInt(slotOf(at), 10)
		if runs[k] == nil {
			runs[k] = &outcome{}
		}
		switch f[3] {
		case "start":
			if len(f) != 6 || f[4] != "read" || f[5] != path {
				t.Errorf("%s started with FLEET_FROM_PAM %q and PATH %q; want /etc/environment's marker (pam_env) and the crontab's PATH %q",
					f[2], strings.Join(f[4:5], ""), strings.Join(f[5:], ""), path)
			}
		case "ok":
			runs[k].ok = append(runs[k].ok, f[0])
		case "failed":
			runs[k].failed = append(runs[k].failed, f[0])
		}
	}
	failures := map[string]int{} // "<job> failed on purpose on <host>" -> how many
	for job, slots := range p.fires {
		for _, s := range slots {
			k := job + " " + strconv.FormatInt(s, 10)
			o := runs[k]
			delete(runs, k)
			if o == nil {
				o = &outcome{}
			}
			wantFailed := 0
			if p.fails[job][s] {
				wantFailed = 1
			}
			if len(o.ok) != 1 || len(o.failed) != wantFailed || wantFailed == 1 && o.ok[0] == o.failed[0] {
				t.Errorf("%s in the window of %s: succeeded on %q, failed on %q; want one success, after %d failure(s) on another host",
					job, when(s), o.ok, o.failed, wantFailed)
			}
			for _, h := range o.failed {
				failures[job+" failed on purpose on "+h]++
			}
		}
	}
	for k, o := range runs {
		t.Errorf("%s: ran where no line fired: succeeded on %q, failed on %q", k, o.ok, o.failed)
	}

	// Cron mails a job's output: a failed run's own line, and nothing from
	// a host that did not run the job.
	mails, _ := filepath.Glob(filepath.Join(dir, "mail", "*"))
	sort.Strings(mails)
	for _, m := range mails {
		text, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		body := string(text)
		if _, b, ok := strings.Cut(body, "\n\n"); ok {
			body = strings.TrimSpace(b)
		}
		switch {
		case strings.Contains(body, " succeeded on "):
			t.Errorf("cron mailed a successful run's output from %s:\n%s", filepath.Base(m), text)
		case failures[body] <= 0:
			t.Errorf("cron mailed from %s:\n%s", filepath.Base(m), text)
		}
		failures[body]--
	}
	for f, n := range failures {
		if n > 0 {
			t.Errorf("%d failed run(s) were not mailed: %q", n, f)
		}
	}
	if t.Failed() {
		t.Log(logs(dir))
		return
	}
	n, retried := 0, 0
	for job, slots := range p.fires {
		n += len(slots)
		retried += len(p.fails[job])
	}
	t.Logf("%d calls of with-lock by cron in %d windows of %d lines: one success per window, %d of them after a failure on another host; %d mails, each a failed run's output",
		n*len(fleet), n, len(lines), retried, len(mails))
}

// fields is one line of a record the wrapper or a stand-in wrote.
type fields []string

// records reads a log of lines of space-separated fields.
func records(t *testing.T, path string) []fields {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []fields
	for _, line := range strings.Split(strings.TrimSpace(string(text)), "\n") {
		if f := strings.Fields(line); len(f) >= 4 {
			out = append(out, f)
		}
	}
	return out
}
