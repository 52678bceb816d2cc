package main_test

// A stalled Redis: --redis-timeout bounds every run, and the message names
// the setting that ran out.

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// stallTimeout is the --redis-timeout of these tests. A failed run must end
// within 1.5 of it; stallMargin is added for a loaded machine.
const (
	stallTimeout = time.Second
	stallMargin  = time.Second
)

// stall is a way of making a live redis-server stop answering: stop
// starts it (and returns once the server is silent), resume ends it and
// returns once the server answers again.
type stall struct {
	name string
	stop func(e *env, d time.Duration) (resume func())
}

var stalls = []stall{
	{"SIGSTOP", func(e *env, _ time.Duration) func() {
		e.srv.Signal(syscall.SIGSTOP)
		return func() { e.srv.Signal(syscall.SIGCONT) }
	}},
	{"DEBUG SLEEP", func(e *env, d time.Duration) func() {
		sleeper := e.srv.ClientWith(&redis.Options{ReadTimeout: d + time.Minute})
		done := make(chan error, 1)
		go func() { done <- sleeper.Do(context.Background(), "DEBUG", "SLEEP", d.Seconds()).Err() }()
		probe := e.srv.ClientWith(&redis.Options{ReadTimeout: 250 * time.Millisecond, MaxRetries: -1})
		clitest.Eventually(e.t, 10*time.Second, "the server never started its DEBUG SLEEP", func() bool {
			return probe.Ping(context.Background()).Err() != nil
		})
		return func() {
			if err := <-done; err != nil {
				e.t.Errorf("DEBUG SLEEP: %v", err)
			}
		}
	}},
}

// A run against a Redis that does not answer ends within 1.5 of
// --redis-timeout, says how long it waited, and truly waited that long;
// the admin actions are bounded the same way. Nothing is left behind
// once Redis answers again.
func TestStalledRedisFailsARunWithinOneAndAHalfTimeouts(t *testing.T) {
	t.Parallel()
	for _, st := range stalls {
		for _, tc := range []struct {
			name    string
			args    []string
			timeout time.Duration
			says    bool // the message names the wait (the admin actions' wording is their own)
		}{
			{"run", []string{"x", "touch"}, stallTimeout, true},
			// Long enough that two timeouts exceed the bound.
			{"--status", []string{"--status", "x"}, 3 * stallTimeout, true},
			{"--break", []string{"--break", "x"}, stallTimeout, false},
			{"--list", []string{"--list"}, stallTimeout, false},
		} {
			t.Run(st.name+"/"+tc.name, func(t *testing.T) {
				e := setup(t, "enable-debug-command", "yes")
				args := append([]string{"--redis-timeout", tc.timeout.String()}, tc.args...)
				if tc.name == "run" {
					args = append(args, e.path("ran"))
				}
				resume := st.stop(e, 3*tc.timeout)
				r := e.run(args...)
				resume()
				if r.Code != 69 {
					t.Errorf("exit %d, want 69 (stderr %q)", r.Code, r.Stderr)
				}
				if bound := tc.timeout*3/2 + stallMargin; r.Duration > bound {
					t.Errorf("gave up after %s with --redis-timeout %s; want at most %s", r.Duration, tc.timeout, bound)
				}
				if r.Duration < tc.timeout {
					t.Errorf("gave up after %s, before --redis-timeout %s", r.Duration, tc.timeout)
				}
				if tc.says {
					oneLine(t, r, "timed out after "+tc.timeout.String()+" (--redis-timeout)")
				}
				e.notRun("ran")
				goneSoon(t, e, "lock:x")
			})
		}
	}
}

// A run whose SET reached Redis just as it stalled cannot know whether it
// landed. It still ends within the bound, while Redis is silent, and
// leaves no lock: the clean-up it queued runs right after the SET when
// Redis resumes. The fence counter shows that the SET did land.
func TestRunWhoseSetReachedAStalledRedisEndsInTimeAndLeavesNoLock(t *testing.T) {
	t.Parallel()
	for _, st := range stalls {
		t.Run(st.name, func(t *testing.T) {
			e := setup(t, "enable-debug-command", "yes")
			ctx := context.Background()
			clitest.Binary(t) // built before the holder's key starts to run out
			// A foreign holder whose key expires while Redis is stalled;
			// --fence waits without the fair line: it tries the SET again
			// at the holder's expiry (or its poll), on the connection of
			// its first try.
			const held, stalled = 3 * time.Second, 8 * time.Second
			setAt := time.Now()
			if err := e.rdb.Set(ctx, "lock:x", foreign, held).Err(); err != nil {
				t.Fatal(err)
			}
			mon := e.srv.Monitor()
			p := clitest.Start(t, nil, "--redis", e.srv.URL(), "--redis-timeout", stallTimeout.String(),
				"--fence", "-w", "60s", "x", "touch", e.path("ran"))
			// Stalled between tries, so that the next command is a SET: the
			// first try, and the one once its subscription is confirmed,
			// have each read the holder (GET, PTTL) after their SET.
			tries, read := 0, false
			clitest.Eventually(t, 10*time.Second, "with-lock never began to wait", func() bool {
				for _, c := range mon.Commands() {
					switch strings.ToLower(c.Args[0]) {
					case "eval":
						tries, read = tries+1, false
					case "pttl":
						read = true
					}
				}
				return tries >= 2 && read
			})
			if time.Since(setAt) > held-time.Second {
				t.Fatalf("with-lock took %s to begin waiting; the test needs it before the holder's key runs out", time.Since(setAt))
			}
			resume := st.stop(e, stalled)
			// The retry is sent at the holder's expiry at the latest, and
			// may take 1.5 timeouts.
			bound := held + stallTimeout*3/2 + stallMargin
			var r clitest.Result
			select {
			case <-p.Done():
				r = p.Wait(time.Second)
			case <-time.After(stalled - time.Since(setAt)):
				resume()
				t.Fatalf("with-lock still waited when Redis had been silent for %s; want it to give up %s after the holder's SET", stalled, bound)
			}
			took := time.Since(setAt)
			// Resumed only once the holder's key has expired, so that the
			// queued SET lands.
			time.Sleep(time.Until(setAt.Add(held + 300*time.Millisecond)))
			resume()
			if r.Code != 69 {
				t.Errorf("exit %d, want 69 (stderr %q)", r.Code, r.Stderr)
			}
			if took > bound {
				t.Errorf("gave up %s after the holder's SET; want at most %s", took, bound)
			}
			if !hasLine(r.Stderr, "timed out after 1s (--redis-timeout)", "command not run") {
				t.Errorf("stderr %q: want the timeout and that the command did not run", r.Stderr)
			}
			e.notRun("ran")
			if e.get(fenceKey("x")) == "" {
				t.Fatalf("the fence counter is unset: the SET never landed, so this tested nothing (with-lock gave up %s after the holder's SET: %q)", took, r.Stderr)
			}
			goneSoon(t, e, "lock:x")
		})
	}
}

// goneSoon checks that key is gone once a resumed Redis has run what was
// queued for it: a connection opened during the stall is read an event
// loop turn after the older ones.
func goneSoon(t *testing.T, e *env, key string) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(3 * time.Second)
	for e.rdb.Exists(ctx, key).Val() != 0 {
		if time.Now().After(deadline) {
			t.Errorf("%s was left behind, PTTL %s", key, e.rdb.PTTL(ctx, key).Val())
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Over TLS the clean-up cannot be queued (its handshake needs the stalled
// server) and is sent the ordinary way instead: the run is still bounded
// by 1.5 of --redis-timeout.
func TestStalledTLSRedisFailsARunWithinOneAndAHalfTimeouts(t *testing.T) {
	t.Parallel()
	srv, ca := stoppedTLSRedis(t)
	ran := filepath.Join(t.TempDir(), "ran")
	r := clitest.Run(t, nil, "--redis", srv.URL(), "--tls-cacert", ca.CertFile, "--redis-timeout", stallTimeout.String(), "x", "touch", ran)
	if r.Code != 69 {
		t.Errorf("exit %d, want 69 (stderr %q)", r.Code, r.Stderr)
	}
	if bound := stallTimeout*3/2 + stallMargin; r.Duration > bound {
		t.Errorf("gave up after %s with --redis-timeout %s; want at most %s", r.Duration, stallTimeout, bound)
	}
	if exists(ran) {
		t.Error("the command ran")
	}
	oneLine(t, r, "timed out after 1s (--redis-timeout)")
	// A wait noticeably longer than the timeout is said, and true.
	if m := inAll.FindStringSubmatch(r.Stderr); m != nil {
		d, err := time.ParseDuration(m[1])
		if err != nil || d < stallTimeout || d > r.Duration {
			t.Errorf("stderr %q says it waited %s in all; it ran %s", r.Stderr, m[1], r.Duration)
		}
	} else if r.Duration > stallTimeout*3/2 {
		t.Errorf("stderr %q says only the timeout, %s, of a wait of %s", r.Stderr, stallTimeout, r.Duration)
	}
}

// stoppedTLSRedis starts a Redis that speaks TLS, trusted by its CA's
// file, and stops it (SIGSTOP) until the test ends; the binary is built
// first, so that a run's time is its own.
func stoppedTLSRedis(t *testing.T) (*redistest.Server, *redistest.CA) {
	ca := redistest.NewCA(t, "with-lock-test")
	srv := redistest.StartTLS(t, ca, false)
	clitest.Binary(t)
	srv.Signal(syscall.SIGSTOP)
	t.Cleanup(func() { srv.Signal(syscall.SIGCONT) })
	return srv, ca
}

var inAll = regexp.MustCompile(`, (\S+) in all with the clean-up of its token; command not run`)

// Every timeout says which setting bounds it, never Go's words for it.
func TestTimeoutsSayTheSetting(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.srv.Signal(syscall.SIGSTOP)
	defer e.srv.Signal(syscall.SIGCONT)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"acquire", []string{"x", "touch", e.path("ran")}},
		{"--status", []string{"--status", "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.run(append([]string{"--redis-timeout", "1s"}, tc.args...)...)
			if r.Code != 69 {
				t.Errorf("exit %d, want 69", r.Code)
			}
			oneLine(t, r, "timed out after 1s (--redis-timeout)")
			for _, goWords := range []string{"i/o timeout", "deadline exceeded"} {
				if strings.Contains(r.Stderr, goWords) {
					t.Errorf("stderr %q says %q", r.Stderr, goWords)
				}
			}
		})
	}
	e.notRun("ran")
}
