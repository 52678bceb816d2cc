package redistest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// A redis-server whose wall clock a test can step, as an NTP step or an
// operator's date(1) steps a real server's: Redis expires keys by it.
//
// Debian's libfaketime cannot do it: preloaded into redis-server 7.0 it
// deadlocks at start-up, its clock_gettime and pthread_cond_init wrappers
// resolving symbols (dlsym, dlopen) that allocate while jemalloc, which
// calls them, holds its initialization lock. So the server is given a
// preloaded shim of its own, which allocates nothing: the wall clock
// (CLOCK_REALTIME, gettimeofday, time) is the host's plus the offset in
// milliseconds written in a file, read again at most every millisecond;
// the monotonic clocks are left alone, as a step leaves them.

// clockShim is the shim's C source, built with the host's C compiler.
const clockShim = `#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static long long offset_ns, checked_ns;

static long long mono_ns(void) {
	struct timespec t;
	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static long long offset(void) {
	long long now = mono_ns();
	if (checked_ns != 0 && now - checked_ns < 1000000)
		return offset_ns;
	checked_ns = now;
	const char *path = getenv("REDISTEST_CLOCK_FILE");
	if (!path)
		return 0;
	int fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY);
	if (fd < 0)
		return offset_ns;
	char b[32];
	long n = syscall(SYS_read, fd, b, sizeof b);
	syscall(SYS_close, fd);
	long long v = 0;
	int i = 0, neg = n > 0 && b[0] == '-';
	for (i = neg; i < n && b[i] >= '0' && b[i] <= '9'; i++)
		v = v * 10 + (b[i] - '0');
	if (n > neg && i > neg)
		offset_ns = (neg ? -v : v) * 1000000LL;
	return offset_ns;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
	int r = syscall(SYS_clock_gettime, id, ts);
	if (r == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) {
		long long ns = ts->tv_sec * 1000000000LL + ts->tv_nsec + offset();
		ts->tv_sec = ns / 1000000000LL;
		ts->tv_nsec = ns % 1000000000LL;
	}
	return r;
}

int gettimeofday(struct timeval *tv, void *tz) {
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	tv->tv_sec = ts.tv_sec;
	tv->tv_usec = ts.tv_nsec / 1000;
	return 0;
}

time_t time(time_t *t) {
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (t)
		*t = ts.tv_sec;
	return ts.tv_sec;
}
`

// SteppedClock is the wall clock of a server StartSteppedClock started.
type SteppedClock struct {
	t    testing.TB
	file string
	at   time.Duration
}

// StartSteppedClock is Start for a server whose wall clock Step moves. It
// skips the test where there is no C compiler to build the shim.
func StartSteppedClock(t testing.TB, extra ...string) (*Server, *SteppedClock) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts redis-server: not run under go test -short")
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler to build the clock shim: ", err)
	}
	dir := t.TempDir()
	src, lib := filepath.Join(dir, "clock.c"), filepath.Join(dir, "clock.so")
	if err := os.WriteFile(src, []byte(clockShim), 0o600); err != nil {
		t.Fatalf("%v", err)
	}
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-O2", "-o", lib, src).CombinedOutput(); err != nil {
		t.Fatalf("build the clock shim: %v\n%s", err, out)
	}
	c := &SteppedClock{t: t, file: filepath.Join(dir, "offset")}
	c.write()
	s := launch(t, launchOptions{extra: extra, env: []string{"LD_PRELOAD=" + lib, "REDISTEST_CLOCK_FILE=" + c.file}})
	return s, c
}

// Step moves the server's wall clock by d, at once.
func (c *SteppedClock) Step(d time.Duration) {
	c.t.Helper()
	c.at += d
	c.write()
}

// write puts the offset in place with a rename, so that the server never
// reads half of it.
func (c *SteppedClock) write() {
	c.t.Helper()
	tmp := c.file + ".new"
	if err := os.WriteFile(tmp, []byte(strconv.FormatInt(c.at.Milliseconds(), 10)), 0o600); err != nil {
		c.t.Fatalf("%v", err)
	}
	if err := os.Rename(tmp, c.file); err != nil {
		c.t.Fatalf("%v", err)
	}
}
