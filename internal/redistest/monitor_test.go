package redistest

import (
	"slices"
	"testing"
)

// TestParseMonitorLineInEachDialect reads MONITOR lines as Redis writes
// them (quotes and backslashes escaped) and as Valkey 8.1 does (left as
// they are, control bytes still escaped).
func TestParseMonitorLineInEachDialect(t *testing.T) {
	for _, tc := range []struct {
		name      string
		line      string
		rawQuotes bool
		want      []string
	}{
		{"plain", `+1.2 [0 127.0.0.1:5] "set" "k" "v"`, false, []string{"set", "k", "v"}},
		{"escaped", `+1.2 [0 127.0.0.1:5] "eval" "return \"x\\y\"\n" "0"`, false, []string{"eval", "return \"x\\y\"\n", "0"}},
		{"escaped bytes", `+1.2 [0 lua] "set" "k" "a\x01\tb"`, false, []string{"set", "k", "a\x01\tb"}},
		{"raw quotes", `+1.2 [0 127.0.0.1:5] "eval" "return redis.call("GET", KEYS[1])\n" "1" "k"`, true,
			[]string{"eval", "return redis.call(\"GET\", KEYS[1])\n", "1", "k"}},
		{"raw quote last", `+1.2 [0 127.0.0.1:5] "echo" "a"""`, true, []string{"echo", `a""`}},
		{"raw backslash", `+1.2 [0 127.0.0.1:5] "echo" "a\b\q\"`, true, []string{"echo", "a\b\\q\\"}},
		{"raw empty", `+1.2 [0 127.0.0.1:5] "hset" "h" "f" ""`, true, []string{"hset", "h", "f", ""}},
	} {
		c, err := parseMonitorLine(tc.line, tc.rawQuotes)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !slices.Equal(c.Args, tc.want) {
			t.Errorf("%s: args %q, want %q", tc.name, c.Args, tc.want)
		}
	}
}
