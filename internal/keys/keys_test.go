package keys

import (
	"strings"
	"testing"
)

// TestLineBaseFollowsTheHashTagRule checks the one place that decides where
// a key's side keys and fair line live: beside a hash tag the key has
// (its first non-empty "{...}"), else in a tag of the whole key, and
// nowhere (no line, a side key found by CRC16) for a key with '}' but no
// tag, which no tag of ours could hold.
func TestLineBaseFollowsTheHashTagRule(t *testing.T) {
	for _, tc := range []struct {
		key, base string // base "": no line
		side      string // Side(key, "fence"); "" when found by CRC16
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
		base, ok := LineBase(tc.key)
		if base != tc.base || ok != (tc.base != "") {
			t.Errorf("LineBase(%q) = %q, %v; want %q", tc.key, base, ok, tc.base)
		}
		if got := HasLine(tc.key); got != ok {
			t.Errorf("HasLine(%q) = %v, LineBase says %v", tc.key, got, ok)
		}
		wantMark, wantLine := "", "" // no line base: no mark, and every release publishes
		if tc.base != "" {
			wantMark, wantLine = tc.base+":w", tc.base+":q"
		}
		if got := Mark(tc.key); got != wantMark {
			t.Errorf("Mark(%q) = %q, want %q", tc.key, got, wantMark)
		}
		if got := Line(tc.key); got != wantLine {
			t.Errorf("Line(%q) = %q, want %q", tc.key, got, wantLine)
		}
		side := Fence(tc.key)
		switch {
		case tc.side != "" && side != tc.side:
			t.Errorf("Fence(%q) = %q, want %q", tc.key, side, tc.side)
		case tc.side == "" && (ClusterSlot(side) != ClusterSlot(tc.key) || HashTagged(side)):
			t.Errorf("Fence(%q) = %q, in slot %d, not the key's %d", tc.key, side, ClusterSlot(side), ClusterSlot(tc.key))
		}
	}
}

// The keys docs/production-redis.md names for ACLs, for the default prefix.
func TestKeysAreWhereTheDocsSay(t *testing.T) {
	key := Lock("lock:", "name")
	for _, tc := range []struct{ got, want string }{
		{key, "lock:name"},
		{Index("lock:"), "{lock:}:names"},
		{Fence(key), "{lock:name}:fence"},
		{Record(key), "{lock:name}:last"},
		{History(key), "{lock:name}:runs"},
		{Success(key), "{lock:name}:ok"},
		{Window(key), "{lock:name}:done"},
		{Broken(key), "{lock:name}:broken"},
		{Replaced(key), "{lock:name}:replaced"},
		{Left(key), "{lock:name}:left"},
		{Line(key), "{lock:name}:q"},
		{Mark(key), "{lock:name}:w"},
		{Slot(key, 2), "{lock:name}:s:2"},
		{Alive(key, "ab12"), "{lock:name}:c:ab12"},
		{Channel(key, "ab12"), "{lock:name}:w:ab12"},
		{Far(key, "ab12"), "{lock:name}:f:ab12"},
		{Slot("{lock:name}", 2), "{lock:name}:s:2"}, // a line base is its own base
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	if p, ok := Pause(key); p != "{lock:name}:pause" || !ok {
		t.Errorf("Pause = %q, %v; want {lock:name}:pause", p, ok)
	}
	if _, ok := Pause("a}b"); ok {
		t.Error("a key with '}' and no hash tag has a pause key")
	}
	if l, ok := Lease(key); l != "{lock:name}:lease" || !ok {
		t.Errorf("Lease = %q, %v; want {lock:name}:lease", l, ok)
	}
	// The release script builds the lease mark from the waiting mark's
	// base: the two must share it.
	for _, k := range []string{key, "lock:{jobs}:a", "a{b"} {
		if l, _ := Lease(k); l != strings.TrimSuffix(Mark(k), ":w")+":lease" {
			t.Errorf("Lease(%q) = %q, not beside the waiting mark %q", k, l, Mark(k))
		}
	}
	if _, ok := Lease("a}b"); ok {
		t.Error("a key with '}' and no hash tag has a lease mark")
	}
}

// A message may name a token's holder, never its secret.
func TestHolderIsTheTokenWithoutItsSecret(t *testing.T) {
	for _, tc := range []struct{ token, holder, secret string }{
		{"web2:4711:mdk3x1.0123456789abcdef0123456789abcdef", "web2:4711", "mdk3x1.0123456789abcdef0123456789abcdef"},
		{"otherhost:4242:0123456789abcdef", "otherhost:4242", "0123456789abcdef"},
		{"no-format", "unknown", "no-format"},
		{":lead", "unknown", "lead"},
	} {
		if h, s := Holder(tc.token), Secret(tc.token); h != tc.holder || s != tc.secret {
			t.Errorf("Holder, Secret of %q = %q, %q; want %q, %q", tc.token, h, s, tc.holder, tc.secret)
		}
	}
}
