package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestScriptACLRefusalIsNoPermInEachServersWording: a command refused to
// the ACL user inside a script is exit 77 with the least-privilege hint in
// each server's wording, and other script errors are not.
func TestScriptACLRefusalIsNoPermInEachServersWording(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		server, reply string
		want          int
	}{
		{"Redis 7.0", "ERR Error running script (call to f_0123): @user_script:1: @user_script: 1: The user executing the script can't run this command or subcommand", exitNoPerm},
		{"Redis 8.0", "ERR ACL failure in script: User u has no permissions to run the 'mget' command script: 0123, on @user_script:1.", exitNoPerm},
		{"Valkey 8", "ERR ACL failure in script: User u has no permissions to run the 'mget' command script: 0123, on @user_script:1.", exitNoPerm},
		{"a script's own error", "ERR user_script:1: Script attempted to access nonexistent global variable 'x' script: 0123", exitUnavailable},
	} {
		err := fmt.Errorf("release lock:x: %w", serverReply(tc.reply))
		if got := redisExit(err); got != tc.want {
			t.Errorf("%s: redisExit(%q) = %d, want %d", tc.server, tc.reply, got, tc.want)
		}
		if h := hint(tc.want, err); (tc.want == exitNoPerm) != strings.Contains(h, "least-privilege ACL") {
			t.Errorf("%s: hint = %q", tc.server, h)
		}
	}
}

// serverReply is an error reply as go-redis returns it: a redis.Error.
type serverReply string

func (e serverReply) Error() string { return string(e) }
func (serverReply) RedisError()     {}
