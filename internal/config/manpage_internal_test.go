package config

import "testing"

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
