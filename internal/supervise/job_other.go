//go:build !linux && !(freebsd && (amd64 || arm64 || riscv64))

package supervise

import (
	"runtime"
	"syscall"
)

// Without a reaper here (macOS has none; 32-bit FreeBSD does not use its
// own, see job_freebsd.go) the job is the command's process group: a
// process that leaves it (setsid) is neither waited for nor stopped, and
// background processes the command leaves in its group are stopped with
// it but not waited for.

// tracking is what covers the job here.
const tracking = "process group"

func becomeSubreaper() bool { return false }

// reap waits for the command; the job ends with it.
func (c *Child) reap() {
	_ = c.cmd.Wait() // its error only repeats ProcessState
	if ru, ok := c.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		c.usage.add(ru)
	}
	c.exited(c.cmd.ProcessState.Sys().(syscall.WaitStatus), true)
}

func (c *Child) descendants() []int { return nil }

func (c *Child) escapees() []int { return nil }

// maxRSSKB is ru_maxrss in KiB: macOS gives bytes, the BSDs KiB.
func maxRSSKB(ru *syscall.Rusage) int64 {
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss) / 1024
	}
	return int64(ru.Maxrss)
}

// reapKill does nothing: there is no reaper here.
func (c *Child) reapKill(syscall.Signal) error { return nil }
