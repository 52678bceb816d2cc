// Package rawlock is the least a Go program needs to take and release a
// lock the way with-lock does: one SET NX EX and one EVAL of a
// compare-and-delete script, in RESP over a raw socket, with no client
// library. It exists for the benchmark's floor programs (bench/cmd/floor,
// bench/cmd/floor-guarded), which must cost as little as Go allows.
package rawlock

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
)

const release = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`

// Addr is where the floors find Redis: $FLOOR_REDIS, else 127.0.0.1:6379.
func Addr() string {
	if a := os.Getenv("FLOOR_REDIS"); a != "" {
		return a
	}
	return "127.0.0.1:6379"
}

// Conn is one connection to Redis.
type Conn struct {
	c  net.Conn
	rd *bufio.Reader
}

// Dial connects to addr.
func Dial(addr string) (*Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &Conn{c: c, rd: bufio.NewReader(c)}, nil
}

// Lock is a lock taken by Acquire.
type Lock struct{ key, token string }

// ErrBusy is Acquire's error when another holder has the lock.
var ErrBusy = errors.New("lock is busy")

// Acquire takes lock:<name> for 30 s with a token like with-lock's
// (host:pid:random).
func (c *Conn) Acquire(name string) (Lock, error) {
	host, _ := os.Hostname()
	var b [16]byte
	_, _ = rand.Read(b[:])
	l := Lock{key: "lock:" + name, token: host + ":" + strconv.Itoa(os.Getpid()) + ":" + hex.EncodeToString(b[:])}
	reply, err := c.do("SET", l.key, l.token, "NX", "EX", "30")
	if err != nil {
		return Lock{}, err
	}
	if reply != "+OK" {
		return Lock{}, ErrBusy
	}
	return l, nil
}

// Release deletes the lock if it still has l's token.
func (c *Conn) Release(l Lock) error {
	_, err := c.do("EVAL", release, "1", l.key, l.token)
	return err
}

// do sends one command in RESP and returns the first line of the reply.
func (c *Conn) do(args ...string) (string, error) {
	buf := fmt.Appendf(nil, "*%d\r\n", len(args))
	for _, a := range args {
		buf = fmt.Appendf(buf, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.c.Write(buf); err != nil {
		return "", err
	}
	line, err := c.rd.ReadString('\n')
	if err != nil {
		return "", err
	}
	return line[:len(line)-2], nil
}

// Main is a floor's whole life for "<prog> <name> <command...>": take
// lock:<name> on Addr, run the command with run, release, and exit with
// the command's code; 64 without arguments, 75 when busy, 69 when Redis
// fails.
func Main(run func(argv []string) int) {
	if len(os.Args) < 3 {
		os.Exit(64)
	}
	conn, err := Dial(Addr())
	if err != nil {
		os.Exit(69)
	}
	l, err := conn.Acquire(os.Args[1])
	switch {
	case err == ErrBusy:
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
