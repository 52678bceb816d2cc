package config

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// plainProbeAfter is how long a TLS handshake may go unanswered before
// the dialer checks whether the port speaks plain Redis. A plain Redis
// takes the ClientHello for a half-typed inline command and waits for the
// rest; the handshake would hang until --redis-timeout, then fail as if
// Redis were down. A real TLS server answers well within this even across
// a continent, and probing it costs only one short extra connection.
const plainProbeAfter = 200 * time.Millisecond

// tlsDialer returns a go-redis Dialer for rediss:// that connects and
// completes the TLS handshake with cfg, and recognises a port that speaks
// plain Redis instead, promptly, as a configuration error. go-redis adds
// TLS only in its own default dialer, so this one does the handshake
// itself; set it on every client (plain, Sentinel, Cluster) that has a
// TLSConfig. An empty cfg.ServerName verifies each address's own host.
func tlsDialer(cfg *tls.Config, timeout time.Duration) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		raw, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		conf := cfg
		if conf.ServerName == "" {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				host = addr
			}
			conf = cfg.Clone()
			conf.ServerName = host
		}
		conn := tls.Client(raw, conf)
		if err := handshake(ctx, conn, network, addr); err != nil {
			_ = raw.Close()
			return nil, err
		}
		return conn, nil
	}
}

// handshake runs conn's TLS handshake. If it has not finished after
// plainProbeAfter, a second, plain connection to addr asks whether a
// plain Redis listens there; if so the handshake is abandoned at once.
func handshake(ctx context.Context, conn *tls.Conn, network, addr string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- conn.HandshakeContext(ctx) }()
	probe := time.NewTimer(plainProbeAfter)
	defer probe.Stop()
	var plain chan bool // nil until the probe runs, and after it said no
	for {
		select {
		case err := <-done:
			var header tls.RecordHeaderError
			if errors.As(err, &header) {
				// The server's first bytes were not a TLS record. A plain
				// Redis answers a ClientHello that happens to hold a line
				// break with an error reply: "-ERR ...".
				if isRESP(header.RecordHeader[:]) {
					return plainRedisError(addr)
				}
				return fmt.Errorf("%w: %s does not speak TLS (%w): check the port, or use redis://", ErrConfig, addr, err)
			}
			return err
		case <-probe.C:
			plain = make(chan bool, 1)
			go func() { plain <- speaksPlainRedis(ctx, network, addr) }()
		case yes := <-plain:
			plain = nil
			if yes {
				cancel()
				<-done
				return plainRedisError(addr)
			}
		}
	}
}

func plainRedisError(addr string) error {
	return fmt.Errorf("%w: %s speaks plain Redis, not TLS: use redis://, not rediss://", ErrConfig, addr)
}

// speaksPlainRedis reports whether a plain Redis listens on addr: it
// answers PING with a RESP reply, +PONG, or an error such as -NOAUTH when
// it wants a password. A TLS server answers plaintext with an alert or
// by closing the connection.
func speaksPlainRedis(ctx context.Context, network, addr string) bool {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return false
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReaderSize(c, 256).ReadSlice('\n')
	return err == nil && isRESP(line) && strings.HasSuffix(string(line), "\r\n")
}

// isRESP reports whether b starts like a RESP simple string or error.
func isRESP(b []byte) bool {
	return len(b) > 1 && (b[0] == '+' || b[0] == '-') && b[1] >= 'A' && b[1] <= 'Z'
}
