package main_test

import (
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// A run and every admin path (--status, --list, --break) say one failure
// to reach Redis in the same words, a user's: a host name that does not
// resolve, nothing listening at the address, a server that does not
// answer in time and the setting that bounds it; never Go's "dial tcp",
// "connect: connection refused", "i/o timeout" or "no such host" on its
// own. Each exits 69.
func TestRedisFailuresReadAlikeOnEveryPath(t *testing.T) {
	paused := redistest.Start(t)
	paused.Signal(syscall.SIGSTOP)
	t.Cleanup(func() { paused.Signal(syscall.SIGCONT) })
	refused := "127.0.0.1:" + strconv.Itoa(redistest.FreePort(t))
	for _, failure := range []struct {
		name  string
		redis string
		want  []string
	}{
		// .invalid never resolves (RFC 6761).
		{"host name does not resolve", "redis://no-such-host.invalid:6379/0",
			[]string{"the host name no-such-host.invalid ", "resolve", "(check the host name in --redis / WITH_LOCK_REDIS)"}},
		{"nothing listens", "redis://" + refused + "/0",
			[]string{"nothing listens at " + refused + " (connection refused)"}},
		{"no answer", paused.URL(), []string{"timed out after 1s (--redis-timeout)"}},
	} {
		for _, path := range []struct {
			name string
			args []string
		}{
			{"run", []string{"x", "true"}},
			{"--status", []string{"--status", "x"}},
			{"--list", []string{"--list"}},
			{"--break", []string{"--break", "x"}},
		} {
			t.Run(failure.name+"/"+path.name, func(t *testing.T) {
				r := clitest.Run(t, nil, append([]string{"--redis", failure.redis, "--redis-timeout", "1s"}, path.args...)...)
				if r.Code != 69 {
					t.Errorf("exit %d, want 69", r.Code)
				}
				for _, w := range failure.want {
					oneLine(t, r, w)
				}
				for _, goWords := range []string{"dial tcp", "connect: connection refused", "i/o timeout", "deadline exceeded", "lookup "} {
					if strings.Contains(r.Stderr, goWords) {
						t.Errorf("stderr %q says %q", r.Stderr, goWords)
					}
				}
			})
		}
	}
}
