// Command floor-guarded is bench/cmd/floor plus the least a wrapper must
// add to promise that the command dies with it, even when the wrapper is
// killed with SIGKILL: a guard process (bench/internal/floorguard).
//
// It is the benchmark's "guarded floor" for the CLI: with-lock keeps such
// a guard, so this, not the bare floor, is the least it can cost.
//
//	FLOOR_REDIS=127.0.0.1:6379 floor-guarded <name> <command...>
//
// Built with the runtime settings with-lock's main has (see there), so that
// they are not what the ratio measures.
//
//go:debug updatemaxprocs=0
//go:debug decoratemappings=0
package main

import (
	"github.com/with-lock/with-lock/bench/internal/floorguard"
	"github.com/with-lock/with-lock/bench/internal/rawlock"
)

func main() {
	floorguard.BeGuard()
	rawlock.Main(floorguard.Run)
}
