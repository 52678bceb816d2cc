package testbed

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The systemd bed boots Debian 12 with what a server running with-lock
// from cron or a timer has: systemd as init, D-Bus (systemctl and
// systemd-run talk to systemd through it), cron, and pam_systemd, which
// starts a user's own systemd manager (user@<uid>.service) for a login or
// a lingering user.
const (
	rootfsSuite = "bookworm"
	// rootfsBuildTimeout bounds debootstrap: about 35 s on an idle
	// machine, two and a half minutes on a busy one.
	rootfsBuildTimeout = 10 * time.Minute
)

var rootfsPackages = []string{"systemd", "systemd-sysv", "dbus", "cron", "libpam-systemd"}

// Rootfs returns the directory of the Debian root file system the systemd
// bed boots, building it with debootstrap the first time, from the mirror
// this machine's apt uses. It is kept under CacheDir, named for what it
// holds, and never written to once built: Boot puts a throw-away layer
// over it. Test binaries that need it at once wait for one build.
func Rootfs(t testing.TB) string {
	t.Helper()
	Need(t, "debootstrap", "debootstrap")
	dir := filepath.Join(CacheDir(), "rootfs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("the beds' cache: %v", err)
	}
	unlock, err := lockFile(filepath.Join(dir, ".lock"))
	if err != nil {
		t.Fatalf("the beds' cache: %v", err)
	}
	defer unlock()
	name := rootfsSuite + "-minbase-" + strings.Join(rootfsPackages, "+")
	root := filepath.Join(dir, name)
	if _, err := os.Stat(filepath.Join(root, "usr/lib/systemd/systemd")); err == nil {
		return root
	}
	// Built beside its final place and renamed once whole: a build that
	// was interrupted is never taken for a root file system.
	building := root + ".building"
	if err := os.RemoveAll(building); err != nil {
		t.Fatalf("remove an unfinished root file system: %v", err)
	}
	mirror := aptMirror(rootfsSuite)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), rootfsBuildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "debootstrap", "--variant=minbase",
		"--include="+strings.Join(rootfsPackages, ","), rootfsSuite, building, mirror)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("not done after %s", rootfsBuildTimeout)
		}
		_ = os.RemoveAll(building)
		t.Fatalf("debootstrap %s from %s: %v\n%s", rootfsSuite, mirror, err, tail(out, 20))
	}
	if err := os.Rename(building, root); err != nil {
		t.Fatalf("keep the root file system: %v", err)
	}
	t.Logf("built the Debian %s root file system in %s from %s (%s)",
		rootfsSuite, time.Since(start).Round(time.Second), mirror, root)
	return root
}

// lockFile takes an exclusive lock on path, creating it, until unlock.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// exists reports whether path is there.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return !errors.Is(err, fs.ErrNotExist)
}
