// Command floor-guarded is bench/cmd/floor plus the least a wrapper must
// add to promise that the command dies with it, even when the wrapper is
// killed with SIGKILL: a guard process. After SET NX EX it starts itself
// again as the guard, in a new process group that the command then joins,
// with the read end of a pipe whose write end only the wrapper holds. When
// the command has ended the wrapper writes "done" and exits; if the wrapper
// dies first the kernel closes the pipe, the guard reads EOF without
// "done" and kills its group, the command's tree with it.
//
// It is the benchmark's "guarded floor" for the CLI (issue 16): with-lock
// keeps such a guard, so this, not the bare floor, is the least it can cost.
//
//	FLOOR_REDIS=127.0.0.1:6379 floor-guarded <name> <command...>
package main

import (
	"io"
	"os"
	"os/exec"
	"syscall"

	"github.com/with-lock/with-lock/bench/internal/rawlock"
)

// guardArg as the only argument makes the program the guard.
const guardArg = "-guard"

func main() {
	if len(os.Args) == 2 && os.Args[1] == guardArg {
		guard()
	}
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
	code := run(os.Args[2:])
	if conn.Release(l) != nil {
		os.Exit(69)
	}
	os.Exit(code)
}

// run starts the guard, then the command in the guard's group, waits for
// the command and tells the guard to stand down. It returns the command's
// exit code (127 not found, 126 not started, 71 no guard).
func run(argv []string) int {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return 127
	}
	self, err := os.Executable()
	if err != nil {
		return 71
	}
	r, w, err := os.Pipe()
	if err != nil {
		return 71
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return 71
	}
	// Nobody waits for the guard: it leaves on its own once told, and
	// init reaps it after we exit.
	g, err := os.StartProcess(self, []string{"floor-guard", guardArg}, &os.ProcAttr{
		Files: []*os.File{r, null, null},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	r.Close()
	null.Close()
	if err != nil {
		return 71
	}
	p, err := os.StartProcess(path, argv, &os.ProcAttr{
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		Sys:   &syscall.SysProcAttr{Setpgid: true, Pgid: g.Pid},
	})
	if err != nil {
		w.Write([]byte("done\n"))
		return 126
	}
	code := 0
	if st, err := p.Wait(); err == nil {
		code = st.ExitCode()
	}
	_, _ = w.Write([]byte("done\n"))
	w.Close()
	return code
}

// guard waits for the wrapper's word on stdin: "done" means leave; EOF
// without it means the wrapper died, and the guard kills its own process
// group, where the command and its children are.
func guard() {
	b, _ := io.ReadAll(os.Stdin)
	if string(b) == "done\n" {
		os.Exit(0)
	}
	_ = syscall.Kill(0, syscall.SIGKILL)
	os.Exit(1)
}
