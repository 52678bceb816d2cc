package withlock

import (
	"slices"
	"testing"
	"time"
)

// TestNewLockBuildsTheKeyAndWaitingMarkTheRuleGives checks that the key
// and waiting mark newLock builds together, and the release arguments it
// builds once, are those Key and waitMark give, for every shape of name
// and prefix the hash-tag rule tells apart.
func TestNewLockBuildsTheKeyAndWaitingMarkTheRuleGives(t *testing.T) {
	for _, tc := range []struct{ prefix, name string }{
		{"", "job"},
		{"app:", "job"},
		{"", "{jobs}:a"},
		{"{app}:", "job"},
		{"", "a}b"},
		{"x}", "job"},
		{"", "a{b"},
		{"", "{}"},
	} {
		c := New(nil, &Options{Prefix: tc.prefix})
		l := c.newLock(tc.name, "tok", time.Second, nil)
		key := c.Key(tc.name)
		if l.key != key {
			t.Errorf("prefix %q name %q: key %q, want %q", tc.prefix, tc.name, l.key, key)
		}
		if got := l.waitMark(); got != waitMark(key) {
			t.Errorf("key %q: waiting mark %q, want %q", key, got, waitMark(key))
		}
		keys, args := l.releaseCall(0, "")
		want := []any{"tok", waitMark(key)}
		if !slices.Equal(keys, []string{key}) || !slices.Equal(derefArgs(args), want) {
			t.Errorf("key %q: release KEYS %q ARGV %v, want %q %v", key, keys, derefArgs(args), []string{key}, want)
		}
	}
}

// TestPlainReleaseArgumentsAllocateNothing pins the uncontended Release's
// own share of allocations at none: its KEYS and ARGV are the ones newLock
// built. A min-hold left or a Client id still gets its own arguments, and
// so does a Lock made without newLock.
func TestPlainReleaseArgumentsAllocateNothing(t *testing.T) {
	c := New(nil, nil)
	l := c.newLock("job", "tok", time.Second, nil)
	if n := testing.AllocsPerRun(100, func() { l.releaseCall(0, "") }); n != 0 {
		t.Errorf("a plain release's arguments cost %.0f allocations, want 0", n)
	}
	for _, tc := range []struct {
		l    *Lock
		keep time.Duration
		cid  string
		want []any
	}{
		{l, 1500 * time.Millisecond, "", []any{"tok", "{lock:job}:w", int64(1500)}},
		{l, 0, "c1", []any{"tok", "{lock:job}:w", int64(0), "c1"}},
		{&Lock{key: "lock:x", token: "t2"}, 0, "", []any{"t2", "{lock:x}:w"}},
	} {
		keys, args := tc.l.releaseCall(tc.keep, tc.cid)
		if !slices.Equal(keys, []string{tc.l.key}) || !slices.Equal(derefArgs(args), tc.want) {
			t.Errorf("keep %s cid %q: KEYS %q ARGV %v, want %q %v", tc.keep, tc.cid, keys, derefArgs(args), tc.l.key, tc.want)
		}
	}
	if _, args := l.releaseCall(0, ""); &args[0] != &l.relArgs[0] {
		t.Error("after other calls, a plain release no longer uses the arguments newLock built")
	}
}

// derefArgs is args as go-redis writes them: a *string as its string.
func derefArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		if p, ok := a.(*string); ok {
			a = *p
		}
		out[i] = a
	}
	return out
}
