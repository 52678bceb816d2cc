package supervise

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A job's group outlives the run that made it when nothing of that run is
// left to remove it: with-lock and its guard killed at the same moment.
// Its processes, if any are left, then run without the lock. So each run
// holds a lock (flock) on its group's directory for as long as it lives,
// and every run that makes a group of its own first looks at the groups
// beside it: one whose lock it can take belongs to no live run, and it
// kills what is in it and removes it.
//
// The names must never collide: a group left behind must not stop a later
// run from having one, and two runs must not share one. A pid alone is
// not unique (in PID namespaces every with-lock may be pid 1), so the name
// adds 64 random bits: with-lock.<pid>.<16 hex digits>. The pid is for
// the reader; liveness is the lock's to say, which holds across PID
// namespaces. Groups named with-lock.<pid> alone, made by earlier
// versions that held no lock, are not touched.

const cgroupPrefix = "with-lock."

// newCgroupDir is a new name for a job's group in parent.
func newCgroupDir(parent string) string {
	// The top bit set makes it 16 hex digits without padding.
	return filepath.Join(parent, cgroupPrefix+strconv.Itoa(os.Getpid())+"."+strconv.FormatUint(rand.Uint64()|1<<63, 16))
}

// isJobCgroup reports whether name is one of newCgroupDir's.
func isJobCgroup(name string) bool {
	rest, ok := strings.CutPrefix(name, cgroupPrefix)
	pid, random, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 || len(random) != 16 {
		return false
	}
	if _, err := strconv.ParseUint(pid, 10, 64); err != nil {
		return false
	}
	_, err := strconv.ParseUint(random, 16, 64)
	return err == nil
}

// own takes the lock on the group for this run, and reports whether the
// group is still there: a run that found the name unlocked between its
// mkdir and this lock may have removed it.
func (g *cgroup) own() bool {
	if unix.Flock(g.fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return false // another run has it, to remove it
	}
	var held, named unix.Stat_t
	return unix.Fstat(g.fd, &held) == nil && unix.Stat(g.dir, &named) == nil &&
		held.Dev == named.Dev && held.Ino == named.Ino
}

// removeStaleIn kills and removes the jobs' groups in parent that no live
// run holds, but own.
func removeStaleIn(parent, own string) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() && e.Name() != own && isJobCgroup(e.Name()) {
			removeStale(filepath.Join(parent, e.Name()))
		}
	}
}

// removeStale kills and removes the group at dir unless a run holds it.
func removeStale(dir string) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return // removed meanwhile
	}
	defer unix.Close(fd)
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return // its run is alive
	}
	_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
	deadline := time.Now().Add(staleWait)
	for {
		err := unix.Rmdir(dir)
		if !errors.Is(err, unix.EBUSY) {
			return
		}
		removeStaleIn(dir, "") // groups of runs nested in that job, killed with it
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
