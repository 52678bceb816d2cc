package main_test

import (
	"strings"
	"testing"

	"github.com/with-lock/with-lock/internal/clitest"
)

// A missing and a wrong password read alike on every path: exit 77, one
// line naming Redis's NOAUTH or WRONGPASS after the same prefix for both,
// never a client's "Protocol error" (Redis's answer to a long command
// without a password) nor a reply that was never read ("unexpected
// type"), and never the password.
func TestRefusedCredentialsReadAlikeOnEveryPath(t *testing.T) {
	t.Parallel()
	const password, wrong = "s3cret-pw-abc", "wrong-pw-789"
	e := setup(t, "requirepass", password)
	paths := append(everyRedisPath[:len(everyRedisPath):len(everyRedisPath)], struct {
		name string
		args []string
	}{"--pause", []string{"--pause", "x"}})
	for _, path := range paths {
		t.Run(path.name, func(t *testing.T) {
			var prefix [2]string
			for i, tc := range []struct{ url, want string }{
				{"redis://" + e.srv.Addr() + "/0", "NOAUTH Authentication required"},
				{"redis://:" + wrong + "@" + e.srv.Addr() + "/0", "WRONGPASS"},
			} {
				r := clitest.Run(t, []string{"WITH_LOCK_REDIS=" + tc.url}, append([]string{"-q"}, path.args...)...)
				if r.Code != 77 {
					t.Errorf("%s: exit %d, want 77", tc.want, r.Code)
				}
				oneLine(t, r, tc.want)
				for _, bad := range []string{"unexpected type", wrong, password} {
					if strings.Contains(r.Stderr, bad) {
						t.Errorf("stderr %q says %q", r.Stderr, bad)
					}
				}
				if strings.Contains(r.Stderr, "Protocol error") && !strings.Contains(r.Stderr, "NOAUTH") {
					t.Errorf("stderr %q says a protocol error, not that a password is wanted", r.Stderr)
				}
				prefix[i], _, _ = strings.Cut(r.Stderr, tc.want)
			}
			if prefix[0] != prefix[1] {
				t.Errorf("a missing password is said after %q, a wrong one after %q", prefix[0], prefix[1])
			}
		})
	}
}
