package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/with-lock/with-lock/internal/redistest"
)

// The rows the ratios are taken against.
const (
	cliOurs         = "with-lock x true"
	cliFloor        = "Go floor"
	cliGuardedFloor = "Go floor, guarded"
	cliGoRedisFloor = "Go floor, guarded, go-redis"
)

// cliBaseline names a git revision whose with-lock also runs, interleaved
// with the rest, so that a change's gain is measured in one run on one
// load: -cli-baseline HEAD~1, say.
var cliBaseline = flag.String("cli-baseline", "", "also time `with-lock x true` built at this git `REV`, interleaved (for a change's gain)")

// cliWay is one way to run `true` under a lock from the shell.
type cliWay struct {
	name string
	desc string
	argv []string
	env  []string
	code int // the exit code it is expected to end with
}

// cliWays builds the with-lock CLI and the Go floors into dir and returns
// the ways to compare, all on the private Redis.
func cliWays(root, dir string, srv *redistest.Server) ([]cliWay, error) {
	wl := filepath.Join(dir, "with-lock")
	floor := filepath.Join(dir, "floor")
	guarded := filepath.Join(dir, "floor-guarded")
	goredis := filepath.Join(dir, "floor-goredis")
	builds := []struct{ dir, out, pkg string }{
		{root, wl, "./cmd/with-lock"},
		{".", floor, "./cmd/floor"},
		{".", guarded, "./cmd/floor-guarded"},
		{".", goredis, "./cmd/floor-goredis"},
	}
	base := filepath.Join(dir, "with-lock-base")
	if *cliBaseline != "" {
		src, err := checkout(root, *cliBaseline, filepath.Join(dir, "base-src"))
		if err != nil {
			return nil, err
		}
		builds = append(builds, struct{ dir, out, pkg string }{src, base, "./cmd/with-lock"})
	}
	for _, b := range builds {
		if err := goBuild(b.dir, b.out, b.pkg); err != nil {
			return nil, err
		}
	}
	seed, err := filepath.Abs("seed-with-lock.sh")
	if err != nil {
		return nil, err
	}
	redisEnv := []string{"WITH_LOCK_REDIS=redis://" + srv.Addr() + "/0"}
	ways := []cliWay{
		{cliOurs, "the with-lock binary, built as make build does", []string{wl, "x", "true"}, redisEnv, 0},
		// What each way of following the job costs here, where no systemd
		// runs: auto makes a group of the job's own (as root), as
		// --tracking cgroup does; the subreaper alone makes none. Under
		// systemd, the scope: tracking.go.
		{"with-lock --tracking subreaper x true", "the job followed by the subreaper alone, no cgroup of its own", []string{wl, "--tracking", "subreaper", "x", "true"}, redisEnv, 0},
		{cliFloor, "bench/cmd/floor: SET NX EX, fork/exec, EVAL over a raw socket, same build flags", []string{floor, "x", "true"},
			[]string{"FLOOR_REDIS=" + srv.Addr()}, 0},
		// The least a wrapper that promises the command dies with it
		// (kill -9 included) can cost: with-lock keeps such a guard.
		{cliGuardedFloor, "bench/cmd/floor-guarded: the Go floor plus a guard (itself re-exec'd, waiting on a pipe) that kills the command's group if the wrapper dies",
			[]string{guarded, "x", "true"}, []string{"FLOOR_REDIS=" + srv.Addr()}, 0},
		// The same on go-redis, which with-lock is built on: what its
		// package graph and handshake add, that no wrapper on it avoids.
		{cliGoRedisFloor, "bench/cmd/floor-goredis: the guarded floor with go-redis (set up as with-lock does) in place of the raw socket",
			[]string{goredis, "x", "true"}, []string{"FLOOR_REDIS=" + srv.Addr()}, 0},
		{"bash + redis-cli", "bench/seed-with-lock.sh, the seed's way", []string{"bash", seed, "x", "true"},
			[]string{"REDIS_PORT=" + strconv.Itoa(srv.Port)}, 0},
		{"flock -n", "flock -n FILE true (util-linux), a local lock for scale", []string{"flock", "-n", filepath.Join(dir, "flock.lock"), "true"}, nil, 0},
		// Start-up and exit alone, without Redis or a command: what the
		// size of each binary and its package initialisation cost.
		{"with-lock --version", "start-up and exit only: runtime, package init, flag parsing", []string{wl, "--version"}, nil, 0},
		{"Go floor, no arguments", "start-up and exit only (it exits 64 at once)", []string{floor}, nil, 64},
	}
	if *cliBaseline != "" {
		ways = append(ways, cliWay{cliOurs + " at " + *cliBaseline, "the same, built at that revision, for the change's gain",
			[]string{base, "x", "true"}, redisEnv, 0})
	}
	return ways, nil
}

// goBuild builds pkg in dir to out with the flags of make build: static,
// without cgo, as the CLI ships. A cgo build would put the dynamic loader
// in front of every way alike, and hide part of the difference between
// them.
func goBuild(dir, out, pkg string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	return nil
}

// checkout writes the tree of rev in root's repository to dir and returns
// it, for building an earlier with-lock beside the current one.
func checkout(root, rev, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	archive := exec.Command("git", "archive", "--format=tar", rev)
	archive.Dir = root
	var stderr strings.Builder
	archive.Stderr = &stderr
	tar := exec.Command("tar", "-x", "-C", dir)
	var err error
	if tar.Stdin, err = archive.StdoutPipe(); err != nil {
		return "", err
	}
	if err := archive.Start(); err != nil {
		return "", err
	}
	terr := tar.Run()
	if err := archive.Wait(); err != nil {
		return "", fmt.Errorf("git archive %s: %w: %s", rev, err, stderr.String())
	}
	if terr != nil {
		return "", fmt.Errorf("untar %s: %w", rev, terr)
	}
	return dir, nil
}

// runCLI runs every way n times, interleaved, and returns each way's wall
// times.
func runCLI(ways []cliWay, n int) (map[string][]time.Duration, error) {
	times := make(map[string][]time.Duration)
	for i := range n + 3 { // the first runs warm the page cache
		for _, w := range ways {
			cmd := exec.Command(w.argv[0], w.argv[1:]...)
			cmd.Env = append(os.Environ(), w.env...)
			start := time.Now()
			out, err := cmd.CombinedOutput()
			d := time.Since(start)
			if code := cmd.ProcessState.ExitCode(); code != w.code {
				return nil, fmt.Errorf("%s: exit %d (%v), want %d\n%s", w.name, code, err, w.code, out)
			}
			if i >= 3 {
				times[w.name] = append(times[w.name], d)
			}
		}
	}
	return times, nil
}

func median(ds []time.Duration) time.Duration { return percentile(ds, 50) }

// percentile of ds, nearest rank. It sorts a copy: the CLI's times stay in
// run order, for pairedRatio.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	i := int(float64(len(ds))*p/100+0.5) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

// pairedRatio is the median over rounds of a's time over b's in the same
// round: runCLI runs the ways one after the other in each round, so a slow
// spell of the shared machine slows both and cancels out.
func pairedRatio(a, b []time.Duration) float64 {
	var rs []float64
	for i := range min(len(a), len(b)) {
		rs = append(rs, float64(a[i])/float64(b[i]))
	}
	return medianF(rs)
}

func medianF(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
