package supervise

import (
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// On Linux with-lock is a child subreaper while it runs a command: a
// process of the job whose parent exits — a shell's background job, a
// daemon that called setsid, a double fork — is re-parented to with-lock
// instead of to init. So every process of the job descends from with-lock
// for as long as it lives, which is what lets with-lock wait for the last
// of them, and find and signal those that left the command's process
// group.

// tracking is what covers the job here.
const tracking = "subreaper"

// becomeSubreaper makes this process the reaper of its orphaned
// descendants. It fails only on kernels older than 3.4; the job is then
// the command's process group, as elsewhere.
func becomeSubreaper() bool {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == nil
}

// reaperThread is the thread the reaper runs on, which started the
// command: hasJobChildren reads its children.
func reaperThread() int { return unix.Gettid() }

// hasJobChildren reports whether this process has a child other than the
// guard. Since every orphan of the job comes here, no such child means no
// process of the job is left. It is asked at every exit, so it reads two
// small files, not one per thread: the command is a child of the reaping
// thread, and the kernel gives an orphan to the first live thread of its
// subreaper (find_alive_thread), the thread-group leader, which in Go
// lives as long as the process. Without /proc it reports none: the job is
// then the command alone, as it was before subreapers.
func (c *Child) hasJobChildren() bool {
	pid := os.Getpid()
	for _, tid := range []int{c.reaperTid, pid} {
		kids, ok := taskChildren(pid, tid)
		if !ok {
			return slices.ContainsFunc(childrenOf(pid), func(k int) bool { return k != c.guardPid() })
		}
		if slices.ContainsFunc(kids, func(k int) bool { return k != c.guardPid() }) {
			return true
		}
		if tid == pid {
			break
		}
	}
	return false
}

// taskChildren reads the children of thread tid of process pid, at most
// the first few: ok is false when the kernel has no such file.
func taskChildren(pid, tid int) (kids []int, ok bool) {
	fd, err := syscall.Open("/proc/"+strconv.Itoa(pid)+"/task/"+strconv.Itoa(tid)+"/children", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer syscall.Close(fd)
	var buf [256]byte // a partial last pid is dropped: two whole ones are enough to answer
	n, err := syscall.Read(fd, buf[:])
	if err != nil || n < 0 {
		return nil, false
	}
	f := strings.Fields(string(buf[:n]))
	if n == len(buf) && len(f) > 0 {
		f = f[:len(f)-1]
	}
	for _, w := range f {
		if k, err := strconv.Atoi(w); err == nil {
			kids = append(kids, k)
		}
	}
	return kids, true
}

// descendants returns the processes of the job that are still there:
// those of its cgroup, or every descendant of this process but the guard,
// found by walking /proc's children lists. A process forked while the walk runs may be
// missed; callers that must reach all of them repeat.
func (c *Child) descendants() []int {
	guard, unlock := c.holdGuard()
	defer unlock()
	if c.cg != nil {
		// Exact; the guard is in it only when it is a scope's first process.
		return slices.DeleteFunc(c.cg.procs(), func(pid int) bool { return pid == guard })
	}
	var found []int
	queue := []int{os.Getpid()}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, kid := range childrenOf(pid) {
			if kid != guard {
				found = append(found, kid)
				queue = append(queue, kid)
			}
		}
	}
	return found
}

// childrenOf lists the children of process pid from every one of its
// threads' /proc children file (a child's parent is the thread that forked
// it, or the one that adopted it). Without those files (a kernel built
// without CONFIG_PROC_CHILDREN) it scans every process's parent.
func childrenOf(pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil // gone, or no /proc
	}
	var kids []int
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/children")
		if errors.Is(err, os.ErrNotExist) && t.Name() == strconv.Itoa(pid) {
			return childrenByScan(pid)
		}
		for _, f := range strings.Fields(string(b)) {
			if k, err := strconv.Atoi(f); err == nil {
				kids = append(kids, k)
			}
		}
	}
	return kids
}

// childrenByScan finds the children of pid by reading every process's
// parent from /proc/<pid>/stat.
func childrenByScan(pid int) []int {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var kids []int
	for _, p := range procs {
		if p.Name()[0] < '0' || p.Name()[0] > '9' {
			continue
		}
		stat, err := os.ReadFile("/proc/" + p.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		if ppid, ok := parentOf(string(stat)); ok && ppid == pid {
			if k, err := strconv.Atoi(p.Name()); err == nil {
				kids = append(kids, k)
			}
		}
	}
	return kids
}

// maxRSSKB is ru_maxrss, which Linux gives in KiB.
func maxRSSKB(ru *syscall.Rusage) int64 { return int64(ru.Maxrss) }

// parentOf returns the parent of a /proc/<pid>/stat line: "pid (comm)
// state ppid ...", where comm may hold anything.
func parentOf(stat string) (ppid int, ok bool) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

// reapKill does nothing here: the cgroup, where there is one, kills the
// whole job at once (see Signal).
func (c *Child) reapKill(syscall.Signal) error { return nil }
