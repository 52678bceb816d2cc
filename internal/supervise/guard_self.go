package supervise

import (
	"bufio"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Where the shell cannot be the guard, with-lock is: it runs itself from
// /proc/self/exe (the binary it was started from, even if it was replaced
// since) with argv0 GuardName and guardEnv in its environment, and main
// hands over to RunGuard before anything else. It does what guardScript
// does. Its command line names no with-lock, so `pkill -f with-lock`
// leaves it be, as the shell's; its comm is "exe", and then GuardName.

// guardEnv marks the guard's environment, which holds nothing else.
const guardEnv = "WITH_LOCK_GUARD=1"

// IsGuard reports whether this process was started as a job's guard.
func IsGuard() bool {
	return len(os.Args) == 1 && os.Args[0] == GuardName && os.Getenv("WITH_LOCK_GUARD") == "1"
}

// selfPath is this program's file, for running it as the guard.
func selfPath() string {
	if _, err := os.Stat("/proc/self/exe"); err == nil {
		return "/proc/self/exe"
	}
	if p, err := os.Executable(); err == nil {
		return p
	}
	return "/proc/self/exe" // and its start fails, saying why
}

// RunGuard is the guard's life; it does not return.
func RunGuard() {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	setComm(GuardName)
	_, _ = os.Stdout.WriteString(guardReady + "\n")
	_ = os.Stdout.Close()
	var cg string
	var pids []string
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 4096), 1<<20) // a census of many escapees is one long line
	for sc.Scan() {
		word, rest, _ := strings.Cut(sc.Text(), " ")
		switch word {
		case guardDone:
			os.Exit(0)
		case guardPids:
			pids = strings.Fields(rest)
		case guardCgroup:
			cg = rest
		}
	}
	// with-lock is gone: the job goes too.
	if cg != "" {
		_ = os.WriteFile(filepath.Join(cg, "cgroup.kill"), []byte("1"), 0)
	}
	for _, p := range pids {
		if pid, err := strconv.Atoi(p); err == nil && pid != 0 && pid != -1 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if cg != "" {
		for range 10 {
			nested, _ := filepath.Glob(filepath.Join(cg, "*.*.*"))
			for _, d := range nested {
				_ = syscall.Rmdir(d)
			}
			if err := syscall.Rmdir(cg); err == nil || os.IsNotExist(err) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	_ = syscall.Kill(0, syscall.SIGKILL)
	os.Exit(0) // not reached: the kill is for its own group
}
