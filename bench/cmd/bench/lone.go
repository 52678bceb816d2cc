package main

import (
	"fmt"
	"slices"
)

// One goroutine, with-lock beside the floors, closer than the rounds of the
// uncontended part can say: blocks of pairs alternating between with-lock
// and one other locker, in one process, the ratio and the CPU difference
// taken for each adjacent pair of blocks. What a lone caller pays for
// with-lock's own code (against its commands sent by hand), for its
// commands (against the raw floor) and for go-redis's pool (against its
// commands on held connections).

const (
	loneBlocks = 30   // blocks of each locker, alternating
	lonePairs  = 3000 // lock+unlock pairs in a block
)

// runLone prints, for the raw floor, its copy sending with-lock's commands
// and that copy on held connections, with-lock's pairs/s
// over it and the client CPU per pair with-lock spends beyond it.
func runLone(lockers map[string]locker) error {
	ours := lockers[oursName]
	for _, name := range []string{"raw go-redis floor", "raw go-redis floor, with-lock's commands", "raw go-redis floor, with-lock's commands, held connections"} {
		other := lockers[name]
		for _, l := range []locker{ours, other} { // warm-up: pools filled, scripts loaded
			if _, err := runUncontended(l, nil, 1, lonePairs); err != nil {
				return err
			}
		}
		var ratios, extraCPU []float64
		for i := range loneBlocks {
			pair := []locker{ours, other}
			if i%2 == 1 {
				slices.Reverse(pair)
			}
			var u [2]uncontended
			for j, l := range pair {
				var err error
				if u[j], err = runUncontended(l, nil, 1, lonePairs); err != nil {
					return fmt.Errorf("%s, one goroutine: %w", name, err)
				}
			}
			if i%2 == 1 {
				u[0], u[1] = u[1], u[0]
			}
			ratios = append(ratios, u[1].usPerPair/u[0].usPerPair)
			extraCPU = append(extraCPU, u[0].clientCPU-u[1].clientCPU)
		}
		slices.Sort(ratios)
		slices.Sort(extraCPU)
		q := func(s []float64, f float64) float64 { return s[int(f*float64(len(s)-1))] }
		fmt.Printf("with-lock over %s, one goroutine, %d alternating blocks of %d pairs: pairs/s %.3f× (quartiles %.3f–%.3f); client CPU per pair %+.2f µs (quartiles %+.2f–%+.2f)\n",
			name, loneBlocks, lonePairs, q(ratios, 0.5), q(ratios, 0.25), q(ratios, 0.75), q(extraCPU, 0.5), q(extraCPU, 0.25), q(extraCPU, 0.75))
	}
	return nil
}
