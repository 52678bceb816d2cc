package container_test

import (
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/with-lock/with-lock/beds/testbed"
	"github.com/with-lock/with-lock/internal/redistest"
	"go.yaml.in/yaml/v3"
)

// cronJob is the part of a batch/v1 CronJob the guide's manifest is
// checked on.
type cronJob struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Spec       struct {
		ConcurrencyPolicy string `yaml:"concurrencyPolicy"`
		JobTemplate       struct {
			Spec struct {
				Template struct {
					Spec struct {
						RestartPolicy                 string      `yaml:"restartPolicy"`
						TerminationGracePeriodSeconds int         `yaml:"terminationGracePeriodSeconds"`
						Containers                    []container `yaml:"containers"`
						Volumes                       []struct {
							Name   string `yaml:"name"`
							Secret *struct {
								SecretName  string `yaml:"secretName"`
								DefaultMode int    `yaml:"defaultMode"`
							} `yaml:"secret"`
						} `yaml:"volumes"`
					} `yaml:"spec"`
				} `yaml:"template"`
			} `yaml:"spec"`
		} `yaml:"jobTemplate"`
	} `yaml:"spec"`
}

type container struct {
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Env     []struct {
		Name  string `yaml:"name"`
		Value string `yaml:"value"`
	} `yaml:"env"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly"`
	} `yaml:"volumeMounts"`
}

// guideCronJob is the CronJob in docs/kubernetes.md's yaml block.
func guideCronJob(t *testing.T) cronJob {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(testbed.RepoRoot(), "docs", "kubernetes.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(doc, -1)
	if len(blocks) != 1 {
		t.Fatalf("docs/kubernetes.md has %d yaml blocks, want the one CronJob", len(blocks))
	}
	var cj cronJob
	if err := yaml.Unmarshal(blocks[0][1], &cj); err != nil {
		t.Fatalf("docs/kubernetes.md's manifest: %v", err)
	}
	if cj.APIVersion != "batch/v1" || cj.Kind != "CronJob" {
		t.Fatalf("docs/kubernetes.md's manifest is a %s %s, want a batch/v1 CronJob", cj.APIVersion, cj.Kind)
	}
	if n := len(cj.Spec.JobTemplate.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("the CronJob has %d containers, want one", n)
	}
	return cj
}

// flagValue is the value of --name=V in args, "" without one.
func flagValue(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

// The guide's CronJob is what it says: one CronJob with
// concurrencyPolicy Forbid, with-lock from the image's path as its
// command, the Redis password from a Secret mounted read-only as the file
// --password-file names with the mode with-lock accepts (0400), the pod
// ending with its command (--leftovers=kill), a termination grace
// longer than --kill-after and --stop-timeout, each plus the Redis
// timeout, and no -q, which would hide the warning that the guide says a
// Pushgateway that is down costs.
func TestKubernetesCronJobManifestFitsWithLock(t *testing.T) {
	cj := guideCronJob(t)
	pod := cj.Spec.JobTemplate.Spec.Template.Spec
	c := pod.Containers[0]
	for _, a := range c.Args {
		if a == "-q" || a == "--quiet" || strings.HasPrefix(a, "--quiet=") {
			t.Errorf("args %q have %s: a Pushgateway that is down would say nothing", c.Args, a)
		}
	}
	if cj.Spec.ConcurrencyPolicy != "Forbid" || pod.RestartPolicy != "Never" {
		t.Errorf("concurrencyPolicy %q, restartPolicy %q; want Forbid and Never", cj.Spec.ConcurrencyPolicy, pod.RestartPolicy)
	}
	if !slices.Equal(c.Command, []string{"/usr/bin/with-lock"}) {
		t.Errorf("command %q, want the image's /usr/bin/with-lock", c.Command)
	}
	if flagValue(c.Args, "leftovers") != "kill" {
		t.Errorf("args %q lack --leftovers=kill: as PID 1 with-lock would keep the pod for the job's leftovers", c.Args)
	}
	killAfter, err := time.ParseDuration(flagValue(c.Args, "kill-after"))
	if err != nil {
		t.Fatalf("--kill-after: %v", err)
	}
	const redisTimeout = 3 * time.Second // --redis-timeout's default
	if grace := time.Duration(pod.TerminationGracePeriodSeconds) * time.Second; grace <= killAfter+redisTimeout {
		t.Errorf("terminationGracePeriodSeconds %s, want more than --kill-after %s plus the Redis timeout", grace, killAfter)
	}
	stopTimeout, err := time.ParseDuration(flagValue(c.Args, "stop-timeout"))
	if err != nil {
		t.Fatalf("--stop-timeout: %v", err)
	}
	if grace := time.Duration(pod.TerminationGracePeriodSeconds) * time.Second; grace <= stopTimeout+redisTimeout {
		t.Errorf("terminationGracePeriodSeconds %s, want more than --stop-timeout %s plus the Redis timeout", grace, stopTimeout)
	}
	file := flagValue(c.Args, "password-file")
	mode, readOnly, ok := secretMount(cj, path.Dir(file))
	if file == "" || !ok {
		t.Fatalf("--password-file %q is not in a Secret volume mounted at its directory", file)
	}
	if !readOnly || mode != 0o400 {
		t.Errorf("the Secret at %s: readOnly %v, defaultMode %#o; want true and 0400", path.Dir(file), readOnly, mode)
	}
}

// secretMount finds the Secret volume mounted at dir in the CronJob's
// container: its defaultMode and whether the mount is read-only.
func secretMount(cj cronJob, dir string) (mode int, readOnly, ok bool) {
	pod := cj.Spec.JobTemplate.Spec.Template.Spec
	for _, m := range pod.Containers[0].VolumeMounts {
		for _, v := range pod.Volumes {
			if v.Name == m.Name && v.Secret != nil && m.MountPath == dir {
				return v.Secret.DefaultMode, m.ReadOnly, true
			}
		}
	}
	return 0, false, false
}

// The guide's CronJob runs as the manifest says: its command line and
// environment, with WITH_LOCK_REDIS pointed at the test's Redis, in a
// container under podman (with-lock PID 1), the Secret mounted read-only as
// the kubelet lays one out (the file a symlink into ..data, with the
// volume's defaultMode).
// --metrics-push points at a real Pushgateway on the host.
// The job runs once, and its run reaches the Pushgateway; a second run
// while --min-hold keeps the lock is a silent success that runs nothing,
// and leaves the first run's metrics in place. With the Pushgateway down,
// a run says so in one line, and exits as the job did.
func TestKubernetesCronJobCommandRunsInContainer(t *testing.T) {
	cj := guideCronJob(t)
	c := cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0]
	const password = "guide-password"
	r := testbed.StartRedisWithPassword(t, password)
	p := testbed.NewPodman(t)
	pushgateway := testbed.StartPushgateway(t)
	if flagValue(c.Args, "metrics-push") == "" {
		t.Fatalf("args %q lack --metrics-push: a pod has no textfile directory", c.Args)
	}
	args := slices.Clone(c.Args)
	for i, a := range args {
		if strings.HasPrefix(a, "--metrics-push=") {
			args[i] = "--metrics-push=" + pushgateway
		}
	}
	file := flagValue(c.Args, "password-file")
	mode, _, ok := secretMount(cj, path.Dir(file))
	if !ok {
		t.Fatalf("--password-file %q is not in a Secret volume", file)
	}
	secretDir := kubeletSecret(t, path.Base(file), password, os.FileMode(mode))
	job := c.Args[len(c.Args)-1]
	script := filepath.Join(t.TempDir(), "job.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho the job ran\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--entrypoint", c.Command[0],
		"--volume", secretDir + ":" + path.Dir(file) + ":ro", "--volume", script + ":" + job + ":ro"}
	for _, e := range c.Env {
		if e.Name == "WITH_LOCK_REDIS" {
			e.Value = r.URL()
		}
		flags = append(flags, "--env", e.Name+"="+e.Value)
	}
	run := func() testbed.Result {
		return p.Start(testbed.RunSpec{Image: p.JobImage(), Flags: flags, Args: args}).Wait(wait)
	}
	name := c.Args[len(c.Args)-2]

	first := run()
	if first.Code != 0 || first.Stdout != "the job ran\n" || first.Stderr != "" {
		t.Errorf("the first run: exit %d, stdout %q, stderr %q; want 0, the job's line and nothing else", first.Code, first.Stdout, first.Stderr)
	}
	if ttl := r.Client().TTL(t.Context(), "lock:"+name).Val(); ttl < 9*time.Minute {
		t.Errorf("after the run lock:%s has TTL %s, want --min-hold's ten minutes", name, ttl)
	}
	if m := pushedMetrics(t, pushgateway); !strings.Contains(m, `with_lock_last_run_outcome{host=`) ||
		!regexp.MustCompile(`with_lock_last_run_exit_code\{[^}]*lock="`+name+`"[^}]*\} 0\n`).MatchString(m) {
		t.Errorf("the Pushgateway has no exit code 0 of lock %s:\n%s", name, m)
	}
	second := run()
	if second.Code != 0 || second.Stdout != "" || second.Stderr != "" {
		t.Errorf("a run while --min-hold keeps the lock: exit %d, stdout %q, stderr %q; want a silent 0", second.Code, second.Stdout, second.Stderr)
	}
	if m := pushedMetrics(t, pushgateway); !regexp.MustCompile(`with_lock_last_run_outcome\{[^}]*lock="` + name + `"[^}]*outcome="ok"[^}]*\} 1\n`).MatchString(m) {
		t.Errorf("after the skipped run the Pushgateway no longer shows the first run's outcome ok:\n%s", m)
	}

	if err := r.Client().Del(t.Context(), "lock:"+name).Err(); err != nil {
		t.Fatal(err)
	}
	for i, a := range args {
		if strings.HasPrefix(a, "--metrics-push=") {
			args[i] = "--metrics-push=http://127.0.0.1:" + strconv.Itoa(redistest.FreePort(t)) // nothing listens
		}
	}
	down := run()
	if down.Code != 0 || down.Stdout != "the job ran\n" || strings.Count(down.Stderr, "\n") != 1 ||
		!strings.Contains(down.Stderr, "metrics of "+name+" not pushed") {
		t.Errorf("a run with the Pushgateway down: exit %d, stdout %q, stderr %q; want 0, the job's line and one warning", down.Code, down.Stdout, down.Stderr)
	}
}

// kubeletSecret lays out a Secret volume as the kubelet does: the key's
// file a symlink into ..data, itself a symlink to a timestamped directory
// holding the data, with the volume's mode.
func kubeletSecret(t *testing.T, key, value string, mode os.FileMode) string {
	t.Helper()
	dir := t.TempDir()
	data := filepath.Join(dir, "..2026_01_01_00_00_00.000000001")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, key), []byte(value), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(data, key), mode); err != nil { // past the umask
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Base(data), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..data", key), filepath.Join(dir, key)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// pushedMetrics is what the Pushgateway at url shows on /metrics.
func pushedMetrics(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
