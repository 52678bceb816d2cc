package testbed

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Podman runs containers without a daemon, in storage private to the
// beds: the machine's own images and containers are never listed, touched
// or stopped.
type Podman struct {
	t testing.TB
}

// podmanFlags are what podman needs on this kind of machine: runc, as
// crun refuses a host with hybrid cgroups; cgroupfs and events in a file,
// as the host need not run systemd; and storage of the beds' own, whose
// overlay driver leaves no mount of its home behind.
func podmanFlags() []string {
	return []string{"--runtime", "runc", "--cgroup-manager=cgroupfs", "--events-backend=file",
		"--root", podmanStorage(), "--runroot", podmanRun, "--tmpdir", "/run/with-lock-beds/libpod",
		"--storage-driver", "overlay", "--storage-opt", "overlay.skip_mount_home=true"}
}

// podmanStorage holds the beds' images; podmanRun their running state.
func podmanStorage() string { return filepath.Join(CacheDir(), "podman", "storage") }

const podmanRun = "/run/with-lock-beds/podman"

// podmanRunFlags are for every container: the host's network (the test's
// redis-server is on its loopback) and rlimits this machine allows
// (podman's defaults exceed them).
var podmanRunFlags = []string{"--network", "host",
	"--ulimit", "nofile=20000:20000", "--ulimit", "nproc=32768:32768"}

// NewPodman installs podman, runc, catatonit (podman --init) and a static
// busybox (the jobs' shell in JobImage) when they are missing.
func NewPodman(t testing.TB) *Podman {
	t.Helper()
	Need(t, "podman", "podman", "runc", "runc", "catatonit", "catatonit", "busybox", "busybox-static")
	return &Podman{t: t}
}

// Output runs podman with args and returns its stdout; a failure or a run
// longer than timeout fails the test.
func (p *Podman) Output(timeout time.Duration, args ...string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "podman", append(podmanFlags(), args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("not done after %s", timeout)
		}
		p.t.Fatalf("podman %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// images is what this process loaded and built, once each (see
// ReleaseImage and JobImage).
var images struct {
	mu           sync.Mutex
	release, job string
}

// ImageArchive is the OCI archive `make image` writes: $WITH_LOCK_IMAGE,
// else bin/with-lock.oci.tar in the repository.
func ImageArchive() string {
	if a := os.Getenv("WITH_LOCK_IMAGE"); a != "" {
		return a
	}
	return filepath.Join(RepoRoot(), "bin", "with-lock.oci.tar")
}

// ReleaseImage loads the archive `make image` built into the beds'
// storage and returns the image's ID. A missing archive fails the test:
// make image builds it (make beds does first).
func (p *Podman) ReleaseImage() string {
	p.t.Helper()
	images.mu.Lock()
	defer images.mu.Unlock()
	if images.release != "" {
		return images.release
	}
	archive := ImageArchive()
	if _, err := os.Stat(archive); err != nil {
		p.t.Fatalf("the image archive: %v (make image builds it)", err)
	}
	out := p.Output(time.Minute, "load", "--quiet", "--input", archive)
	name, ok := strings.CutPrefix(strings.TrimSpace(out), "Loaded image: ")
	if !ok || strings.Contains(name, "\n") {
		p.t.Fatalf("podman load %s: want one image loaded, got %q", archive, out)
	}
	// By its ID: the storage is the machine's, and another checkout's
	// beds may load an image of the same name meanwhile.
	id := strings.TrimSpace(p.Output(time.Minute, "image", "inspect", "--format", "{{.Id}}", name))
	if id == "" || strings.Contains(id, "\n") {
		p.t.Fatalf("podman image inspect %s: want one image ID, got %q", name, id)
	}
	images.release = id
	return id
}

// JobImage is an image for jobs: busybox's applets in /bin (so /bin/sh is
// busybox, as in Alpine and other busybox-based images), an empty /tmp,
// and with-lock copied from the release image (COPY --from, as
// docs/kubernetes.md tells a user to), its entrypoint.
func (p *Podman) JobImage() string {
	p.t.Helper()
	release := p.ReleaseImage()
	images.mu.Lock()
	defer images.mu.Unlock()
	if images.job != "" {
		return images.job
	}
	dir := p.t.TempDir()
	for _, d := range []string{"bin", "tmp"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			p.t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "tmp"), 0o1777); err != nil {
		p.t.Fatal(err)
	}
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		p.t.Fatal(err)
	}
	if err := copyFile(busybox, filepath.Join(dir, "bin", "busybox"), 0o755); err != nil {
		p.t.Fatal(err)
	}
	applets, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		p.t.Fatalf("busybox --list: %v", err)
	}
	for _, a := range strings.Fields(string(applets)) {
		if a != "busybox" {
			if err := os.Symlink("busybox", filepath.Join(dir, "bin", a)); err != nil {
				p.t.Fatal(err)
			}
		}
	}
	containerfile := "FROM scratch\nCOPY bin/ /bin/\nCOPY tmp/ /tmp/\n" +
		"COPY --from=" + release + " /usr/bin/with-lock /usr/bin/with-lock\n" +
		"ENV PATH=/usr/bin:/bin\nENTRYPOINT [\"/usr/bin/with-lock\"]\n"
	if err := os.WriteFile(filepath.Join(dir, "Containerfile"), []byte(containerfile), 0o644); err != nil {
		p.t.Fatal(err)
	}
	// Named for the release image it is built on: another checkout's beds
	// may build theirs meanwhile.
	name := "localhost/with-lock-bed-job:" + release[:min(12, len(release))]
	p.Output(2*time.Minute, "build", "--quiet", "--tag", name, dir)
	images.job = name
	return name
}

// RunSpec is one container.
type RunSpec struct {
	Image string
	Init  bool     // podman --init: catatonit is PID 1, with-lock its child
	Flags []string // more podman run flags (volumes, environment, entrypoint)
	Args  []string // the container's arguments (with-lock's, with its entrypoint)
}

// Container is a running `podman run --rm`.
type Container struct {
	p              *Podman
	Name           string
	cmd            *exec.Cmd
	stdout, stderr string // files podman run writes the container's output to
	done           chan struct{}
}

// Start runs the container in the background. It is removed (killed) when
// the test ends if it still runs.
func (p *Podman) Start(s RunSpec) *Container {
	p.t.Helper()
	dir := p.t.TempDir()
	c := &Container{p: p, Name: "with-lock-bed-" + randomHex(4), done: make(chan struct{}),
		stdout: filepath.Join(dir, "stdout"), stderr: filepath.Join(dir, "stderr")}
	stdout, err := os.Create(c.stdout)
	if err != nil {
		p.t.Fatal(err)
	}
	defer stdout.Close()
	stderr, err := os.Create(c.stderr)
	if err != nil {
		p.t.Fatal(err)
	}
	defer stderr.Close()
	args := append(append(podmanFlags(), "run", "--rm", "--name", c.Name), podmanRunFlags...)
	if s.Init {
		args = append(args, "--init")
	}
	args = append(append(append(args, s.Flags...), s.Image), s.Args...)
	c.cmd = exec.Command("podman", args...)
	c.cmd.Stdout, c.cmd.Stderr = stdout, stderr
	// Should this process die before its clean-ups run, podman run passes
	// SIGTERM on to the container, which --rm then removes once it ends.
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := c.cmd.Start(); err != nil {
		p.t.Fatalf("podman run: %v", err)
	}
	go func() { _ = c.cmd.Wait(); close(c.done) }()
	p.t.Cleanup(c.remove)
	return c
}

// Result is how a container ended.
type Result struct {
	Code           int // podman run's exit code: the container's
	Stdout, Stderr string
}

// Wait waits for the container to end, at most timeout.
func (c *Container) Wait(timeout time.Duration) Result {
	c.p.t.Helper()
	select {
	case <-c.done:
	case <-time.After(timeout):
		c.p.t.Fatalf("container %s still runs after %s\nstdout: %s\nstderr: %s", c.Name, timeout, readString(c.stdout), c.Stderr())
	}
	return Result{Code: c.cmd.ProcessState.ExitCode(), Stdout: readString(c.stdout), Stderr: c.Stderr()}
}

// Running reports whether the container has not ended yet.
func (c *Container) Running() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// Stderr is what the container wrote on stderr so far.
func (c *Container) Stderr() string { return readString(c.stderr) }

// readString is the content of file, "" when it cannot be read.
func readString(file string) string {
	b, _ := os.ReadFile(file)
	return string(b)
}

// Stop is podman stop -t seconds: SIGTERM to the container's PID 1, and
// SIGKILL after the seconds if it still runs.
func (c *Container) Stop(seconds int) {
	c.p.t.Helper()
	c.p.Output(time.Duration(seconds)*time.Second+30*time.Second, "stop", "--time", fmt.Sprint(seconds), c.Name)
}

// remove kills the container if it still runs, waits for podman run,
// and fails the test if a mount of podman's is left.
func (c *Container) remove() {
	if c.Running() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = exec.CommandContext(ctx, "podman", append(podmanFlags(), "rm", "--force", "--time", "0", c.Name)...).Run()
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
			c.p.t.Errorf("podman run of %s did not end after podman rm --force", c.Name)
		}
	}
	if left := mountsOf(podmanStorage(), podmanRun); left != "" {
		c.p.t.Errorf("container %s left mounts behind:\n%s", c.Name, left)
	}
}
