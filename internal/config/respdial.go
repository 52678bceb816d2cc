package config

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
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
		return &respConn{Conn: c, network: network, addr: addr, timeout: timeout}, nil
	}
}

// respTypes are the bytes a RESP2 or RESP3 reply can open with.
const respTypes = "+-:$*_,#!=(%~>|"

// respConn is a connection to what ought to be Redis. A first reply that
// does not open with a RESP type byte comes from something else at the
// address (an HTTP server, SSH, a proxy's error page), which go-redis would
// report as "redis: invalid reply" or "can't parse map reply", naming
// neither the address nor the fix. A server that hangs up before its first
// byte may be a TLS port, which takes our plain HELLO for a broken
// handshake: go-redis would say "EOF", as if Redis were down.
type respConn struct {
	net.Conn
	network string
	addr    string
	timeout time.Duration // bounds the check for TLS after a hang-up
	resp    bool          // the first reply was RESP
	err     error         // or it was not: every read says so
}

func (c *respConn) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.Conn.Read(p)
	switch {
	case c.resp:
	case n > 0 && isTLSRecord(p[:n]):
		c.err = tlsPortError(c.addr)
		return 0, c.err
	case n > 0 && !strings.ContainsRune(respTypes, rune(p[0])):
		c.err = notRedisError(c.addr, p[:n])
		return 0, c.err
	case n > 0:
		c.resp = true
	case hungUp(err) && speaksTLS(c.network, c.addr, c.timeout):
		c.err = tlsPortError(c.addr)
		return 0, c.err
	}
	return n, err
}

// hungUp reports whether a read's err is the server closing or resetting
// the connection.
func hungUp(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

// isTLSRecord reports whether b opens like a TLS alert record: the answer
// of a TLS server that could not make sense of our plain HELLO and says so
// (Redis itself just hangs up).
func isTLSRecord(b []byte) bool {
	return len(b) >= 3 && b[0] == 0x15 && b[1] == 3 && b[2] <= 4
}

// speaksTLS reports whether a TLS server listens at addr: a handshake on a
// connection of its own, which checks no certificate (it only asks what
// the port speaks), gets a TLS answer. Only a connection that failed
// already pays for it.
func speaksTLS(network, addr string, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	raw, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return false
	}
	defer raw.Close()
	conn := tls.Client(raw, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // nothing is sent over it
	err = conn.HandshakeContext(ctx)
	var op *net.OpError
	// An alert, such as a demand for a client certificate, is TLS too.
	return err == nil || errors.As(err, &op) && op.Op == "remote error"
}

func tlsPortError(addr string) error {
	return &configError{msg: addr + " speaks TLS, not plain Redis: use rediss://, not redis://"}
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
	return &configError{msg: fmt.Sprintf("%s is not Redis (it answered %q): check the port", addr, line)}
}

// configError is ErrConfig for what a connection found: a server that is
// not Redis, or not the Redis the settings describe. It matches ErrConfig
// by an Is method, not by wrapping it: go-redis unwraps the error of a
// connection's handshake once, and a wrapper would reach the caller as the
// bare sentinel, without its words.
type configError struct{ msg string }

func (e *configError) Error() string        { return ErrConfig.Error() + ": " + e.msg }
func (e *configError) Is(target error) bool { return target == ErrConfig }
