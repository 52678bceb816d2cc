// Command floor is the least a Go program can do for "with-lock <name>
// <command...>": one SET NX EX over a raw socket, fork/exec of the command,
// one EVAL of a compare-and-delete script, and the command's exit code. It
// has no flags, no timeouts, no signal handling and no error messages worth
// the name; it exists only as the benchmark's floor for the CLI.
//
//	FLOOR_REDIS=127.0.0.1:6379 floor <name> <command...>
//
// Built with the runtime settings with-lock's main has (see there), so that
// they are not what the ratio measures.
//
//go:debug updatemaxprocs=0
//go:debug decoratemappings=0
package main

import (
	"os"
	"os/exec"

	"github.com/with-lock/with-lock/bench/internal/rawlock"
)

func main() { rawlock.Main(run) }

// run starts the command and returns its exit code (127 not found, 126
// not started).
func run(argv []string) int {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return 127
	}
	p, err := os.StartProcess(path, argv, &os.ProcAttr{Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}})
	if err != nil {
		return 126
	}
	if st, err := p.Wait(); err == nil {
		return st.ExitCode()
	}
	return 0
}
