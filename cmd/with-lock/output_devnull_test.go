package main_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/with-lock/with-lock/internal/clitest"
)

// /dev/null is a character device but no terminal: with cron's
// ">/dev/null 2>&1", or either half of it, the output is still captured
// for the end ping and the record, and --output-on-failure from the
// environment still holds it back.
func TestOutputIsCapturedWhenRedirectedToDevNull(t *testing.T) {
	t.Parallel()
	e := setup(t)
	srv := startPingServer(t, nil, "", nil)
	const (
		null = "/dev/null"
		file = "file" // a file in the test's directory
		pipe = ""     // the pipe the test reads
	)
	tests := []struct {
		name           string
		env            []string
		args           []string
		stdout, stderr string
		code           int
		wantStdout     string   // on the pipe, when stdout is one
		wantFile       string   // in the file, when stdout is one
		wantPing       string   // the end ping's body, with --ping
		wantRecorded   []string // lines of the record's output, with --record-output
	}{
		{name: "--ping, stdout to /dev/null", stdout: null,
			args: []string{"--ping", srv.URL + "/hc/u", "p1", "sh", "-c", "seq 1 5; exit 4"},
			code: 4, wantPing: "1\n2\n3\n4\n5\n"},
		{name: "--ping, >/dev/null 2>&1", stdout: null, stderr: null,
			args: []string{"--ping", srv.URL + "/hc/u", "p1", "sh", "-c", "seq 1 5; exit 4"},
			code: 4, wantPing: "1\n2\n3\n4\n5\n"},
		{name: "--record-output, stdout to a file, stderr to /dev/null", stdout: file, stderr: null,
			args: []string{"--record-output", "4", "rec2", "sh", "-c", "echo o; echo e >&2; exit 2"},
			code: 2, wantFile: "o\n", wantRecorded: []string{"o", "e"}},
		{name: "--record-output, >/dev/null 2>&1", stdout: null, stderr: null,
			args: []string{"--record-output", "4", "rec2", "sh", "-c", "echo o; echo e >&2; exit 2"},
			code: 2, wantRecorded: []string{"o", "e"}},
		{name: "WITH_LOCK_OUTPUT_ON_FAILURE, stderr to /dev/null, success", stderr: null,
			env:  []string{"WITH_LOCK_OUTPUT_ON_FAILURE=1"},
			args: []string{"oof2", "sh", "-c", "echo held-back?"}},
		{name: "WITH_LOCK_OUTPUT_ON_FAILURE, stderr to /dev/null, failure", stderr: null,
			env:  []string{"WITH_LOCK_OUTPUT_ON_FAILURE=1"},
			args: []string{"oof2", "sh", "-c", "echo held-back?; echo err >&2; exit 1"},
			code: 1, wantStdout: "held-back?\nerr\n"},
	}
	open := func(t *testing.T, where string) *os.File {
		switch where {
		case pipe:
			return nil
		case file:
			f, err := os.Create(e.path(t.Name()[strings.LastIndexByte(t.Name(), '/')+1:]))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			return f
		}
		f, err := os.OpenFile(where, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(srv.got())
			stdout, stderr := open(t, tt.stdout), open(t, tt.stderr)
			r := clitest.Spec{Env: append(redisEnv(e.srv), tt.env...), Args: tt.args, Stdout: stdout, Stderr: stderr}.
				Start(t).Wait(clitest.RunTimeout)
			if r.Code != tt.code || r.Stdout != tt.wantStdout {
				t.Errorf("exit %d, stdout %q; want %d and %q (stderr %q)", r.Code, r.Stdout, tt.code, tt.wantStdout, r.Stderr)
			}
			if tt.stdout == file {
				if got := readFile(t, stdout.Name()); got != tt.wantFile {
					t.Errorf("stdout's file has %q, want %q: the command's stdout passed through", got, tt.wantFile)
				}
			}
			if tt.wantPing != "" {
				got := srv.got()[before:]
				if len(got) != 2 || got[1].method != "POST" || got[1].body != tt.wantPing {
					t.Errorf("pings %+v; want start, then a POST with the output %q", got, tt.wantPing)
				}
			}
			if tt.wantRecorded != nil {
				st := e.run("--status", "--json", tt.args[2])
				var got struct {
					LastRun *runJSON `json:"last_run"`
				}
				if err := json.Unmarshal([]byte(st.Stdout), &got); err != nil {
					t.Fatalf("--status --json %q: %v", st.Stdout, err)
				}
				// Two pipes, read as they come: either order.
				if got.LastRun == nil || !sameLines(got.LastRun.Output, tt.wantRecorded) {
					t.Errorf("last run %+v; want the output %q recorded", got.LastRun, tt.wantRecorded)
				}
			}
		})
	}
}

// sameLines reports whether text is the lines want, in any order.
func sameLines(text string, want []string) bool {
	got := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(got) != len(want) {
		return false
	}
	for _, w := range want {
		if !strings.Contains("\n"+text, "\n"+w+"\n") {
			return false
		}
	}
	return true
}
