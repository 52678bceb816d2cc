package withlock

import "testing"

// TestLineBaseFollowsTheHashTagRule checks the one place that decides where
// a key's side keys and fair line live: beside a hash tag the key has
// (its first non-empty "{...}"), else in a tag of the whole key, and
// nowhere (no line, a side key found by CRC16) for a key with '}' but no
// tag, which no tag of ours could hold.
func TestLineBaseFollowsTheHashTagRule(t *testing.T) {
	for _, tc := range []struct {
		key, base string // base "": no line
		side      string // sideKey(key, "fence"); "" when found by CRC16
	}{
		{"lock:job", "{lock:job}", "{lock:job}:fence"},
		{"lock:{jobs}:a", "lock:{jobs}:a", "lock:{jobs}:a:fence"},
		{"}{x}", "}{x}", "}{x}:fence"},
		{"a{b", "{a{b}", "{a{b}:fence"},
		{"{", "{{}", "{{}:fence"},
		{"a}b", "", ""},
		{"{}", "", ""},
		{"a{}b{c}", "", ""},
	} {
		base, ok := lineBase(tc.key)
		if base != tc.base || ok != (tc.base != "") {
			t.Errorf("lineBase(%q) = %q, %v; want %q", tc.key, base, ok, tc.base)
		}
		if got := hasLine(tc.key); got != ok {
			t.Errorf("hasLine(%q) = %v, lineBase says %v", tc.key, got, ok)
		}
		if got := lineArg(tc.key); got != tc.base {
			t.Errorf("lineArg(%q) = %q, want %q", tc.key, got, tc.base)
		}
		wantMark := "" // no line base: no mark, and every release publishes
		if tc.base != "" {
			wantMark = tc.base + ":w"
		}
		if got := waitMark(tc.key); got != wantMark {
			t.Errorf("waitMark(%q) = %q, want %q", tc.key, got, wantMark)
		}
		side := sideKey(tc.key, "fence")
		switch {
		case tc.side != "" && side != tc.side:
			t.Errorf("sideKey(%q) = %q, want %q", tc.key, side, tc.side)
		case tc.side == "" && slot(0, side) != slot(0, tc.key):
			t.Errorf("sideKey(%q) = %q, in slot %d, not the key's %d", tc.key, side, slot(0, side), slot(0, tc.key))
		}
	}
}
