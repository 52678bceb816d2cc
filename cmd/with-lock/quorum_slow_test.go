package main_test

import (
	"context"
	"regexp"
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
