package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The scale section: with-lock at the size of a fleet, on this one
// machine. The fair line with up to 1,000 waiting Clients
// (scale_waiters.go) and the herd of runs at the top of the minute
// (scale_herd.go). Each run has a redis-server of its own.

// scaleConfig is the scale section's part of the bench's flags.
type scaleConfig struct {
	waiters ints // waiting Clients per run of the fair line; none: skip
	laps    int  // turns of every waiter in the fair line's window
	rounds  int  // interleaved rounds of the fair line's sizes
	herd    ints // runs per herd; none: skip
	cluster bool // the fleet view on a Cluster (scale_cluster.go)
}

func (s *scaleConfig) flags() {
	s.waiters = ints{8, 64, 256, 1000}
	s.herd = ints{500, 1000, 2000}
	flag.Var(&s.waiters, "scale-waiters", "waiting Clients in the fair line's scale runs, comma-separated ('' to skip)")
	flag.IntVar(&s.laps, "scale-laps", 20, "turns of each waiter in the fair line's scale runs")
	flag.IntVar(&s.rounds, "scale-rounds", 3, "interleaved rounds of the fair line's scale runs (medians are reported)")
	flag.Var(&s.herd, "scale-herd", "with-lock runs of one name released at once, comma-separated ('' to skip)")
	flag.BoolVar(&s.cluster, "scale-cluster", true, "time --list on a Cluster of 3 masters beside 2,000,000 keys each")
}

// off turns the whole section off.
func (s *scaleConfig) off() { s.waiters, s.herd, s.cluster = nil, nil, false }

// scaleResult is what the scale section measured.
type scaleResult struct {
	waiters []waitersRuns // by size, as in the flag
	herds   []herdRun
	// redis-server's CPU per new connection (connectCost), plain and TLS.
	connPlain, connTLS time.Duration
	// The fewest waiters beside as many idle connections as the most
	// waiters hold, a run per round; empty if not run.
	idle waitersRuns
	// The fleet view on a Cluster; nil if not run.
	cluster *clusterList
}

// runScale runs the scale section into res.
func runScale(c config, res *results) error {
	s := c.scale
	if len(s.waiters) == 0 && len(s.herd) == 0 && !s.cluster {
		return nil
	}
	res.scale = &scaleResult{}
	if len(s.waiters) > 0 {
		fmt.Printf("scale: the fair line with %v waiting Clients, %d turns each, hold %s, %d rounds\n", s.waiters, s.laps, holdFor, s.rounds)
		res.scale.waiters = make([]waitersRuns, len(s.waiters))
	}
	// The sizes take turns, round after round, so that a minute's load on
	// this machine falls on all of them alike. The last of each round is
	// the fewest waiters again, beside as many idle connections as the
	// most waiters hold: Redis's cost per connection apart from the line's.
	idle := 0
	if len(s.waiters) > 1 {
		idle = 2 * (slices.Max(s.waiters) - slices.Min(s.waiters))
	}
	for range max(s.rounds, 1) {
		for i, n := range s.waiters {
			r, err := runWaiters(n, s.laps, 0)
			if err != nil {
				return fmt.Errorf("scale, %d waiters: %w", n, err)
			}
			fmt.Println("  " + r.String())
			res.scale.waiters[i] = append(res.scale.waiters[i], r)
		}
		if idle > 0 {
			few := slices.Min(s.waiters)
			r, err := runWaiters(few, s.laps, idle)
			if err != nil {
				return fmt.Errorf("scale, %d waiters beside idle connections: %w", few, err)
			}
			fmt.Println("  " + r.String())
			res.scale.idle = append(res.scale.idle, r)
		}
	}
	if len(s.herd) > 0 {
		if err := runHerds(c, res.scale); err != nil {
			return err
		}
	}
	if s.cluster {
		fmt.Printf("scale: --list on a Cluster of %d masters, %d locks beside %d keys each\n", clusterMasters, clusterLocks, clusterKeys)
		l, err := runClusterList(c.root)
		if err != nil {
			return fmt.Errorf("scale, the fleet view on a Cluster: %w", err)
		}
		res.scale.cluster = l
		fmt.Print(l.table())
	}
	return nil
}

// runHerds runs every herd way at every size, on two servers of their own
// (plain and TLS), with the with-lock binary built from the checkout.
func runHerds(c config, res *scaleResult) error {
	dir, err := os.MkdirTemp("", "with-lock-bench-herd-bin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	wl := filepath.Join(dir, "with-lock")
	if err := goBuild(c.root, wl, "./cmd/with-lock"); err != nil {
		return err
	}
	h, err := startHerdServers()
	if err != nil {
		return err
	}
	defer h.stop()
	if res.connPlain, err = connectCost(h, false, 300); err != nil {
		return err
	}
	if res.connTLS, err = connectCost(h, true, 300); err != nil {
		return err
	}
	fmt.Printf("scale: redis-server's CPU per new connection: %s plain, %s TLS\n", res.connPlain, res.connTLS)
	fmt.Printf("scale: herds of %v runs of one name, released together\n", c.scale.herd)
	seq := 0
	for _, n := range c.scale.herd {
		for _, w := range herdWays() {
			seq++
			r, err := runHerd(h, wl, w, n, seq)
			if err != nil {
				return fmt.Errorf("herd of %d, %s: %w", n, w.name, err)
			}
			fmt.Println("  " + r.String())
			res.herds = append(res.herds, r)
		}
	}
	return nil
}

// ints is a flag of comma-separated integers.
type ints []int

func (v *ints) String() string {
	var s []string
	for _, n := range *v {
		s = append(s, strconv.Itoa(n))
	}
	return strings.Join(s, ",")
}

func (v *ints) Set(s string) error {
	*v = nil
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' }) {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return fmt.Errorf("%q is not a positive number", f)
		}
		*v = append(*v, n)
	}
	return nil
}
