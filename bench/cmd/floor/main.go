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

func main() {
	if len(os.Args) < 3 {
		os.Exit(64)
	}
	conn, err := rawlock.Dial(rawlock.Addr())
	if err != nil {
		os.Exit(69)
	}
	l, err := conn.Acquire(os.Args[1])
	switch {
	case err == rawlock.ErrBusy:
		os.Exit(75)
	case err != nil:
		os.Exit(69)
	}
	code := 0
	path, err := exec.LookPath(os.Args[2])
	if err != nil {
		code = 127
	} else if p, err := os.StartProcess(path, os.Args[2:], &os.ProcAttr{Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}}); err != nil {
		code = 126
	} else if st, err := p.Wait(); err == nil {
		code = st.ExitCode()
	}
	if conn.Release(l) != nil {
		os.Exit(69)
	}
	os.Exit(code)
}
