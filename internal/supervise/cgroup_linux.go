package supervise

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Where with-lock may create a cgroup v2 group — as root, or in a subtree
// delegated to its user — the command is born into a group of its own
// (clone3's CLONE_INTO_CGROUP, so there is no moment it runs outside), and
// so is everything it starts, with no way out. Stopping the job is then
// exact: cgroup.kill kills every process of the group at once, races with
// fork included, and the guard does the same if with-lock dies. The
// subreaper still tells when the job has ended. Where there is no
// writable cgroup2 mount, or the kernel is older than 5.14 (cgroup.kill),
// with-lock goes on with the subreaper alone.

// cgroup is the job's group: its directory, and a descriptor of it to
// start the command in, on which this run holds the lock that says the
// group is in use (cgroup_stale_linux.go).
type cgroup struct {
	dir   string
	fd    int
	scope string // the systemd scope whose group it is, which systemd removes; "" for with-lock's own
}

// choosePlacement decides where the job goes (see scope_linux.go): a scope
// of its own under systemd, unless with-lock's unit delegated its group;
// else a group below with-lock's own, where it can be made; else nowhere
// but with-lock's own group, followed by the subreaper. A scope is only
// connected for here: it is asked for at Start, once the lock is held,
// so that a run that does not get the lock leaves no unit in the journal.
func choosePlacement(o Options) placement {
	if o.Tracking == TrackingSubreaper {
		return placement{why: "--tracking subreaper"}
	}
	mount, path, ok := ownCgroup()
	if !ok {
		return placement{why: "no cgroup2 hierarchy here"}
	}
	own := filepath.Join(mount, path)
	scope := o.Tracking == TrackingScope ||
		(o.Tracking != TrackingCgroup && underSystemd() && !delegated(own, mount))
	if !scope {
		return placement{mode: TrackingCgroup, dir: own, mount: mount}
	}
	if os.Geteuid() != 0 && !strings.Contains(path, "/user@"+strconv.Itoa(os.Geteuid())+".service/") {
		// The kernel lets a user move a process only below a group it owns
		// that holds both ends (cgroup v2's delegation containment): from
		// cron.service or a login's session scope, not into its manager's.
		pl := placement{why: "a user's job gets a scope of its own only under its own systemd manager (user@<uid>.service)"}
		if o.Tracking == TrackingScope {
			pl.err = fmt.Errorf("%w: %s", ErrNoScope, pl.why)
		}
		return pl
	}
	socket := managerSocket()
	conn, err := dialBus(socket)
	if err != nil {
		pl := placement{why: "no systemd manager to ask for a scope at " + socket}
		if o.Tracking == TrackingScope {
			pl.err = fmt.Errorf("%w: %s: %w", ErrNoScope, socket, err)
		}
		return pl
	}
	return placement{mode: TrackingScope, mount: mount, bus: conn, slice: sliceOf(path), sliceDir: filepath.Dir(path)}
}

// errNameTaken is a group name that could not be had: it exists, or the
// group was removed under us by a run that found it unlocked. Another
// name will do.
var errNameTaken = errors.New("cgroup name taken")

// makeCgroup creates the job's group at dir and locks it as this run's.
func makeCgroup(dir string) (*cgroup, error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, errNameTaken
		}
		return nil, err // not writable by us: no delegation
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = unix.Rmdir(dir)
		return nil, errNameTaken
	}
	g := &cgroup{dir: dir, fd: fd}
	if !g.own() {
		_ = unix.Close(fd)
		return nil, errNameTaken
	}
	// Not in the parent: the root group has none.
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		g.remove()
		return nil, err // before Linux 5.14, or not a cgroup2 directory after all
	}
	return g, nil
}

// ownCgroup finds this process's cgroup v2 group: the hierarchy's mount
// and the group's path in it. Where the hierarchy is mounted at one of
// the usual places and the group is there, two stat calls say so; else
// mountinfo, which on a host with many mounts is long, says where it is.
func ownCgroup() (mount, path string, ok bool) {
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", "", false
	}
	if path, ok = cgroupPath(string(cg)); !ok {
		return "", "", false
	}
	for _, mnt := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		var fs unix.Statfs_t
		if unix.Statfs(mnt, &fs) == nil && fs.Type == unix.CGROUP2_SUPER_MAGIC {
			// Mounted from its root, unless a container's: then the host's
			// path is not found under it, and mountinfo tells.
			if st, err := os.Stat(filepath.Join(mnt, path)); err == nil && st.IsDir() {
				return mnt, path, true
			}
			break
		}
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", "", false
	}
	return cgroupMount(string(cg), string(mi))
}

// cgroupPath is the cgroup v2 path in /proc/<pid>/cgroup's text cg:
// "0::/path".
func cgroupPath(cg string) (string, bool) {
	var path string
	for _, line := range strings.Split(cg, "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			path = p
		}
	}
	if !strings.HasPrefix(path, "/") || strings.HasSuffix(path, " (deleted)") {
		return "", false
	}
	return path, true
}

// cgroupDir is the directory of the cgroup v2 group that the
// /proc/<pid>/cgroup text cg names ("0::/path"), under wherever
// /proc/<pid>/mountinfo's text mi says a cgroup2 hierarchy is mounted
// (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid system), from
// that mount's root.
func cgroupDir(cg, mi string) (string, bool) {
	mount, rel, ok := cgroupMount(cg, mi)
	return filepath.Join(mount, rel), ok
}

// cgroupMount is cgroupDir's mount and the group's path below it.
func cgroupMount(cg, mi string) (mount, rel string, ok bool) {
	path, ok := cgroupPath(cg)
	if !ok {
		return "", "", false
	}
	sc := bufio.NewScanner(strings.NewReader(mi))
	for sc.Scan() {
		// id parent major:minor root mountpoint options... - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		fields := strings.Fields(pre)
		if len(fields) < 5 {
			continue
		}
		root, mnt := unescapeMount(fields[3]), unescapeMount(fields[4])
		rel, ok := strings.CutPrefix(path, root)
		if !ok || (root != "/" && rel != "" && rel[0] != '/') {
			continue // the group is not under this mount's root
		}
		if rel == "" {
			rel = "/"
		}
		return mnt, rel, true
	}
	return "", "", false
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// kill kills every process of the group.
func (g *cgroup) kill() error {
	return os.WriteFile(filepath.Join(g.dir, "cgroup.kill"), []byte("1"), 0)
}

// procs lists the processes of the group.
func (g *cgroup) procs() []int {
	b, err := os.ReadFile(filepath.Join(g.dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// remove deletes the group, empty once the job has ended, with the
// groups of runs nested in the job, killed with it. A group that is still
// busy (a process stuck in the kernel) is left, unlocked: a later run
// removes it.
func (g *cgroup) remove() {
	if g.scope != "" {
		_ = unix.Close(g.fd) // systemd removes the scope's group once it is empty
		return
	}
	if err := unix.Rmdir(g.dir); errors.Is(err, unix.EBUSY) { // not os.Remove, which tries unlink first
		removeStaleIn(g.dir, "")
		_ = unix.Rmdir(g.dir)
	}
	_ = unix.Close(g.fd)
}

// startIn has the command born into the group.
func (g *cgroup) startIn(attr *syscall.SysProcAttr) {
	attr.UseCgroupFD = true
	attr.CgroupFD = g.fd
}
