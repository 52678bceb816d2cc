package main

import (
	"runtime/debug"
	"testing"
)

func TestVersionFromBuildInfo(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	vcs := func(modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for _, tc := range []struct {
		name string
		info debug.BuildInfo
		want string
	}{
		{"go install of a tagged module", debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: vcs("false")}, "v1.2.3"},
		{"go build in a checkout stamps a pseudo-version", debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20251130150200-0123456789ab+dirty"}}, "v0.0.0-20251130150200-0123456789ab+dirty"},
		{"clean revision", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("false")}, "0123456789ab"},
		{"modified revision", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("true")}, "0123456789ab-dirty"},
		{"no version and no VCS", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "(devel)"},
	} {
		if got := versionFromBuildInfo(&tc.info); got != tc.want {
			t.Errorf("%s: versionFromBuildInfo = %q, want %q", tc.name, got, tc.want)
		}
	}
}
