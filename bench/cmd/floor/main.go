// Command floor is the least a Go program can do for "with-lock <name>
// <command...>": one SET NX EX over a raw socket, fork/exec of the command,
// one EVAL of a compare-and-delete script, and the command's exit code. It
// has no flags, no timeouts, no signal handling and no error messages worth
// the name; it exists only as the benchmark's floor for the CLI.
//
//	FLOOR_REDIS=127.0.0.1:6379 floor <name> <command...>
//
// With FLOOR_GUARD=1 it also starts a guard before the command, as any
// wrapper must that promises the command dies with it: itself again,
// waiting on a pipe that only the parent holds open (the guarded floor).
package main

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
)

const release = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`

// guardEnv marks the guard: it waits for its pipe to say done, or close.
const guardEnv = "FLOOR_GUARD_CHILD"

func main() {
	if os.Getenv(guardEnv) != "" {
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		os.Exit(0)
	}
	if len(os.Args) < 3 {
		os.Exit(64)
	}
	addr := os.Getenv("FLOOR_REDIS")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		os.Exit(69)
	}
	rd := bufio.NewReader(conn)
	host, _ := os.Hostname()
	var b [16]byte
	_, _ = rand.Read(b[:])
	key := "lock:" + os.Args[1]
	token := host + ":" + strconv.Itoa(os.Getpid()) + ":" + hex.EncodeToString(b[:])

	if reply := do(conn, rd, "SET", key, token, "NX", "EX", "30"); reply != "+OK" {
		os.Exit(75)
	}
	var guard *os.File // the write end of the guard's pipe
	if os.Getenv("FLOOR_GUARD") != "" {
		guard = startGuard()
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
	if guard != nil {
		fmt.Fprintln(guard, "done")
	}
	do(conn, rd, "EVAL", release, "1", key, token)
	os.Exit(code)
}

// startGuard starts this program again as a guard and returns the write
// end of its pipe.
func startGuard() *os.File {
	r, w, err := os.Pipe()
	if err != nil {
		os.Exit(70)
	}
	self, err := os.Executable()
	if err != nil {
		os.Exit(70)
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		os.Exit(70)
	}
	p, err := os.StartProcess(self, []string{"floor-guard"}, &os.ProcAttr{
		Env: []string{guardEnv + "=1"}, Files: []*os.File{r, devnull, devnull}})
	if err != nil {
		os.Exit(70)
	}
	_ = p.Release() // nobody waits for it: it exits on its own once told
	r.Close()
	return w
}

// do sends one command in RESP and returns the first line of the reply.
func do(conn net.Conn, rd *bufio.Reader, args ...string) string {
	buf := fmt.Appendf(nil, "*%d\r\n", len(args))
	for _, a := range args {
		buf = fmt.Appendf(buf, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write(buf); err != nil {
		os.Exit(69)
	}
	line, err := rd.ReadString('\n')
	if err != nil {
		os.Exit(69)
	}
	return line[:len(line)-2]
}
