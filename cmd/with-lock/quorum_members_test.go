package main_test

// A quorum whose members differ: a slow member costs nothing, --status,
// --list and --break answer from a majority.

import (
	"context"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// slowQuorumTimeout is the --redis-timeout of the slow-member tests: a run
// that waited for the stalled member would take that long per call.
const slowQuorumTimeout = 3 * time.Second

var acquiredIn = regexp.MustCompile(`acquired lock:\S+ in (\S+),`)

// With one of three masters stalled (SIGSTOP, DEBUG SLEEP), a run acquires
// and releases as soon as the other two answer: the whole run takes well
// under the timeout. A master stalled during the run, which holds our key,
// has it removed when it wakes although with-lock has exited and its
// connection to that master was busy with a renewal: the release was
// queued for it.
func TestQuorumCLISlowMemberCostsNothing(t *testing.T) {
	t.Parallel()
	for _, st := range stalls {
		for _, during := range []bool{false, true} {
			name := st.name + "/before the run"
			if during {
				name = st.name + "/during the run"
			}
			t.Run(name, func(t *testing.T) {
				var servers []*redistest.Server
				var admins []*redis.Client
				args := []string{"--redis-timeout", slowQuorumTimeout.String(), "-v"}
				for range 3 {
					s := redistest.Start(t, "enable-debug-command", "yes")
					servers = append(servers, s)
					admins = append(admins, s.Client())
					args = append(args, "--redis", s.URL())
				}
				slow := &env{t: t, srv: servers[2], rdb: admins[2], dir: t.TempDir()}
				var r clitest.Result
				var took time.Duration
				if during {
					// A renewal every 2s: one is on its way to the stalled
					// master, on the connection the release would use, when
					// the command ends.
					const ttl = 6 * time.Second
					j := startJob(t, nil, 3, append(args, "--ttl", ttl.String(), "x")...)
					if v := slow.get("lock:x"); v != j.token {
						t.Fatalf("master 3 holds %q, want our token before it stalls", v)
					}
					resume := st.stop(slow, 4*time.Second) // ends before the key (6s) expires by itself
					time.Sleep(time.Until(j.Started.Add(ttl/3 + 500*time.Millisecond)))
					start := time.Now()
					r = j.finish()
					took = time.Since(start)
					resume()
					if r.Code != 3 {
						t.Errorf("exit %d, want the command's 3 (stderr %q)", r.Code, r.Stderr)
					}
				} else {
					clitest.Binary(t)
					resume := st.stop(slow, 4*time.Second)
					r = clitest.Run(t, nil, append(args, "x", "true")...)
					took = r.Duration
					resume()
					if r.Code != 0 {
						t.Errorf("exit %d, want 0 (stderr %q)", r.Code, r.Stderr)
					}
					m := acquiredIn.FindStringSubmatch(r.Stderr)
					if m == nil {
						t.Fatalf("stderr %q does not say how long the acquisition took", r.Stderr)
					}
					if d, err := time.ParseDuration(m[1]); err != nil || d >= slowQuorumTimeout/2 {
						t.Errorf("acquired in %s with one master stalled; want under %s", m[1], slowQuorumTimeout/2)
					}
				}
				if took >= slowQuorumTimeout/2 {
					t.Errorf("with-lock took %s to finish with one master stalled; want under %s (stderr %q)",
						took, slowQuorumTimeout/2, r.Stderr)
				}
				goneSoon(t, slow, "lock:x")
				for i, a := range admins[:2] {
					if n := a.Exists(context.Background(), "lock:x").Val(); n != 0 {
						t.Errorf("master %d still holds lock:x", i+1)
					}
				}
			})
		}
	}
}

// quorumAdminTimeout is the --redis-timeout of the admin tests with a
// stopped node: an action that waited for every node would take that long.
// quorumAdminBound is how long each may take: generous for a loaded
// machine, and still well under the timeout, so that waiting for the
// stopped node fails the test.
const (
	quorumAdminTimeout = 20 * time.Second
	quorumAdminBound   = 10 * time.Second
)

// With one of three masters stopped (SIGSTOP), --status (with the
// history it reads), --list, --history and --break answer from the other two, a majority, without waiting for the
// stopped one up to --redis-timeout; they answer as with every node up,
// and say on stderr which node did not answer. --break removes the key
// from the two that answered at once, and from the stopped one when it
// resumes.
func TestQuorumCLIAdminAnswersFromAMajorityWithANodeStopped(t *testing.T) {
	t.Parallel()
	servers, _, args, get := quorumMasters(t)
	args = append(args, "--redis-timeout", quorumAdminTimeout.String())
	j := startJob(t, nil, 3, append(args, "qa")...)
	holder := holderOf(j.token)
	for i := range servers {
		if v := get(i, "lock:qa"); v != j.token {
			t.Fatalf("node %d holds %q, want the job's token before it stops", i+1, v)
		}
	}
	stopped := servers[2]
	stopped.Signal(syscall.SIGSTOP)
	defer stopped.Signal(syscall.SIGCONT) // a second SIGCONT does nothing

	// run runs with-lock and fails the test if it has not answered within
	// quorumAdminBound.
	run := func(extra ...string) clitest.Result {
		t.Helper()
		return clitest.Start(t, nil, append(args, extra...)...).Wait(quorumAdminBound)
	}
	warned := func(what string, r clitest.Result) {
		t.Helper()
		if !hasLine(r.Stderr, "warning: of 3 nodes, node 3 (redis://", "did not answer", "from the other 2, a majority") {
			t.Errorf("%s: stderr %q does not say that node 3 did not answer", what, r.Stderr)
		}
	}

	r := run("--status", "qa")
	if want := "lock:qa is held by " + holder + ", expires in "; r.Code != 0 || !strings.HasPrefix(r.Stdout, want) {
		t.Errorf("--status: exit %d, stdout %q; want 0 and %q…", r.Code, r.Stdout, want)
	}
	warned("--status", r)

	r = run("--list")
	if r.Code != 0 || !hasLine(r.Stdout, "qa ", holder) {
		t.Errorf("--list: exit %d, stdout %q; want 0 and a row of qa held by %s", r.Code, r.Stdout, holder)
	}
	warned("--list", r)

	if r = run("--history", "qa"); r.Code != 0 {
		t.Errorf("--history: exit %d, stderr %q; want 0", r.Code, r.Stderr)
	}

	r = run("--break", "qa")
	if want := "removed lock:qa, held by " + holder + "\n"; r.Code != 0 || r.Stdout != want {
		t.Errorf("--break: exit %d, stdout %q; want 0 and %q", r.Code, r.Stdout, want)
	}
	warned("--break", r)
	for i := range 2 {
		if v := get(i, "lock:qa"); v != "" {
			t.Errorf("node %d still holds %q after --break", i+1, v)
		}
	}

	r = run("--status", "qa")
	if r.Code != 1 || !strings.HasPrefix(r.Stdout, "lock:qa is free\n") {
		t.Errorf("--status after --break: exit %d, stdout %q; want 1 and free", r.Code, r.Stdout)
	}

	// The stopped node had the key; --break queued its removal there.
	stopped.Signal(syscall.SIGCONT)
	clitest.Eventually(t, 5*time.Second, "node 3 kept the broken lock's key after it resumed", func() bool {
		return get(2, "lock:qa") == ""
	})
	j.finish()
}

// With two of three masters stopped no majority can answer: --status,
// --list and --break each fail once --redis-timeout has passed, with one
// line that says so, and exit 69 as for any Redis that does not answer.
func TestQuorumCLIAdminWithoutAMajorityFailsInOneLine(t *testing.T) {
	t.Parallel()
	servers, admins, args, _ := quorumMasters(t)
	args = append(args, "--redis-timeout", "1s")
	if err := admins[0].Set(context.Background(), "lock:qn", "someone", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	for _, s := range servers[1:] {
		s.Signal(syscall.SIGSTOP)
		defer s.Signal(syscall.SIGCONT)
	}
	for _, action := range [][]string{{"--status", "qn"}, {"--list"}, {"--break", "qn"}} {
		r := clitest.Run(t, nil, append(args, action...)...)
		if r.Code != 69 {
			t.Errorf("%s: exit %d, want 69 (stderr %q)", action[0], r.Code, r.Stderr)
		}
		oneLine(t, r, "no majority of Redis nodes: 1 of 3 nodes answered, 2 needed")
	}
}
