// Package floorguard is the guard of the benchmark's guarded floors
// (bench/cmd/floor-guarded, bench/cmd/floor-goredis): the least a wrapper
// must add to promise that the command dies with it, even when the wrapper
// is killed with SIGKILL. Run starts the program itself again as the guard,
// in a new process group that the command then joins, with the read end of
// a pipe whose write end only the wrapper holds. When the command has
// ended the wrapper writes "done"; if the wrapper dies first the kernel
// closes the pipe, the guard reads EOF without "done" and kills its group,
// the command's tree with it.
package floorguard

import (
	"io"
	"os"
	"os/exec"
	"syscall"
)

// guardArg as the only argument makes the program the guard.
const guardArg = "-guard"

// BeGuard makes this process the guard, and never returns, when it was
// started as one; a floor's main calls it first.
func BeGuard() {
	if len(os.Args) != 2 || os.Args[1] != guardArg {
		return
	}
	b, _ := io.ReadAll(os.Stdin)
	if string(b) == "done\n" {
		os.Exit(0)
	}
	_ = syscall.Kill(0, syscall.SIGKILL)
	os.Exit(1)
}

// Run starts the guard, then the command in the guard's group, waits for
// the command and tells the guard to stand down. It returns the command's
// exit code (127 not found, 126 not started, 71 no guard).
func Run(argv []string) int {
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
