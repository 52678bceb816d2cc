package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

// env describes the machine and software of a run.
type env struct {
	cpu, os, kernel, goVersion, redis string
	cores                             int
	loadBefore, loadAfter             string
	deps                              map[string]string
	when                              time.Time
}

func machine() env {
	e := env{cores: runtime.NumCPU(), goVersion: runtime.Version(), loadBefore: loadAvg(), when: time.Now(), deps: map[string]string{}}
	e.cpu = "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				e.cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		e.kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
				e.os = strings.Trim(v, `"`)
			}
		}
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			e.deps[d.Path] = d.Version
		}
	}
	return e
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:3], " ")
}

// results of a whole run.
type results struct {
	env       env
	cfg       config
	libs      []*libResult
	roundTrip modeResult // the floor of a handoff: one round trip after the hold
	cliWays   []cliWay
	cli       map[string][]time.Duration
	pipedWays []pipedWay                 // the output part (piped.go)
	piped     map[string][]time.Duration // its wall times, by way
	list      *listResult                // the fleet view at size (list.go); nil if not run
	tracking  *trackingResult            // start-up by tracking mode under systemd (tracking.go); nil if not run
	scale     *scaleResult               // the scale section (scale.go); nil if not run

	pairedRatio float64 // with-lock over the raw floor, uncontended, set by targets

	unlined   *libResult // with-lock's Clients on a key without the line, fair modes only
	fairFloor modeResult // the handoff floor, measured in the fair rounds
	slots     modeResult // the semaphore mode (slots.go), measured in the fair rounds
}

// libResult holds one library's figures, one entry per round.
type libResult struct {
	lib                          lib
	us1, allocs1, us16, allocs16 []float64
	cmds                         []float64 // Redis commands per pair, 1 goroutine
	// CPU µs per pair at 16 goroutines, this process's and redis-server's
	// (uncontended.go), one entry per round.
	clientCPU16, serverCPU16 []float64
	// The same at 1 goroutine, where a pair's time is its latency.
	clientCPU1, serverCPU1, scriptUs1 []float64
	scriptUs16                        []float64 // µs in Redis per release script (uncontended.go)
	bytes16                           []float64 // heap bytes allocated per pair
	modes                             map[string]*modeResult
}

func (l *libResult) mode(key string) *modeResult {
	m := l.modes[key]
	if m == nil {
		m = &modeResult{}
		l.modes[key] = m
	}
	return m
}

// modeResult pools the contended runs of one library in one mode.
type modeResult struct {
	latencies []time.Duration
	rates     []float64 // acquisitions per second, per round
	commands  []float64 // commands per acquisition, per round
	perWaiter []int     // acquisitions per goroutine, summed over rounds
	overlaps  int
	errors    int
}

func (m *modeResult) add(r contended) {
	m.latencies = append(m.latencies, r.latencies...)
	m.rates = append(m.rates, float64(r.acquired)/r.elapsed.Seconds())
	m.commands = append(m.commands, float64(r.commands)/float64(r.acquired))
	if m.perWaiter == nil {
		m.perWaiter = make([]int, len(r.perWaiter))
	}
	for i, n := range r.perWaiter {
		m.perWaiter[i] += n
	}
	m.overlaps += r.overlaps
	m.errors += r.errors
}

func (m *modeResult) p(pct float64) time.Duration { return percentile(m.latencies, pct) }

// fairness is the fewest acquisitions of one goroutine over the most.
func (m *modeResult) fairness() (lo, hi int, ratio float64) {
	if len(m.perWaiter) == 0 {
		return 0, 0, 0
	}
	lo, hi = slices.Min(m.perWaiter), slices.Max(m.perWaiter)
	if hi == 0 {
		return lo, hi, 0
	}
	return lo, hi, float64(lo) / float64(hi)
}

func (r *results) byName(name string) *libResult {
	for _, l := range r.libs {
		if l.lib.name == name {
			return l
		}
	}
	return nil
}

func fmtMS(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case ms < 10:
		return fmt.Sprintf("%.2f ms", ms)
	case ms < 100:
		return fmt.Sprintf("%.1f ms", ms)
	}
	return fmt.Sprintf("%.0f ms", ms)
}
