// Package testbed gives tests the surroundings with-lock runs in beyond a
// shell: a real systemd, booted in a container (Boot), and podman
// containers (NewPodman). Each installs what it needs with apt-get when it
// is missing and tears down what it started when the test ends, failed or
// not.
//
// The beds need root, Linux and Debian's packages; a test on a machine
// without them is skipped with one line that says which. They are slow the
// first time (a Debian root file system is built, packages installed), so
// they live in this module of their own, run by `make beds`, not by
// `go test ./...` in the repository's root.
//
// What is kept between runs lives under CacheDir: the root file system the
// systemd bed boots, and podman's storage (images, containers), private to
// the beds so that a test never touches the machine's own containers.
package testbed

import (
	"os"
	"path/filepath"
	"runtime"
)

// CacheDir is where the beds keep what outlives a run:
// $WITH_LOCK_BEDS_CACHE, else /var/cache/with-lock-beds.
func CacheDir() string {
	if d := os.Getenv("WITH_LOCK_BEDS_CACHE"); d != "" {
		return d
	}
	return "/var/cache/with-lock-beds"
}

// RepoRoot is the with-lock repository this module sits in.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}
