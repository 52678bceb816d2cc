package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// memoryControllerHere reports whether with-lock, run by the tests as
// root, can limit a job's memory: its cgroup2 hierarchy offers the memory
// controller (a hybrid host binds it to cgroup v1 instead).
func memoryControllerHere() bool {
	mount, rw := cgroup2Mount()
	b, _ := os.ReadFile(filepath.Join(mount, "cgroup.controllers"))
	return rw && os.Geteuid() == 0 && slices.Contains(strings.Fields(string(b)), "memory")
}

// --memory-max limits the whole job's memory where its cgroup has the
// memory controller: a job that takes more than the limit is killed by
// the kernel (137), and the record's max_rss_kb stays within the limit.
// Where the controller is not there, or the job has no cgroup of its own
// (--tracking subreaper contradicts the limit; a user who may make no
// group), the run is refused with the reason and the command never runs:
// a limit is not silently dropped.
func TestMemoryMaxLimitsTheJobOrIsRefusedWithTheReason(t *testing.T) {
	srv := redistest.Start(t)
	dir := sharedTempDir(t)
	ran := filepath.Join(dir, "ran")
	// dd's buffer is 200 MiB, filled as it reads: more than the limit.
	hog := []string{"sh", "-c", `touch "$0"; dd if=/dev/zero of=/dev/null bs=200M count=1 2>/dev/null`, ran}
	t.Run("this machine's cgroup", func(t *testing.T) {
		defer os.Remove(ran)
		res := clitest.Run(t, redisEnv(srv), append([]string{"--memory-max", "64M", "limited"}, hog...)...)
		if memoryControllerHere() {
			var rec struct {
				ExitCode int   `json:"exit_code"`
				MaxRSSKB int64 `json:"max_rss_kb"`
			}
			_ = json.Unmarshal([]byte(srv.Client().Get(t.Context(), "{lock:limited}:last").Val()), &rec)
			if res.Code != 137 || rec.ExitCode != 137 || rec.MaxRSSKB > 64*1024 {
				t.Errorf("exit %d, record %+v: want the job killed by the kernel (137) within 64 MiB; stderr %q", res.Code, rec, res.Stderr)
			}
			return
		}
		if res.Code != 78 || !hasLine(res.Stderr, "--memory-max", "no memory controller", "command not run") || exists(ran) {
			t.Errorf("exit %d, stderr %q, command ran: %v; want 78, the reason, and the command not run", res.Code, res.Stderr, exists(ran))
		}
		t.Logf("refused here: %s", res.Stderr)
	})
	t.Run("a user who may make no cgroup", func(t *testing.T) {
		defer os.Remove(ran)
		res := clitest.Spec{Env: redisEnv(srv), Args: append([]string{"--memory-max", "64M", "limited-nobody"}, hog...), Prefix: asNobody}.Start(t).Wait(clitest.RunTimeout)
		if res.Code != 78 || !hasLine(res.Stderr, "--memory-max", "cgroup of its own", "command not run") || exists(ran) {
			t.Errorf("exit %d, stderr %q, command ran: %v; want 78, the reason, and the command not run", res.Code, res.Stderr, exists(ran))
		}
	})
	t.Run("--tracking subreaper", func(t *testing.T) {
		res := clitest.Run(t, redisEnv(srv), append([]string{"--tracking", "subreaper", "--cpu-quota", "50%", "limited"}, hog...)...)
		if res.Code != 64 || !hasLine(res.Stderr, "--cpu-quota", "cgroup of its own") || exists(ran) {
			t.Errorf("exit %d, stderr %q: want 64 (the flags contradict each other)", res.Code, res.Stderr)
		}
	})
}
