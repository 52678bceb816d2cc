package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/with-lock/with-lock/internal/redistest"
)

// cliWay is one way to run `true` under a lock from the shell.
type cliWay struct {
	name string
	desc string
	argv []string
	env  []string
}

// cliWays builds the with-lock CLI and the Go floor into dir and returns
// the four ways to compare, all on the private Redis.
func cliWays(root, dir string, srv *redistest.Server) ([]cliWay, error) {
	wl := filepath.Join(dir, "with-lock")
	floor := filepath.Join(dir, "floor")
	for _, b := range []struct{ dir, out, pkg string }{
		{root, wl, "./cmd/with-lock"},
		{".", floor, "./cmd/floor"},
	} {
		// The flags of make build, for both.
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", b.out, b.pkg)
		cmd.Dir = b.dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build %s: %w\n%s", b.pkg, err, out)
		}
	}
	seed, err := filepath.Abs("seed-with-lock.sh")
	if err != nil {
		return nil, err
	}
	return []cliWay{
		{"with-lock x true", "the with-lock binary, built as make build does", []string{wl, "x", "true"},
			[]string{"WITH_LOCK_REDIS=redis://" + srv.Addr() + "/0"}},
		{"Go floor", "bench/cmd/floor: SET NX EX, fork/exec, EVAL over a raw socket, same build flags", []string{floor, "x", "true"},
			[]string{"FLOOR_REDIS=" + srv.Addr()}},
		{"bash + redis-cli", "bench/seed-with-lock.sh, the seed's way", []string{"bash", seed, "x", "true"},
			[]string{"REDIS_PORT=" + strconv.Itoa(srv.Port)}},
		{"flock -n", "flock -n FILE true (util-linux), a local lock for scale", []string{"flock", "-n", filepath.Join(dir, "flock.lock"), "true"}, nil},
	}, nil
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
			if err != nil {
				return nil, fmt.Errorf("%s: %w\n%s", w.name, err, out)
			}
			if i >= 3 {
				times[w.name] = append(times[w.name], d)
			}
		}
	}
	return times, nil
}

func median(ds []time.Duration) time.Duration { return percentile(ds, 50) }

// percentile of ds (sorted in place), nearest rank.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(float64(len(ds))*p/100+0.5) - 1
	return ds[min(max(i, 0), len(ds)-1)]
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
