package main_test

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
)

// --output-on-failure, as cron runs it: with-lock's stdout and stderr are
// pipes, and whatever it prints is mailed.

// A run that succeeds prints nothing; one that fails in any way prints
// the command's stdout and stderr as one stream on stdout, in the order
// they were written.
func TestOutputOnFailurePrintsOnlyWhenTheRunFailed(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const script = `echo out1; echo err1 >&2; echo out2; echo err2 >&2; `
	const all = "out1\nerr1\nout2\nerr2\n"
	tests := []struct {
		name   string
		flags  []string
		script string
		code   int
		stdout string
	}{
		{"success", nil, script + "exit 0", 0, ""},
		{"failure", nil, script + "exit 3", 3, all},
		{"killed by a signal", nil, script + "kill -TERM $$", 128 + 15, all},
		{"--max-run ran out", []string{"--max-run", "2s"}, script + "exec sleep 30", 124, all}, // time to print first, on a loaded machine too
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append(append([]string{"--output-on-failure"}, tt.flags...), "job", "sh", "-c", tt.script)
			r := e.run(args...)
			if r.Code != tt.code || r.Stdout != tt.stdout {
				t.Errorf("exit %d, stdout %q; want %d and %q", r.Code, r.Stdout, tt.code, tt.stdout)
			}
			if tt.code != 124 && r.Stderr != "" { // --max-run says it stopped the job
				t.Errorf("stderr %q: want the command's stderr held back with its stdout", r.Stderr)
			}
		})
	}
}

// A run that loses its lock failed (125): the output held back is
// printed, what the job wrote while it was stopped included.
func TestOutputOnFailurePrintsTheOutputOfALostRun(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ran := filepath.Join(e.dir, "ran")
	const job = `trap 'echo stopped; exit 1' TERM; echo before; echo err >&2; touch "$0"; while :; do sleep 0.05; done`
	p := clitest.Start(t, redisEnv(e.srv), "--output-on-failure", "--ttl", "1s", "lost", "sh", "-c", job, ran)
	p.WaitFile(ran)
	if err := e.rdb.Set(t.Context(), "lock:lost", foreign, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	r := p.Wait(clitest.RunTimeout)
	// The shell may say that its sleep was terminated, before its trap.
	if r.Code != 125 || !strings.HasPrefix(r.Stdout, "before\nerr\n") || !strings.HasSuffix(r.Stdout, "stopped\n") {
		t.Errorf("exit %d, stdout %q (stderr %q); want 125 and the job's output, before and after the loss", r.Code, r.Stdout, r.Stderr)
	}
}

// 10 MB of binary output, more than memory holds, is printed byte for byte
// when the run fails.
func TestOutputOnFailureLosesNothingAt10MB(t *testing.T) {
	t.Parallel()
	e := setup(t)
	data := make([]byte, 10_000_000)
	_, _ = rand.Read(data)
	path := filepath.Join(e.dir, "data")
	writeFile(t, path, data, 0o644)
	r := e.run("--output-on-failure", "job", "sh", "-c", `cat "$0"; exit 1`, path)
	if r.Code != 1 || !bytes.Equal([]byte(r.Stdout), data) {
		t.Errorf("exit %d, %d bytes printed; want 1 and the 10,000,000 written, byte for byte (stderr %q)", r.Code, len(r.Stdout), r.Stderr)
	}
}

// A background child that keeps the output pipe open does not hold the
// run beyond what --leftovers says: with kill it is stopped at once, and
// with wait the run ends with it, its output included.
func TestOutputOnFailureWithAPipeHeldOpenByABackgroundChild(t *testing.T) {
	t.Parallel()
	e := setup(t)
	r := e.run("--output-on-failure", "--leftovers", "kill", "job", "sh", "-c", `echo before; sleep 60 & echo after; exit 2`)
	if r.Code != 2 || r.Stdout != "before\nafter\n" {
		t.Errorf("--leftovers kill: exit %d, stdout %q; want 2 and both lines", r.Code, r.Stdout)
	}
	if r.Duration > 20*time.Second {
		t.Errorf("--leftovers kill: the run took %s: it waited for the background child", r.Duration)
	}
	r = e.run("--output-on-failure", "-q", "job", "sh", "-c", `(sleep 0.3; echo late) & echo early; exit 2`)
	if r.Code != 2 || r.Stdout != "early\nlate\n" {
		t.Errorf("--leftovers wait: exit %d, stdout %q; want 2, and the child's line after the command's", r.Code, r.Stdout)
	}
}

// What with-lock says of a background child that outlives the command
// ("holding lock:job until its 2 remaining processes end") is held back
// with the output: a success prints nothing, a failure prints it beside
// the output.
func TestOutputOnFailureHoldsBackTheLeftoversLine(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for _, code := range []int{0, 2} {
		// The child outlives the command by a second: time for with-lock,
		// on a loaded machine too, to find it left behind.
		r := e.run("--output-on-failure", "job", "sh", "-c", `(sleep 1; echo late) & echo early; exit "$0"`, strconv.Itoa(code))
		stdout, said := "", false
		if code != 0 {
			stdout, said = "early\nlate\n", true
		}
		if r.Code != code || r.Stdout != stdout || hasLine(r.Stderr, "holding lock:job until its ", " remaining process") != said {
			t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q, and the leftovers line: %v", r.Code, r.Stdout, r.Stderr, code, stdout, said)
		}
		if code == 0 && r.Stderr != "" {
			t.Errorf("a success printed %q on stderr, want nothing", r.Stderr)
		}
	}
}

// At a terminal the command keeps it: --output-on-failure from the
// environment or the config file holds nothing back there, and only the
// flag on the command line does.
func TestOutputOnFailureLeavesATerminalAloneUnlessGivenAsAFlag(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const script = `if [ -t 1 ]; then echo on-a-terminal; else echo on-a-pipe; fi`
	pty := clitest.OpenPTY(t)
	p := clitest.Spec{Env: append(redisEnv(e.srv), "WITH_LOCK_OUTPUT_ON_FAILURE=1"), Terminal: pty,
		Args: []string{"job", "sh", "-c", script}}.Start(t)
	if r := p.Wait(clitest.RunTimeout); r.Code != 0 || !strings.Contains(r.Stdout, "on-a-terminal") {
		t.Errorf("from the environment: exit %d, terminal showed %q; want the command on the terminal", r.Code, r.Stdout)
	}
	pty = clitest.OpenPTY(t)
	p = clitest.Spec{Env: redisEnv(e.srv), Terminal: pty,
		Args: []string{"--output-on-failure", "job", "sh", "-c", script + "; exit 1"}}.Start(t)
	if r := p.Wait(clitest.RunTimeout); r.Code != 1 || !strings.Contains(r.Stdout, "on-a-pipe") {
		t.Errorf("as a flag: exit %d, terminal showed %q; want the output held back, and shown at the failure", r.Code, r.Stdout)
	}
}

// The README's recipes for what the job printed run as written, with this
// test's check server and a job in their places: with
// --output-on-failure a success says nothing and a failure prints what the
// job said; with --ping the end ping carries it, and with --record-output
// --history shows it.
func TestReadmeOutputRecipesRunAsWritten(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Job output\n")
	if !ok {
		t.Fatal("README.md has no section \"Job output\"")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	if !strings.Contains(section, "\nMAILTO=") {
		t.Error("the README's cron recipe sets no MAILTO")
	}
	var lines [][]string
	for _, line := range strings.Split(section, "\n") {
		if f := strings.Fields(line); len(f) > 7 && f[5] == "with-lock" {
			lines = append(lines, f[6:])
		}
	}
	if len(lines) != 2 {
		t.Fatalf("found %d crontab lines in the section, want the cron and the healthchecks recipes", len(lines))
	}
	for _, line := range lines {
		t.Run(strings.Join(line, " "), func(t *testing.T) {
			e := setup(t)
			srv := startPingServer(t, nil, "", nil)
			name, held := line[len(line)-2], slices.Contains(line, "--output-on-failure")
			for _, job := range []struct {
				script, output string
				code           int
			}{
				{"echo all good", "all good\n", 0},
				{"echo exported 1200 rows; echo disk full >&2; exit 3", "exported 1200 rows\ndisk full\n", 3},
			} {
				args := append(slices.Clone(line[:len(line)-1]), "sh", "-c", job.script)
				for i, a := range args {
					if a == "https://hc-ping.com/<check-uuid>" {
						args[i] = srv.URL + "/check-uuid"
					}
				}
				r := e.run(args...)
				out := r.Stdout + r.Stderr
				if held && job.code == 0 {
					job.output = "" // held back, and the run succeeded
				}
				if r.Code != job.code || out != job.output {
					t.Errorf("%q: exit %d, printed %q; want %d and %q", job.script, r.Code, out, job.code, job.output)
				}
			}
			if slices.Contains(line, "--ping") {
				got := srv.got()
				if len(got) != 4 || got[1].body != "all good\n" || !strings.Contains(got[3].body, "disk full\n") {
					t.Errorf("pings %+v: want the output with each end ping", got)
				}
			}
			if slices.Contains(line, "--record-output") {
				r := e.run("--history", name)
				if !hasLine(r.Stdout, "  | disk full") || !hasLine(r.Stdout, "  | all good") {
					t.Errorf("--history: %q; want each run's output", r.Stdout)
				}
			}
			if !slices.Contains(line, "--ping") && !slices.Contains(line, "--record-output") && !held {
				t.Errorf("line %q asks for none of the output", line)
			}
		})
	}
}
