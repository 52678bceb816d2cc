package config

import (
	"strings"
	"testing"
)

// Every description written for the man page belongs to a setting: text
// for a flag that was renamed or removed would silently drop out of the
// page.
func TestManTextDescribesOnlySettings(t *testing.T) {
	names := map[string]bool{}
	for _, g := range settings(&Config{}) {
		for _, s := range g.settings {
			names[s.name] = true
		}
	}
	for name := range manText() {
		if !names[name] {
			t.Errorf("manText describes --%s, which is no setting", name)
		}
	}
}

// A setting's default is stated by its OPTIONS entry, from the settings
// table when the description does not say it.
func TestManDefaultWritesDurationsAsTyped(t *testing.T) {
	for _, tc := range []struct {
		def  any
		want string
	}{
		{DefaultRecordTTL, "720h"},
		{DefaultTTL, "30s"},
		{DefaultKillAfter, "5s"},
		{nil, ""},
		{false, ""},
		{[]string{DefaultRedisURL}, DefaultRedisURL},
		{1, "1"},
	} {
		if got := manDefault(tc.def); got != tc.want {
			t.Errorf("manDefault(%v) = %q, want %q", tc.def, got, tc.want)
		}
	}
}

// A setting's default is said once, by the "Default:" line the settings
// table adds to its OPTIONS entry, never again in its description, where
// it would be left behind when the default changes.
func TestManTextLeavesTheDefaultToTheTable(t *testing.T) {
	text := manText()
	n := 0
	for _, g := range settings(&Config{}) {
		for _, s := range g.settings {
			if manDefault(s.def) == "" || text[s.name] == "" {
				continue
			}
			n++
			if strings.Contains(strings.ToLower(text[s.name]), "default") {
				t.Errorf("the man page's description of --%s speaks of a default; the table's is added after it:\n%s", s.name, text[s.name])
			}
		}
	}
	if n < 10 {
		t.Errorf("checked %d descriptions of settings with a default; the loop must have stopped finding them", n)
	}
}
