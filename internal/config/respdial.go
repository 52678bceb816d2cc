package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"
)

// plainDialer returns the go-redis Dialer for redis:// URLs: go-redis's own
// (a dial bounded by timeout, keep-alive probes every 5 minutes), with each
// connection's first reply checked for being Redis's protocol at all.
func plainDialer(timeout time.Duration) func(context.Context, string, string) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout, KeepAlive: 5 * time.Minute}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &respConn{Conn: c, addr: addr}, nil
	}
}

// respTypes are the bytes a RESP2 or RESP3 reply can open with.
const respTypes = "+-:$*_,#!=(%~>|"

// respConn is a connection to what ought to be Redis. A first reply that
// does not open with a RESP type byte comes from something else at the
// address (an HTTP server, SSH, a proxy's error page), which go-redis would
// report as "redis: invalid reply" or "can't parse map reply", naming
// neither the address nor the fix.
type respConn struct {
	net.Conn
	addr string
	resp bool  // the first reply was RESP
	err  error // or it was not: every read says so
}

func (c *respConn) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.Conn.Read(p)
	if !c.resp && n > 0 {
		if !strings.ContainsRune(respTypes, rune(p[0])) {
			c.err = notRedisError(c.addr, p[:n])
			return 0, c.err
		}
		c.resp = true
	}
	return n, err
}

// SyscallConn lets go-redis's pool check an idle connection's socket as it
// does a bare TCP connection's: a Redis that closed it is noticed before
// the connection is used.
func (c *respConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.ErrUnsupported
}

// notRedisError says what answered at addr, by the first line it sent.
func notRedisError(addr string, answer []byte) error {
	line, _, _ := bytes.Cut(answer, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	if len(line) > 40 {
		line = line[:40]
	}
	return &notRedis{msg: fmt.Sprintf("%s is not Redis (it answered %q): check the port", addr, line)}
}

// notRedis is ErrConfig for a server that is not Redis. It matches
// ErrConfig by an Is method, not by wrapping it: go-redis unwraps the
// error of a connection's handshake once, and a wrapper would reach the
// caller as the bare sentinel, without its words.
type notRedis struct{ msg string }

func (e *notRedis) Error() string        { return ErrConfig.Error() + ": " + e.msg }
func (e *notRedis) Is(target error) bool { return target == ErrConfig }
