package testbed

import "testing"

// The root file system comes from the mirror the machine's own apt uses
// (CI's may be a local one), found in either format of apt's sources.
func TestMirrorIsTheOneAptUsesForTheSuite(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
		deb822           bool
	}{
		{name: "one-line source", want: "http://mirror.example/debian",
			text: "# comment\ndeb-src http://src.example/debian bookworm main\ndeb http://mirror.example/debian bookworm main contrib\n"},
		{name: "one-line source with options", want: "http://mirror.example/debian",
			text: "deb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian bookworm main\n"},
		{name: "one-line source of another suite", want: "",
			text: "deb http://security.example/debian-security bookworm-security main\n"},
		{name: "deb822 stanza listing the suite", deb822: true, want: "http://deb.debian.org/debian",
			text: "Types: deb\n# snapshot\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\n\n" +
				"Types: deb\nURIs: http://deb.debian.org/debian-security\nSuites: bookworm-security\nComponents: main\n"},
		{name: "deb822 stanza disabled", deb822: true, want: "",
			text: "Enabled: no\nTypes: deb\nURIs: http://off.example/debian\nSuites: bookworm\n"},
		{name: "deb822 source stanza only", deb822: true, want: "",
			text: "Types: deb-src\nURIs: http://src.example/debian\nSuites: bookworm\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mirrorInList(tc.text, "bookworm")
			if tc.deb822 {
				got = mirrorIn822(tc.text, "bookworm")
			}
			if got != tc.want {
				t.Errorf("mirror = %q, want %q", got, tc.want)
			}
		})
	}
}
