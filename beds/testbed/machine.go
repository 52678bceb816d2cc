package testbed

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A Machine is Debian 12 booted with systemd as its init in a container of
// its own (systemd-nspawn), as a server is: journald, D-Bus, logind and
// cron.service run, and systemctl, systemd-run and journalctl work. It
// shares the host's network, so a redis-server the test started on
// 127.0.0.1 is reachable from inside; everything else is its own. The
// cached root file system stays untouched: the machine writes to a layer
// in memory that goes with it.
//
// Start what is under test with systemd-run or systemctl (Exec): a process
// started by Exec alone runs in the machine's namespaces but stays in the
// host's cgroup, outside systemd's tree.
type Machine struct {
	t      testing.TB
	Name   string // the machine's host name, unique to this boot
	root   string // the cached root file system it booted from
	v1     bool   // booted with cgroup v1 only
	nspawn *exec.Cmd
	init   int // the machine's systemd, as the host numbers it
	log    string
	exited chan struct{} // closed once nspawn has exited
}

// BootOptions vary how a Machine boots.
type BootOptions struct {
	// CgroupV1 gives the machine the legacy cgroup v1 hierarchies only
	// (SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=0), as on an older distribution:
	// with-lock finds no cgroup2 there and follows a job by the subreaper.
	CgroupV1 bool
}

const (
	// BootTimeout bounds a boot: a second on an idle machine, up to a
	// minute on a loaded one.
	BootTimeout = 2 * time.Minute
	// ExecTimeout bounds one command run by MustExec.
	ExecTimeout = 30 * time.Second
	// shutdownTimeout bounds an orderly power-off before the machine is
	// killed.
	shutdownTimeout = 30 * time.Second
	// withLockPath is where Boot puts with-lock: where the .deb does.
	withLockPath = "/usr/bin/with-lock"
)

// Boot boots a Machine with with-lock (StaticBinary, as released) at
// /usr/bin/with-lock and waits until its systemd runs units. The machine
// is powered off when the test ends, killed if it does not go, and the
// test fails if anything of it is left mounted.
func Boot(t testing.TB, o BootOptions) *Machine {
	t.Helper()
	Need(t, "systemd-nspawn", "systemd-container", "nsenter", "util-linux")
	root := Rootfs(t)
	bin := StaticBinary(t)
	m := &Machine{t: t, Name: "with-lock-bed-" + randomHex(4), root: root, v1: o.CgroupV1,
		log: filepath.Join(t.TempDir(), "nspawn.log"), exited: make(chan struct{})}
	logf, err := os.Create(m.log)
	if err != nil {
		t.Fatalf("boot: %v", err)
	}
	defer logf.Close()
	unified, hierarchy := "1", "cgroup v2"
	if o.CgroupV1 {
		unified, hierarchy = "0", "cgroup v1"
	}
	m.nspawn = exec.Command("systemd-nspawn", "--directory", root, "--machine", m.Name,
		"--volatile=overlay", // writes go to memory; the cached root stays as built
		"--boot", "--register=no", "--keep-unit", "--console=passive")
	// --register=no and --keep-unit: the host need not run systemd.
	m.nspawn.Env = append(os.Environ(), "SYSTEMD_NSPAWN_UNIFIED_HIERARCHY="+unified)
	m.nspawn.Stdout, m.nspawn.Stderr = logf, logf
	// SIGTERM powers the machine off in order, should this process die
	// before its clean-ups run.
	m.nspawn.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	start := time.Now()
	if err := m.nspawn.Start(); err != nil {
		t.Fatalf("boot: systemd-nspawn: %v", err)
	}
	go func() { _ = m.nspawn.Wait(); close(m.exited) }()
	t.Cleanup(m.shutdown)
	m.waitBooted(start)
	if err := copyFile(bin, m.Path(withLockPath), 0o755); err != nil {
		t.Fatalf("put with-lock into the machine: %v", err)
	}
	t.Logf("booted %s (%s) in %s", m.Name, hierarchy, time.Since(start).Round(10*time.Millisecond))
	return m
}

// waitBooted waits for the machine's systemd to be there and to run a
// transient unit to its end: then D-Bus, systemctl and systemd-run work.
func (m *Machine) waitBooted(start time.Time) {
	m.t.Helper()
	deadline := start.Add(BootTimeout)
	var lastErr error
	for time.Now().Before(deadline) {
		select {
		case <-m.exited:
			m.t.Fatalf("boot: systemd-nspawn exited: %v\n%s", m.nspawn.ProcessState, m.logTail())
		default:
		}
		if m.init == 0 {
			m.init = systemdChild(m.nspawn.Process.Pid)
		}
		if m.init != 0 {
			if _, lastErr = m.Exec(15*time.Second, "systemd-run", "--wait", "--quiet", "--collect", "true"); lastErr == nil {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	m.t.Fatalf("boot: %s not running units after %s (last try: %v)\n%s", m.Name, BootTimeout, lastErr, m.logTail())
}

// systemdChild is the pid of parent's child that runs systemd, or 0.
func systemdChild(parent int) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so from the last ')'.
		i := bytes.LastIndexByte(stat, ')')
		f := strings.Fields(string(stat[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(parent) && strings.HasSuffix(string(stat[:i]), "(systemd") {
			return pid
		}
	}
	return 0
}

// Exec runs argv in the machine's namespaces (nsenter) and returns its
// output, stdout then stderr; it is killed after timeout.
func (m *Machine) Exec(timeout time.Duration, argv ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"--target", strconv.Itoa(m.init), "--all", "--"}, argv...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%s: not done after %s", strings.Join(argv, " "), timeout)
	} else if err != nil {
		err = fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), err
}

// MustExec is Exec that fails the test when the command fails or takes
// longer than ExecTimeout.
func (m *Machine) MustExec(argv ...string) string {
	m.t.Helper()
	out, err := m.Exec(ExecTimeout, argv...)
	if err != nil {
		m.t.Fatalf("in %s: %v", m.Name, err)
	}
	return out
}

// Path is where the host sees the machine's path p.
func (m *Machine) Path(p string) string {
	return filepath.Join("/proc", strconv.Itoa(m.init), "root", p)
}

// WriteFile writes a file in the machine, creating its directory.
func (m *Machine) WriteFile(p, content string, perm os.FileMode) {
	m.t.Helper()
	if err := os.MkdirAll(filepath.Dir(m.Path(p)), 0o755); err != nil {
		m.t.Fatalf("in %s: %v", m.Name, err)
	}
	if err := os.WriteFile(m.Path(p), []byte(content), perm); err != nil {
		m.t.Fatalf("in %s: %v", m.Name, err)
	}
}

// ReadFile reads a file in the machine; "" when it is not there.
func (m *Machine) ReadFile(p string) string {
	b, _ := os.ReadFile(m.Path(p))
	return string(b)
}

// Show is systemctl show's properties of unit, by name.
func (m *Machine) Show(unit string, props ...string) map[string]string {
	m.t.Helper()
	out := m.MustExec("systemctl", "show", "--property", strings.Join(props, ","), unit)
	got := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			got[k] = v
		}
	}
	return got
}

// Journal is what journald holds from and about unit, one message a line.
func (m *Machine) Journal(unit string) string {
	out, _ := m.Exec(ExecTimeout, "journalctl", "--no-pager", "--output=cat", "--unit", unit)
	return out
}

// Cgroup is the cgroup of the machine's process pid as the machine sees
// it (in its cgroup namespace): the cgroup v2 path, or on a machine booted
// with cgroup v1 the path in systemd's own hierarchy (name=systemd); ""
// once the process is gone.
func (m *Machine) Cgroup(pid int) string {
	cg, err := m.Exec(ExecTimeout, "cat", "/proc/"+strconv.Itoa(pid)+"/cgroup")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(cg, "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok && !m.v1 {
			return p
		}
		if _, p, ok := strings.Cut(line, ":name=systemd:"); ok && m.v1 {
			return p
		}
	}
	return ""
}

// Alive reports whether the machine's process pid runs (a zombie does not).
func (m *Machine) Alive(pid int) bool {
	stat := m.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	i := strings.LastIndexByte(stat, ')')
	return i > 0 && !strings.HasPrefix(stat[i+1:], " Z") && !strings.HasPrefix(stat[i+1:], " X")
}

// shutdown powers the machine off, kills it if it does not go in time, and
// fails the test if anything of it is still mounted.
func (m *Machine) shutdown() {
	if m.nspawn.Process == nil {
		return
	}
	start := time.Now()
	_ = m.nspawn.Process.Signal(syscall.SIGTERM) // nspawn asks systemd to power off
	select {
	case <-m.exited:
		m.t.Logf("powered %s off in %s", m.Name, time.Since(start).Round(10*time.Millisecond))
	case <-time.After(shutdownTimeout):
		m.t.Errorf("%s did not power off within %s; killed\n%s", m.Name, shutdownTimeout, m.logTail())
		if m.init != 0 {
			_ = syscall.Kill(m.init, syscall.SIGKILL) // its pid namespace goes with it
		}
		_ = m.nspawn.Process.Kill()
		select {
		case <-m.exited:
		case <-time.After(10 * time.Second):
			m.t.Errorf("systemd-nspawn of %s still runs after SIGKILL", m.Name)
		}
	}
	if left := mountsOf(m.Name, m.root); left != "" {
		m.t.Errorf("%s left mounts behind:\n%s", m.Name, left)
	}
	if p := "/run/systemd/nspawn/propagate/" + m.Name; exists(p) {
		m.t.Errorf("%s left %s behind", m.Name, p)
	}
}

// mountsOf lists the host's mounts whose line names one of words.
func mountsOf(words ...string) string {
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	var left []string
	for _, line := range strings.Split(string(mi), "\n") {
		for _, w := range words {
			if strings.Contains(line, w) {
				left = append(left, line)
				break
			}
		}
	}
	return strings.Join(left, "\n")
}

func (m *Machine) logTail() string {
	b, _ := os.ReadFile(m.log)
	return tail(b, 30)
}

// copyFile copies src to dst with mode perm.
func copyFile(src, dst string, perm os.FileMode) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, perm)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
