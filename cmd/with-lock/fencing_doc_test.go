package main_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// docs/fencing.md's recipes run as written, against real databases: the
// tests take its code blocks, so the guide and the tests cannot drift.

// fencingBlock returns the block of docs/fencing.md whose text begins, after
// an optional "#!/bin/sh" line, with first.
func fencingBlock(t *testing.T, first string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "fencing.md"))
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(string(b), "```")
	for i := 1; i < len(parts); i += 2 {
		_, body, _ := strings.Cut(parts[i], "\n") // drop the info string
		if strings.HasPrefix(strings.TrimPrefix(body, "#!/bin/sh\n"), first) {
			return body
		}
	}
	t.Fatalf("docs/fencing.md has no block beginning %q", first)
	return ""
}

// fencingGate is /opt/jobs/report.sh in the tests: it says the run's fence,
// waits until the test lets run $RUN on, and prints its report.
const fencingGate = `#!/bin/sh
printf '%s\n' "$WITH_LOCK_FENCE" >"$GATE/fence.$RUN.tmp" && mv "$GATE/fence.$RUN.tmp" "$GATE/fence.$RUN"
while [ ! -e "$GATE/go.$RUN" ]; do sleep 0.02; done
echo "report of run $RUN"
`

// fencingWrapper runs the job ($0), keeps its exit code and stderr in
// $GATE, where the test reads them while with-lock is stopped, and exits
// with its code.
const fencingWrapper = `"$0" 2>"$GATE/stderr.$RUN"; rc=$?; echo $rc >"$GATE/rc.$RUN.tmp" && mv "$GATE/rc.$RUN.tmp" "$GATE/rc.$RUN"; exit $rc`

// Two runs of each recipe's job. The first takes the lock and, while it
// computes its report, with-lock is stopped (SIGSTOP) until the lock has
// expired; the second takes the lock and writes its report. The first's
// job then writes: the write is refused and the job exits non-zero, and
// what is stored is the second run's report and fence.
func TestFencingGuideRefusesTheStaleWrite(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	sqlite := needTool(t, "sqlite3", "make sqlite (the Debian package sqlite3)")
	needTool(t, "flock", "the Debian package util-linux")
	pg := startPostgres(t)
	for _, tc := range []struct {
		job     string // the first words of the job's block
		refused string // what the stale job's stderr says
		// prepare makes the store and returns the job's environment and
		// the words of the block that name this test's files.
		prepare func(t *testing.T, dir string) (env []string, paths map[string]string)
		// stored is the store's report and fence, as "fence|report".
		stored func(t *testing.T, dir string) string
	}{
		{
			job: "# nightly-report-postgres:", refused: `no rows returned for \gset`,
			prepare: func(t *testing.T, dir string) ([]string, map[string]string) {
				pg.createDB("report")
				pg.must("report", fencingBlock(t, "-- reports, for PostgreSQL"))
				return pg.env("report"), nil
			},
			stored: func(t *testing.T, dir string) string {
				return pg.must("report", "SELECT fence, body FROM reports WHERE name = 'nightly'")
			},
		},
		{
			job: "# nightly-history-postgres:", refused: `no rows returned for \gset`,
			prepare: func(t *testing.T, dir string) ([]string, map[string]string) {
				pg.createDB("history")
				pg.must("history", fencingBlock(t, "-- reports, for PostgreSQL"))
				return pg.env("history"), nil
			},
			stored: func(t *testing.T, dir string) string {
				// The history has the second run's row alone: the stale
				// transaction left nothing.
				return pg.must("history", "SELECT r.fence, r.body FROM reports r JOIN report_history h USING (name, fence, body)"+
					" WHERE (SELECT count(*) FROM report_history) = 1")
			},
		},
		{
			job: "# nightly-report-sqlite:", refused: "stale fence: a later run has written this row",
			prepare: func(t *testing.T, dir string) ([]string, map[string]string) {
				db := filepath.Join(dir, "reports.db")
				cmd := exec.Command(sqlite, "-bail", db)
				cmd.Stdin = strings.NewReader(fencingBlock(t, "-- reports, for SQLite"))
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("sqlite3: %v\n%s", err, out)
				}
				return nil, map[string]string{"/var/lib/reports/reports.db": db}
			},
			stored: func(t *testing.T, dir string) string {
				out, err := exec.Command(sqlite, filepath.Join(dir, "reports.db"),
					"SELECT fence, body FROM reports WHERE name = 'nightly'").CombinedOutput()
				if err != nil {
					t.Fatalf("sqlite3: %v\n%s", err, out)
				}
				return strings.TrimSpace(string(out))
			},
		},
		{
			job: "# nightly-report-file:", refused: "was written by a later run",
			prepare: func(t *testing.T, dir string) ([]string, map[string]string) {
				writeFile(t, filepath.Join(dir, "write-fenced"), []byte(fencingBlock(t, "# write-fenced FILE:")), 0o755)
				return nil, map[string]string{"/srv/reports/nightly.txt": filepath.Join(dir, "nightly.txt"),
					"write-fenced ": filepath.Join(dir, "write-fenced") + " "}
			},
			stored: func(t *testing.T, dir string) string {
				if left, _ := filepath.Glob(filepath.Join(dir, "nightly.txt.new.*")); len(left) > 0 {
					t.Errorf("the refused write left %q behind", left)
				}
				return strings.TrimSpace(readFile(t, filepath.Join(dir, "nightly.txt.fence"))) + "|" +
					strings.TrimSpace(readFile(t, filepath.Join(dir, "nightly.txt")))
			},
		},
	} {
		name := strings.TrimSuffix(strings.TrimPrefix(tc.job, "# "), ":")
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "report.sh"), []byte(fencingGate), 0o755)
			env, paths := tc.prepare(t, dir)
			job := fencingBlock(t, tc.job)
			paths = mapsWith(paths, "/opt/jobs/report.sh", filepath.Join(dir, "report.sh"))
			for from, to := range paths {
				if !strings.Contains(job, from) {
					t.Fatalf("the job's block has no %q to put this test's file in", from)
				}
				job = strings.ReplaceAll(job, from, to)
			}
			jobPath := writeFile(t, filepath.Join(dir, "job"), []byte(job), 0o755)
			run := func(id string, flags ...string) *clitest.Proc {
				env := append(append(redisEnv(srv), env...), "GATE="+dir, "RUN="+id)
				args := append(append([]string{"--fence"}, flags...), name, "sh", "-c", fencingWrapper, jobPath)
				return clitest.Start(t, env, args...)
			}
			gatePassed := func(id string) { touch(t, filepath.Join(dir, "go."+id)) }
			fence := func(id string) int64 {
				f, err := strconv.ParseInt(strings.TrimSpace(readFile(t, filepath.Join(dir, "fence."+id))), 10, 64)
				if err != nil {
					t.Fatalf("run %s's fence: %v", id, err)
				}
				return f
			}

			const ttl = time.Second
			a := run("a", "--ttl", ttl.String())
			t.Cleanup(func() { gatePassed("a") }) // a failed test leaves no job waiting
			a.WaitFile(filepath.Join(dir, "fence.a"))
			a.Signal(syscall.SIGSTOP)
			stopped := time.Now()
			rdb := srv.Client()
			clitest.Eventually(t, ttl+10*time.Second, "the lock of the stopped run expiring", func() bool {
				return rdb.Exists(context.Background(), "lock:"+name).Val() == 0
			})
			t.Logf("lock expired %s after with-lock was stopped", time.Since(stopped).Round(time.Millisecond))

			gatePassed("b")
			b := run("b").Wait(clitest.RunTimeout)
			if b.Code != 0 || readFile(t, filepath.Join(dir, "rc.b")) != "0\n" {
				t.Fatalf("the second run: exit %d, stderr %q, job's stderr %q", b.Code, b.Stderr, readFile(t, filepath.Join(dir, "stderr.b")))
			}

			gatePassed("a")
			clitest.Eventually(t, 30*time.Second, "the first run's job ending", func() bool {
				return exists(filepath.Join(dir, "rc.a"))
			})
			rc, stderr := strings.TrimSpace(readFile(t, filepath.Join(dir, "rc.a"))), readFile(t, filepath.Join(dir, "stderr.a"))
			a.Signal(syscall.SIGCONT)
			res := a.Wait(clitest.RunTimeout)
			t.Logf("stale job: exit %s, stderr %q; its with-lock, resumed: exit %d, %q", rc, stderr, res.Code, res.Stderr)
			if rc == "0" || !strings.Contains(stderr, tc.refused) {
				t.Errorf("the stale job exited %s, stderr %q; want non-zero and %q", rc, stderr, tc.refused)
			}
			// Resumed, with-lock finds either the lock lost (125) or, first,
			// the command ended, and exits with its code.
			if res.Code != 125 && strconv.Itoa(res.Code) != rc {
				t.Errorf("the stale run's with-lock exited %d, want 125 or its command's %s", res.Code, rc)
			}
			fa, fb := fence("a"), fence("b")
			if fb <= fa {
				t.Fatalf("fences %d then %d: want the second greater", fa, fb)
			}
			if got, want := tc.stored(t, dir), strconv.FormatInt(fb, 10)+"|report of run b"; got != want {
				t.Errorf("stored %q, want the second run's %q (the first's fence was %d)", got, want, fa)
			}
		})
	}
}

// The guide's PostgreSQL trigger refuses an UPDATE that would lower the
// fence, whatever its WHERE clause, and lets one that keeps or raises it.
func TestFencingGuidePostgresTriggerRefusesALowerFence(t *testing.T) {
	t.Parallel()
	pg := startPostgres(t)
	pg.must("postgres", fencingBlock(t, "-- reports, for PostgreSQL"))
	pg.must("postgres", fencingBlock(t, "-- refuse stale writes, for PostgreSQL"))
	for _, tc := range []struct {
		fence   int64
		refused bool
	}{{5, false}, {5, false}, {7, false}, {6, true}, {0, true}, {8, false}} {
		_, err := pg.query("postgres", fmt.Sprintf("UPDATE reports SET body = 'by %d', fence = %d WHERE name = 'nightly'", tc.fence, tc.fence))
		if refused := err != nil; refused != tc.refused || refused && !strings.Contains(err.Error(), "stale fence") {
			t.Errorf("an UPDATE with fence %d: %v; want refused %v, for a stale fence", tc.fence, err, tc.refused)
		}
	}
	if got := pg.must("postgres", "SELECT fence, body FROM reports"); got != "8|by 8" {
		t.Errorf("stored %q, want the last write that was not refused, 8|by 8", got)
	}
}

// mapsWith is m with k set to v; m may be nil.
func mapsWith(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}
