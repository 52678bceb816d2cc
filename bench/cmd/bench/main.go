// Command bench compares the with-lock library and CLI with their peers on a
// private redis-server, prints the results and writes BENCHMARKS.md and a
// chart of handoff latency. Run it from bench/ (make bench does).
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/redistest"
)

// modes of the contended measurement.
var modes = []struct {
	key        string
	goroutines int
	handoff    bool
}{
	{"handoff8", 8, true},
	{"plain8", 8, false},
	{"handoff16", 16, true},
}

// config of one benchmark run.
type config struct {
	rounds, pairs, cRounds, cliRuns int
	pipedRuns                       int
	listRuns, listKeys, listLocks   int
	fairRounds                      int
	runFor                          time.Duration
	root, out, svg                  string
	only                            string
	noTracking                      bool
	scale                           scaleConfig // scale.go
}

func main() {
	var c config
	flag.IntVar(&c.rounds, "rounds", 21, "interleaved rounds of the uncontended measurement")
	flag.IntVar(&c.pairs, "pairs", 800, "lock+unlock pairs per library per round (uncontended)")
	flag.IntVar(&c.cRounds, "contended-rounds", 3, "interleaved rounds of the contended measurement")
	flag.DurationVar(&c.runFor, "run", 1500*time.Millisecond, "length of one contended run")
	flag.IntVar(&c.fairRounds, "fair-rounds", 3, "interleaved rounds of the fair-line measurement (a Client per waiter)")
	flag.IntVar(&c.cliRuns, "cli-runs", 150, "runs of each CLI way")
	flag.IntVar(&c.pipedRuns, "piped-runs", 15, "runs of each way of the output part (100 MB through with-lock)")
	flag.IntVar(&c.listRuns, "list-runs", 11, "runs of each --list way (0: skip the fleet view)")
	flag.IntVar(&c.listKeys, "list-keys", 2_000_000, "unrelated keys beside the locks in the fleet view's Redis")
	flag.IntVar(&c.listLocks, "list-locks", 1000, "locks held in the fleet view's Redis")
	flag.StringVar(&c.root, "root", "..", "the with-lock checkout")
	flag.StringVar(&c.out, "out", "BENCHMARKS.md", "where to write the report ('' for nowhere)")
	flag.StringVar(&c.svg, "svg", "handoff.svg", "where to write the chart ('' for nowhere)")
	flag.BoolVar(&c.noTracking, "no-tracking", false, "skip the start-up by tracking mode under a booted systemd (the beds module)")
	flag.StringVar(&c.only, "only", "", "run only this part (uncontended, lone, contended, fair, cli, tracking, piped, list or scale) and write no files, for profiling; lone: with-lock beside the floors at one goroutine, in alternating blocks")
	c.scale.flags()
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	env := machine()
	// The tests' harness: a private redis-server on a free loopback port
	// (never 6379), without persistence.
	srv, stopRedis, err := redistest.StartMain()
	if err != nil {
		return err
	}
	defer stopRedis()
	adm := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true})
	defer adm.Close()
	env.redis = redisVersion(adm)
	fmt.Printf("with-lock benchmark: redis-server %s on %s, %s\n", env.redis, srv.Addr(), env.cpu)

	res := &results{env: env, cfg: c}
	all := libs()
	lockers := make(map[string]locker)
	for _, lb := range all {
		l, err := lb.open(srv.Addr())
		if err != nil {
			return err
		}
		defer l.close()
		lockers[lb.name] = l
		res.libs = append(res.libs, &libResult{lib: lb, modes: map[string]*modeResult{}})
	}
	if c.only == "lone" {
		return runLone(lockers)
	}

	// Uncontended: interleaved rounds, each library once per round, after
	// a warm-up that fills connection pools. The order is shuffled every
	// round (with a fixed seed: every run sees the same orders), so that
	// no library always runs right after the same other one, whose
	// garbage and background goroutines it would pay for in every round.
	if c.only != "" {
		c.out, c.svg = "", ""
		if c.only != "uncontended" {
			c.rounds = 0
		}
		if c.only != "contended" {
			c.cRounds = 0
		}
		if c.only != "cli" {
			c.cliRuns = 0
		}
		if c.only != "fair" {
			c.fairRounds = 0
		}
		if c.only != "piped" {
			c.pipedRuns = 0
		}
		if c.only != "list" {
			c.listRuns = 0
		}
		if c.only != "tracking" {
			c.noTracking = true
		}
		if c.only != "scale" {
			c.scale.off()
		}
	}
	fmt.Printf("uncontended: %d rounds of %d pairs, 1 and 16 goroutines\n", c.rounds, c.pairs)
	order := rand.New(rand.NewPCG(1, 2))
	for round := -1; round < c.rounds && c.rounds > 0; round++ {
		for _, i := range order.Perm(len(res.libs)) {
			lr := res.libs[i]
			if !lr.lib.uncontended {
				continue
			}
			for _, g := range []int{1, 16} {
				u, err := runUncontended(lockers[lr.lib.name], adm, g, c.pairs)
				if err != nil {
					return fmt.Errorf("%s uncontended: %w", lr.lib.name, err)
				}
				if round < 0 {
					continue // warm-up
				}
				if g == 1 {
					lr.us1, lr.allocs1 = append(lr.us1, u.usPerPair), append(lr.allocs1, u.allocsPerPair)
					lr.cmds = append(lr.cmds, u.cmdsPerPair)
					lr.clientCPU1, lr.serverCPU1 = append(lr.clientCPU1, u.clientCPU), append(lr.serverCPU1, u.serverCPU)
					lr.scriptUs1 = append(lr.scriptUs1, u.scriptUs)
				} else {
					lr.us16, lr.allocs16 = append(lr.us16, u.usPerPair), append(lr.allocs16, u.allocsPerPair)
					lr.clientCPU16, lr.serverCPU16 = append(lr.clientCPU16, u.clientCPU), append(lr.serverCPU16, u.serverCPU)
					lr.scriptUs16 = append(lr.scriptUs16, u.scriptUs)
					lr.bytes16 = append(lr.bytes16, u.bytesPerPair)
				}
			}
		}
	}

	fmt.Printf("contended: %d rounds of %s per library and mode, hold %s\n", c.cRounds, c.runFor, holdFor)
	floorRDB := newGoRedis(srv.Addr())
	defer floorRDB.Close()
	for round := range c.cRounds {
		r, err := runRoundTrip(floorRDB, c.runFor)
		if err != nil {
			return err
		}
		res.roundTrip.add(r)
		for _, m := range modes {
			for i := range res.libs {
				lr := res.libs[(i+round)%len(res.libs)]
				if !lr.lib.contended {
					continue
				}
				r, err := runContended(lr.lib, lockers[lr.lib.name], nil, adm, m.goroutines, 1, m.handoff, c.runFor)
				if err != nil {
					return err
				}
				lr.mode(m.key).add(r)
				fmt.Printf("  round %d %-9s %-30s %5d acquisitions, p50 %s, %d errors\n", round+1, m.key, lr.lib.name, r.acquired, fmtMS(median(r.latencies)), r.errors)
			}
		}
	}

	if err := runFair(c, res, srv.Addr(), adm); err != nil {
		return err
	}

	if c.cliRuns > 0 {
		fmt.Printf("CLI: %d runs of each way, interleaved\n", c.cliRuns)
		dir, err := os.MkdirTemp("", "with-lock-bench-bin-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if res.cliWays, err = cliWays(c.root, dir, srv); err != nil {
			return err
		}
		if res.cli, err = runCLI(res.cliWays, c.cliRuns); err != nil {
			return err
		}
	}
	if !c.noTracking {
		fmt.Println("tracking: with-lock's start-up by tracking mode under a booted systemd (beds)")
		res.tracking = runTracking(c.root)
	}
	if c.pipedRuns > 0 {
		fmt.Printf("output: %d MB through with-lock, %d runs of each way, interleaved\n", pipedBytes/1_000_000, c.pipedRuns)
		if res.pipedWays, res.piped, err = runPiped(c.root, srv, c.pipedRuns); err != nil {
			return err
		}
	}
	if c.listRuns > 0 {
		fmt.Printf("fleet view: %d locks beside %d keys, %d runs of each way\n", c.listLocks, c.listKeys, c.listRuns)
		if res.list, err = runList(c); err != nil {
			return err
		}
	}
	if err := runScale(c, res); err != nil {
		return err
	}
	res.env.loadAfter = loadAvg()

	if c.only != "" {
		fmt.Print("\n" + res.partial(c.only))
		return nil
	}
	report := res.report()
	fmt.Print("\n" + report.text)
	if c.svg != "" {
		if err := os.WriteFile(c.svg, []byte(res.chart()), 0o644); err != nil {
			return err
		}
	}
	if c.out != "" {
		if err := os.WriteFile(c.out, []byte(res.markdown(report, chartLink(c.out, c.svg))), 0o644); err != nil {
			return err
		}
		fmt.Printf("\nwrote %s and %s\n", c.out, c.svg)
	}
	return checkClean(adm)
}

// checkClean fails the run if a lock outlived it: every library released
// what it took.
func checkClean(adm *redis.Client) error {
	time.Sleep(100 * time.Millisecond) // rueidislock deletes from a goroutine
	keys, err := adm.Keys(context.Background(), "*").Result()
	if err != nil {
		return err
	}
	// A waiting Client's liveness key in the fair line outlives the run
	// by at most its 3s life, its far key by its 90s; the CLI's last-run records are kept on
	// purpose, with their retention: the last run, the short history and
	// the last success; the index of the prefix's names stays for --list,
	// which prunes it.
	keys = slices.DeleteFunc(keys, func(k string) bool {
		ttl := adm.PTTL(context.Background(), k).Val()
		record := strings.HasSuffix(k, "}:last") || strings.HasSuffix(k, "}:runs") || strings.HasSuffix(k, "}:ok")
		return strings.Contains(k, "}:c:") && ttl > 0 && ttl <= 3*time.Second ||
			strings.Contains(k, "}:f:") && ttl > 0 && ttl <= 90*time.Second ||
			record && ttl > 0 || strings.HasSuffix(k, "}:names")
	})
	if len(keys) > 0 {
		return fmt.Errorf("keys left behind: %v", keys)
	}
	return nil
}

// chartLink is the chart's path as seen from the report's directory.
func chartLink(report, chart string) string {
	dir, err1 := filepath.Abs(filepath.Dir(report))
	svg, err2 := filepath.Abs(chart)
	rel, err3 := filepath.Rel(dir, svg)
	if err1 != nil || err2 != nil || err3 != nil {
		return chart
	}
	return filepath.ToSlash(rel)
}
