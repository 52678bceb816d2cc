package supervise

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Under systemd the cgroup tree is systemd's: a program may make groups
// only below a unit that delegated its subtree (Delegate=yes; systemd's
// docs/CGROUP_DELEGATION.md). Elsewhere a group of with-lock's own would
// turn the calling unit's group (cron.service, a service) into an inner
// node with processes, on which a later MemoryMax= or controller change
// fails with EBUSY. So there the job gets a unit of its own, a transient
// scope, asked of systemd over D-Bus as `systemd-run --scope` does:
// with-lock-<name>-<pid>.scope, beside the calling unit in its slice,
// which systemctl and systemd-cgls show, systemd accounts for, and
// `systemctl stop` stops. A scope needs a process to start with: the
// guard, which exists already and is then in it; the command is born into
// the scope's group (CLONE_INTO_CGROUP), as into a group of with-lock's
// own. The scope delegates its group, so that a with-lock run inside the
// job makes its group there, within this job. As root the system manager
// is asked, as another user that user's manager, where it runs; without
// one the subreaper alone follows the job.

// scopeWait bounds the wait for systemd to move the guard into the new
// scope once it accepted it.
const scopeWait = 2 * time.Second

// managerSocket is the private socket of the systemd manager this user may
// ask for a scope: the system's as root, else the user's own manager's.
func managerSocket() string {
	if os.Geteuid() == 0 {
		return "/run/systemd/private"
	}
	dir := os.Getenv("XDG_RUNTIME_DIR")
	if dir == "" { // cron sets none
		dir = "/run/user/" + strconv.Itoa(os.Geteuid())
	}
	return filepath.Join(dir, "systemd", "private")
}

// underSystemd reports whether systemd manages this machine's cgroup
// tree, as sd_booted(3) tells.
func underSystemd() bool {
	st, err := os.Lstat("/run/systemd/system")
	return err == nil && st.IsDir()
}

// delegated reports whether the group at dir, or the unit's group it lies
// in, was delegated: systemd marks such groups with the trusted.delegate
// extended attribute (user.delegate too, since v253, which a user other
// than root can read). Slices are never delegated: the walk up stops at
// the first.
func delegated(dir, mount string) bool {
	for d := dir; len(d) > len(mount) && !strings.HasSuffix(d, ".slice"); d = filepath.Dir(d) {
		for _, attr := range []string{"trusted.delegate", "user.delegate"} {
			var v [8]byte
			if n, err := unix.Getxattr(d, attr, v[:]); err == nil && string(v[:n]) == "1" {
				return true
			}
		}
	}
	return false
}

// scopeRequest is the scope asked of systemd for a job.
type scopeRequest struct {
	name        string // the lock's, in the unit's name
	description string // what systemctl status shows
	slice       string // the calling unit's slice; "" for the manager's default
	pid         int    // the process that starts the scope: the guard
	limits      Limits // the job's resource limits, as the scope's properties
}

// unitName is the scope's name: with-lock-<name>-<pid>.scope, the name
// escaped as systemd-escape does, cut short where long; try > 0 adds
// random hex for a name taken (a pid is not unique across PID namespaces).
func (r scopeRequest) unitName(try int) string {
	var b strings.Builder
	for i := 0; i < len(r.name) && b.Len() < 150; i++ {
		c := r.name[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == ':' || c == '_' || c == '.' || c == '-' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, `\x%02x`, c)
		}
	}
	name := "with-lock-" + b.String() + "-" + strconv.Itoa(os.Getpid())
	if try > 0 {
		name += "-" + strconv.FormatUint(rand.Uint64()|1<<63, 16)
	}
	return name + ".scope"
}

// body is StartTransientUnit's arguments for the scope unit: name, mode,
// properties a(sv), auxiliary units a(sa(sv)).
func (r scopeRequest) body(unit string) []byte {
	props := []struct {
		name string
		v    busValue
	}{
		{"Description", r.description},
		{"PIDs", []uint32{uint32(r.pid)}},
		{"Delegate", true},
		{"CollectMode", "inactive-or-failed"},
	}
	if r.slice != "" {
		props = append(props, struct {
			name string
			v    busValue
		}{"Slice", r.slice})
	}
	if r.limits.MemoryMax > 0 {
		props = append(props, struct {
			name string
			v    busValue
		}{"MemoryMax", r.limits.MemoryMax})
	}
	if r.limits.CPUQuotaPercent > 0 {
		props = append(props, struct {
			name string
			v    busValue
		}{"CPUQuotaPerSecUSec", uint64(r.limits.CPUQuotaPercent) * 10000})
	}
	var e busEnc
	e.str(unit)
	e.str("fail")
	e.array(8, func() {
		for _, p := range props {
			e.align(8)
			e.str(p.name)
			e.variant(p.v)
		}
	})
	e.array(8, func() {})
	return e.b
}

// startScope asks the manager on conn for the job's scope and waits until
// its first process, r.pid, is in it. It returns the scope's unit name
// and the directory of its group.
func startScope(conn *busConn, r scopeRequest, mount string) (unit, dir string, err error) {
	for try := 0; try < 3; try++ {
		unit = r.unitName(try)
		err = conn.call("/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager", "StartTransientUnit",
			"ssa(sv)a(sa(sv))", r.body(unit))
		var be *busError
		if errors.As(err, &be) && be.name == "org.freedesktop.systemd1.UnitExists" {
			continue
		}
		break
	}
	if err != nil {
		return "", "", fmt.Errorf("systemd refused scope %s: %w", unit, err)
	}
	// systemd moves the process as it runs the start job, just after its
	// reply.
	deadline := time.Now().Add(scopeWait)
	for pause := 100 * time.Microsecond; ; pause = min(2*pause, time.Millisecond) {
		cg, err := os.ReadFile("/proc/" + strconv.Itoa(r.pid) + "/cgroup")
		if err != nil {
			return "", "", fmt.Errorf("scope %s: its first process is gone", unit)
		}
		if path, ok := cgroupPath(string(cg)); ok && filepath.Base(path) == unit {
			return unit, filepath.Join(mount, path), nil
		}
		if time.Now().After(deadline) {
			return "", "", fmt.Errorf("scope %s: systemd did not start it within %s", unit, scopeWait)
		}
		time.Sleep(pause)
	}
}

// sliceOf is the slice the group at path (as /proc/<pid>/cgroup names it)
// lies in, for a scope beside it: "system.slice" for
// /system.slice/cron.service; "" when it is in none.
func sliceOf(path string) string {
	if parent := filepath.Base(filepath.Dir(path)); strings.HasSuffix(parent, ".slice") {
		return parent
	}
	return ""
}

// startScope makes the job's scope, with the guard as its first process,
// and returns its group for the command to be born into; nil, with the
// reason in p.place, where systemd gave none (the subreaper alone then
// follows the job), or with p.place.err set where the run must not go on
// without it.
func (p *Prepared) startScope() *cgroup {
	conn := p.place.bus
	defer conn.Close()
	fail := func(why string, err error) *cgroup {
		p.place.why = why
		if p.opts.Tracking == TrackingScope || p.opts.Limits.set() {
			p.place.err = fmt.Errorf("%w: %w", ErrNoScope, err)
		}
		return nil
	}
	if p.guard == nil {
		return fail("no guard to start a scope with", errors.New("no guard to start it with"))
	}
	if err := p.controllersFor(p.place.mount); err != nil {
		p.place.err = err
		return nil
	}
	r := scopeRequest{name: p.opts.Name, description: p.opts.Description, slice: p.place.slice,
		pid: p.guard.pid(), limits: p.opts.Limits}
	unit, dir, err := startScope(conn, r, p.place.mount)
	if err != nil {
		return fail("no scope: "+err.Error(), err)
	}
	p.guard.tell(guardCgroup + " " + dir) // before the command is in it
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		p.guard.tell(guardCgroup)
		return fail("scope "+unit+": "+err.Error(), err)
	}
	_ = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) // in use, as a group of with-lock's own (cgroup_stale_linux.go)
	return &cgroup{dir: dir, fd: fd, scope: unit}
}

// staleScopeAge is how old an unheld scope of with-lock's must be to count
// as left behind: a run holds its scope's group (flock) within
// milliseconds of systemd making it, and one that is younger may be a run
// on its way to that.
const staleScopeAge = 3 * time.Second

// removeStaleScopes kills what is left in the job scopes in the slice's
// group at dir that no live run holds: those of runs whose with-lock and
// guard were killed at the same moment (cgroup_stale_linux.go says why).
// systemd stops a scope once it is empty.
func removeStaleScopes(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if name := e.Name(); e.IsDir() && strings.HasPrefix(name, "with-lock-") && strings.HasSuffix(name, ".scope") {
			killStaleScope(filepath.Join(dir, name))
		}
	}
}

func killStaleScope(dir string) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return // gone meanwhile
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || time.Since(time.Unix(st.Ctim.Unix())) < staleScopeAge {
		return
	}
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return // its run is alive
	}
	_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
}
