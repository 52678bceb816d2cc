package testbed

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

// installTimeout bounds one apt-get: on a fresh machine podman and its
// dependencies take about a minute.
const installTimeout = 5 * time.Minute

// Need makes sure the commands are on PATH, installing the Debian packages
// that hold them with apt-get when they are missing, as the Makefile's
// redis target does. cmdPkg is pairs: command, package. A machine that
// cannot (not Linux, not root, no apt-get) skips the test, saying why.
func Need(t testing.TB, cmdPkg ...string) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the test-beds need Linux")
	}
	if os.Geteuid() != 0 {
		t.Skip("the test-beds need root: they boot containers and install packages")
	}
	var missing []string
	for i := 0; i+1 < len(cmdPkg); i += 2 {
		if _, err := exec.LookPath(cmdPkg[i]); err != nil {
			missing = append(missing, cmdPkg[i+1])
		}
	}
	if len(missing) == 0 {
		return
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		t.Skipf("the test-beds install %s with apt-get, which this machine does not have", strings.Join(missing, " "))
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	// Another apt-get (a second test binary, the Makefile) may hold the
	// lock: wait for it rather than fail.
	wait := fmt.Sprintf("-oDPkg::Lock::Timeout=%d", int(installTimeout.Seconds()))
	for _, args := range [][]string{
		{"update", "-qq", wait},
		append([]string{"install", "-y", "-qq", wait}, missing...),
	} {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("apt-get %s: %v\n%s", strings.Join(args, " "), err, tail(out, 20))
		}
	}
	t.Logf("installed %s in %s", strings.Join(missing, " "), time.Since(start).Round(time.Second))
}

// tail is the last n lines of out, for a failure message.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
