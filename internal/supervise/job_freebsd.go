//go:build freebsd && (amd64 || arm64 || riscv64)

package supervise

import (
	"errors"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// On FreeBSD with-lock is a reaper while it runs a command
// (procctl(PROC_REAP_ACQUIRE)): a process of the job whose parent exits —
// a shell's background job, a daemon that called setsid, a double fork —
// is re-parented to with-lock instead of to init, as with Linux's
// subreaper. The kernel also keeps, for each reaper, the list of every
// process it will be given, with the child of the reaper each one
// descends from (its subtree): PROC_REAP_GETPIDS reads the job from it in
// one call, and PROC_REAP_KILL signals all of it at once, forks in flight
// included.
//
// Only on 64-bit systems: there procctl's 64-bit id is one register; the
// 32-bit ones (386, arm) follow the process group (job_other.go).

// tracking is what covers the job here.
const tracking = "reaper"

// procctl(2) commands and P_PID, from <sys/procctl.h> and <sys/wait.h>.
const (
	pPID            = 0
	procReapAcquire = 2
	procReapStatus  = 4
	procReapGetpids = 5
	procReapKill    = 6
)

// procctl runs procctl(P_PID, pid, cmd, data).
func procctl(pid, cmd int, data unsafe.Pointer) error {
	_, _, errno := unix.Syscall6(unix.SYS_PROCCTL, pPID, uintptr(pid), uintptr(cmd), uintptr(data), 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// becomeSubreaper makes this process the reaper of its orphaned
// descendants. EBUSY means it already is one (an earlier Start in this
// process): the commands it starts from now on are its to reap all the
// same. Processes started before it became one (the guard) stay off its
// list.
func becomeSubreaper() bool {
	err := procctl(os.Getpid(), procReapAcquire, nil)
	return err == nil || errors.Is(err, unix.EBUSY)
}

// reaperThread does not matter here: the reaper's list is the process's.
func reaperThread() int { return 0 }

// hasJobChildren reports whether a process of the job is left (a zombie
// not yet reaped included). Every orphan of the job comes to this
// process, or to a reaper inside the job that is itself on this process's
// list: so this process's own list is enough. It is asked at every exit:
// one call when the list is empty, the usual answer once the command is
// reaped.
func (c *Child) hasJobChildren() bool {
	if c.tracking != tracking {
		return false // not a reaper: the job is the command alone
	}
	var rs reaperStatus
	if procctl(os.Getpid(), procReapStatus, unsafe.Pointer(&rs)) != nil || rs.Descendants == 0 {
		return false
	}
	pids, _ := jobEntries(reaperList(os.Getpid(), int(rs.Descendants)), c.subtree())
	return len(pids) > 0
}

// subtree is the job's subtree id on this process's list: the command's
// pid, which the kernel keeps from being reused while a process of the
// subtree lives.
func (c *Child) subtree() int32 { return int32(c.cmd.Process.Pid) }

// reaperList returns the list of the reaper pid (or of pid's reaper, if it
// is none), with room for about n processes at first and more if it was
// full.
func reaperList(pid, n int) []reaperPidinfo {
	n += 16 // some may fork meanwhile
	for try := 0; ; try++ {
		list := make([]reaperPidinfo, n)
		rp := reaperPids{Count: uint32(n), Pids: &list[0]}
		if procctl(pid, procReapGetpids, unsafe.Pointer(&rp)) != nil {
			return nil // gone
		}
		if !listFull(list) || try == 3 {
			return list
		}
		n *= 4
	}
}

// descendants returns the processes of the job that are still there, the
// command included until it is reaped: this process's list for the
// command's subtree, and the lists of any reapers among them (timeout(1)
// is one, for instance), to maxReaperDepth. A process forked meanwhile may
// be missed; callers that must reach all of them repeat.
func (c *Child) descendants() []int {
	if c.tracking != tracking {
		return nil
	}
	var rs reaperStatus
	if procctl(os.Getpid(), procReapStatus, unsafe.Pointer(&rs)) != nil || rs.Descendants == 0 {
		return nil
	}
	found, reapers := jobEntries(reaperList(os.Getpid(), int(rs.Descendants)), c.subtree())
	seen := map[int]bool{}
	for depth := 0; depth < maxReaperDepth && len(reapers) > 0; depth++ {
		var next []int
		for _, r := range reapers {
			if seen[r] || !ownsList(r) {
				continue // it exited or let go: its processes are on a list above
			}
			seen[r] = true
			pids, more := jobEntries(reaperList(r, 0), 0)
			found = append(found, pids...)
			next = append(next, more...)
		}
		reapers = next
	}
	return found
}

// maxReaperDepth bounds how deep descendants follows reapers inside
// reapers.
const maxReaperDepth = 8

// ownsList reports whether pid is a reaper itself: asked for its list,
// one that is not would answer with its reaper's, this process's.
func ownsList(pid int) bool {
	var rs reaperStatus
	return procctl(pid, procReapStatus, unsafe.Pointer(&rs)) == nil && rs.Flags&reaperStatusOwned != 0
}

// reapKill sends sig to every process of the job at once: the kernel
// walks the command's subtree, reapers inside it included, and stops each
// process while it signals it, so that a fork in flight is not missed. It
// is FreeBSD's cgroup.kill, for Signal's SIGKILL (job.go); Signal's walk
// still follows, which for SIGKILL costs nothing twice. A job already
// gone is not an error.
func (c *Child) reapKill(sig syscall.Signal) error {
	if c.tracking != tracking {
		return nil
	}
	rk := reaperKill{Sig: int32(sig), Flags: reaperKillSubtree, Subtree: c.subtree()}
	err := procctl(os.Getpid(), procReapKill, unsafe.Pointer(&rk))
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	return err
}

// maxRSSKB is ru_maxrss, which FreeBSD gives in KiB.
func maxRSSKB(ru *syscall.Rusage) int64 { return int64(ru.Maxrss) }
