package main_test

// The seed contract: the binary, one run at a time, the command under the
// lock, its exit code, the key during the run, a busy lock refused at once,
// a lock taken over, one SET and one EVAL on the wire.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/luacode"
	"github.com/with-lock/with-lock/internal/redistest"
)

// The binary builds and is executable.
func TestBinaryIsExecutable(t *testing.T) {
	t.Parallel()
	fi, err := os.Stat(clitest.Binary(t))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&0o111 == 0 || !fi.Mode().IsRegular() {
		t.Errorf("%s has mode %v, want an executable file", fi.Name(), fi.Mode())
	}
}

// The command runs, and afterwards the lock is gone.
func TestRunsCommandThenReleasesLock(t *testing.T) {
	t.Parallel()
	e := setup(t)
	r := e.run("x", "touch", e.path("ran"))
	if r.Code != 0 || r.Stderr != "" || r.Stdout != "" {
		t.Errorf("with-lock x touch = %d, %q, %q; want 0 and silence", r.Code, r.Stdout, r.Stderr)
	}
	if !e.exists("ran") {
		t.Error("the command did not run")
	}
	if n := e.rdb.Exists(context.Background(), "lock:x").Val(); n != 0 {
		t.Error("lock:x still exists after the command")
	}
}

// The command's exit code passes through.
func TestExitCodePassesThrough(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for _, code := range []int{0, 1, 3, 42, 75, 255} {
		r := e.run("x", "sh", "-c", "exit "+strconv.Itoa(code))
		if r.Code != code || r.Stderr != "" {
			t.Errorf("command exiting %d: with-lock exited %d, stderr %q", code, r.Code, r.Stderr)
		}
	}
}

// During the run the key exists with a TTL of at most 30s, holding a token
// unique to the run and naming with-lock's host and pid; the command sees
// it.
func TestKeyHoldsUniqueTokenWithTTLDuringRun(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	host, _ := os.Hostname()
	var tokens []string
	for range 2 {
		h := e.startJob(0, "x")
		if h.name != "x" || h.key != "lock:x" {
			t.Errorf("WITH_LOCK_NAME, WITH_LOCK_KEY = %q, %q; want x, lock:x", h.name, h.key)
		}
		if got := e.get("lock:x"); got != h.token {
			t.Errorf("lock:x holds %q while WITH_LOCK_TOKEN is %q", got, h.token)
		}
		if ttl := e.rdb.PTTL(ctx, "lock:x").Val(); ttl <= 0 || ttl > 30*time.Second {
			t.Errorf("PTTL of lock:x during the run = %v, want in (0, 30s]", ttl)
		}
		m := tokenRE.FindStringSubmatch(h.token)
		if m == nil || m[1] != host || m[2] != strconv.Itoa(h.Pid()) {
			t.Errorf("token %q: want %s:%d:<32 hex>, naming with-lock's host and pid", h.token, host, h.Pid())
		}
		tokens = append(tokens, h.token)
		if r := h.finish(); r.Code != 0 || r.Stderr != "" {
			t.Errorf("with-lock exited %d, stderr %q", r.Code, r.Stderr)
		}
	}
	if tokens[0] == tokens[1] {
		t.Errorf("two runs used the same token %q", tokens[0])
	}
}

// A busy lock makes with-lock exit 75 at once, without running the
// command, and leaves the lock alone.
func TestBusyLockRefusedAtOnceWith75(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	e.rdb.Set(ctx, "lock:x", foreign, 30*time.Second)
	const timeout = 20 * time.Second
	r := e.run("--redis-timeout", timeout.String(), "x", "touch", e.path("ran"))
	if r.Code != 75 {
		t.Errorf("busy lock: exit %d, want 75", r.Code)
	}
	oneLine(t, r, "lock:x is held by otherhost:4242")
	if strings.Contains(r.Stderr, foreignSecret) {
		t.Errorf("stderr %q shows the holder's token", r.Stderr)
	}
	if e.exists("ran") {
		t.Error("the command ran although the lock was busy")
	}
	if got := e.get("lock:x"); got != foreign {
		t.Errorf("lock:x became %q, want the holder's token", got)
	}
	// Fast: it does not wait for anything, in particular no timeout.
	if r.Duration >= timeout/2 {
		t.Errorf("refusal took %v, want well under the %v Redis timeout", r.Duration, timeout)
	}
}

// A lock taken over while the command ran survives our
// release; with-lock says so and still exits with the command's code.
func TestTakenOverLockSurvivesRelease(t *testing.T) {
	t.Parallel()
	e := setup(t)
	h := e.startJob(3, "x")
	e.rdb.Set(context.Background(), "lock:x", foreign, 30*time.Second)
	r := h.finish()
	if r.Code != 3 {
		t.Errorf("exit %d, want the command's 3", r.Code)
	}
	oneLine(t, r, "lock:x was no longer ours")
	if strings.Contains(r.Stderr, h.token) || strings.Contains(r.Stderr, randomPart(h.token)) {
		t.Errorf("stderr %q shows our token", r.Stderr)
	}
	if got := e.get("lock:x"); got != foreign {
		t.Errorf("lock:x became %q after our release, want the new owner's token", got)
	}
}

// On the wire, acquire is one SET NX EX and release is one EVAL of the
// compare-and-delete script; nothing else reaches Redis from with-lock but
// the connection's HELLO and, in the SET's round trip, two commands that
// touch no lock key: ahead of the SET the HSET that writes the name into
// the index of names --list reads (admin_index.go), after it INFO memory.
// No GET, DEL, SETNX or EXPIRE of the lock key is sent.
func TestAcquireIsOneSetNXAndReleaseOneEval(t *testing.T) {
	t.Parallel()
	// The release script is the fair line's hand-over (key_hand.lua)
	// followed by release.lua, without their comments, as the library
	// composes it.
	var script string
	for _, f := range []string{"key_hand.lua", "release.lua"} {
		b, err := os.ReadFile("../../lua/" + f)
		if err != nil {
			t.Fatal(err)
		}
		script += luacode.Strip(string(b))
	}
	for _, tc := range []struct {
		ttl        string
		unit, span string
		record     bool // the last-run record rides in the release's EVAL
	}{
		{"", "ex", "30", true},
		{"1500ms", "px", "1500", false},
	} {
		e := setup(t)
		mon := e.srv.Monitor()
		args := []string{"x", "true"}
		if tc.ttl != "" {
			args = append([]string{"--ttl", tc.ttl}, args...)
		}
		if !tc.record {
			args = append([]string{"--no-record"}, args...)
		}
		if r := e.run(args...); r.Code != 0 {
			t.Fatalf("with-lock %q: exit %d, %s", args, r.Code, r.Stderr)
		}
		var sent, inScript []string
		var hset, set, info, eval []string
		for _, c := range mon.Commands() {
			if c.Client == "lua" {
				inScript = append(inScript, c.Args[0]) // what the script itself did
				continue
			}
			sent = append(sent, c.Args[0])
			switch c.Args[0] {
			case "hset":
				hset = c.Args
			case "set":
				set = c.Args
			case "info":
				info = c.Args
			case "eval":
				eval = c.Args
			}
		}
		// INFO memory rides in the SET's round trip: does the server evict
		// locks? (docs/production-redis.md)
		if !slices.Equal(sent, []string{"hello", "hset", "set", "info", "eval"}) || !slices.Equal(info, []string{"info", "memory"}) {
			t.Errorf("with-lock %q sent %q (INFO %q), want exactly hello, hset, set, info memory and eval", args, sent, info)
		}
		if want := []string{"hset", "{lock:}:names", "lock:x", ""}; !slices.Equal(hset, want) {
			t.Errorf("HSET = %q, want %q: the name into the index of names, nothing else", hset, want)
		}
		if len(set) != 6 || !tokenRE.MatchString(set[2]) {
			t.Fatalf("SET = %q, want set lock:x <token> %s %s nx", set, tc.unit, tc.span)
		}
		wantSet := []string{"set", "lock:x", set[2], tc.unit, tc.span, "nx"}
		if !slices.Equal(set, wantSet) {
			t.Errorf("SET = %q, want %q", set, wantSet)
		}
		if !tc.record {
			wantEval := []string{"eval", script, "1", "lock:x", set[2], "{lock:x}:w"}
			if !slices.Equal(eval, wantEval) {
				t.Errorf("EVAL = %q, want release.lua with key lock:x, the SET's token and the waiting mark", eval)
			}
			// Nobody waits: the script compares and deletes, nothing more.
			if !slices.Equal(inScript, []string{"get", "del"}) {
				t.Errorf("the release script ran %q, want get and del", inScript)
			}
			continue
		}
		// The release script runs whole inside the EVAL, on the same key and
		// token; the other keys are the record's, history's, last success's
		// once-per marker's and leftovers note's, all in the lock's slot, and
		// the index of the prefix's names that --list reads.
		want := []string{"7", "lock:x", "{lock:x}:last", "{lock:x}:runs", "{lock:x}:ok", "{lock:x}:done", "{lock:x}:left", "{lock:}:names", set[2], "{lock:x}:w", "0"}
		if len(eval) < 2+len(want) || !strings.Contains(eval[1], script) || !slices.Equal(eval[2:2+len(want)], want) {
			t.Errorf("EVAL = %q, want release.lua and the record's keys %q with the SET's token", eval, want[2:8])
		}
	}
}

// Arguments reach the command as they are, never through a shell.
func TestArgumentsReachCommandVerbatim(t *testing.T) {
	t.Parallel()
	e := setup(t)
	marker := e.path("marker")
	args := []string{"$(touch " + marker + ")", "`touch " + marker + "`", ";", "|", "&&", "*", "$HOME", "a b", "'q'", ""}
	r := e.run(append([]string{"x", "printf", `[%s]\n`}, args...)...)
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	var want strings.Builder
	for _, a := range args {
		fmt.Fprintf(&want, "[%s]\n", a)
	}
	if r.Stdout != want.String() {
		t.Errorf("command printed\n%s\nwant the arguments verbatim\n%s", r.Stdout, want.String())
	}
	if e.exists("marker") {
		t.Error("a shell ran the arguments: the marker exists")
	}
}

// probe is a critical section that fails with 99 if it is not alone:
// mkdir is atomic, so a second holder finds the directory there. It holds
// for hold seconds and cleans up when stopped by a lost lock too.
func probe(dir, hold string) []string {
	return []string{"sh", "-c",
		`mkdir "$0" 2>/dev/null || exit 99
trap 'rmdir "$0"; exit 143' TERM
sleep "$1" & wait $!
rmdir "$0"`, filepath.Join(dir, "probe"), hold}
}

// churn runs workers goroutines, each running with-lock trials times in
// a row on one lock, and counts the exit codes.
func churn(t *testing.T, srv *redistest.Server, workers, trials int, args ...string) map[int]int {
	t.Helper()
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range trials {
				res := clitest.Run(t, redisEnv(srv), args...)
				mu.Lock()
				codes[res.Code]++
				mu.Unlock()
				if res.Code != 0 && res.Code != 125 {
					t.Logf("exit %d: %s", res.Code, res.Stderr)
				}
			}
		})
	}
	wg.Wait()
	return codes
}

// Mutual exclusion under churn: many processes, many trials, critical
// sections longer than the TTL so only renewal keeps them exclusive: no
// overlap.
func TestNoOverlapUnderChurn(t *testing.T) {
	t.Parallel() // load-tolerant: runs beside the other parallel tests, after the timing-critical ones
	srv := redistest.Start(t)
	dir := t.TempDir()
	const workers, trials = 5, 3
	// Each section holds 350ms on a 300ms TTL: renewed three times.
	args := append([]string{"-w", "30s", "--ttl", "300ms", "churn"}, probe(dir, "0.35")...)
	start := time.Now()
	codes := churn(t, srv, workers, trials, args...)
	t.Logf("%d processes × %d trials, 350ms sections on a 300ms TTL, in %s: exit codes %v (0 ran alone, 99 overlap, 125 lock presumed lost and job stopped)",
		workers, trials, time.Since(start).Round(time.Millisecond), codes)
	if codes[99] != 0 {
		t.Errorf("%d critical sections were not alone", codes[99])
	}
	if codes[0]+codes[125] != workers*trials {
		t.Errorf("exit codes %v: every trial should have run (0) or been stopped on a lost lock (125)", codes)
	}
	if codes[0] < workers*trials/2 {
		t.Errorf("only %d of %d trials kept their lock: renewal is not working", codes[0], workers*trials)
	}
}

// The probe can fail: without renewal the same sections overlap, because
// the TTL runs out under them.
func TestProbeSeesOverlapWithoutRenewal(t *testing.T) {
	t.Parallel() // load-tolerant: runs beside the other parallel tests, after the timing-critical ones
	srv := redistest.Start(t)
	dir := t.TempDir()
	args := append([]string{"--no-renew", "-w", "30s", "--ttl", "200ms", "churn"}, probe(dir, "0.6")...)
	codes := churn(t, srv, 2, 1, args...)
	t.Logf("2 processes, 600ms sections on a 200ms TTL with --no-renew: exit codes %v", codes)
	if codes[99] == 0 {
		t.Errorf("exit codes %v: the probe did not see the overlap that --no-renew allows", codes)
	}
}
