package main

import "runtime/debug"

// version is set by `make build` and `make dist` with
// -ldflags "-X main.version=$(git describe --tags --always --dirty)".
// Left empty by a plain go build or go install: then the binary's own build
// information says which version it is (buildVersion).
var version string

// buildVersion is what --version prints: the version stamped at link time,
// else the module version go install recorded, else the VCS revision.
func buildVersion() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	return versionFromBuildInfo(info)
}

// versionFromBuildInfo picks the version from a binary's build information:
// the module version (go install ...@v1.2.3, or the pseudo-version go build
// stamps from the checkout), else the first 12 hex digits of the VCS
// revision with "-dirty" for uncommitted changes, else "(devel)", which is
// what the go command itself calls a build without either (-buildvcs=false,
// or a tree without git).
func versionFromBuildInfo(info *debug.BuildInfo) string {
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev string
	var modified bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return "(devel)"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified {
		rev += "-dirty"
	}
	return rev
}
