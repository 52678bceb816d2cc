package config

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"
)

// probeAfter is how long a TLS handshake may go unanswered before the
// dialer checks whether the port speaks plain Redis: a second, plain
// connection asks it. A plain Redis takes the ClientHello for a half-typed
// inline command and waits for the rest; the handshake would hang until
// --redis-timeout, then fail as if Redis were down. A TLS Redis answers a
// handshake as soon as it accepts the connection, so the one that leaves
// handshakes unanswered for long is one with a queue of them, as at the
// top of the minute (its one thread spends about 1 ms on each), and to it
// every probe is one more connection to accept. So the probe waits a
// second, by when a queue a host is in is mostly served, or a third of
// the timeout if that is shorter, so that a misconfigured URL is still
// said before it.
func probeAfter(timeout time.Duration) time.Duration {
	return min(time.Second, timeout/3)
}

// tlsDialer returns a go-redis Dialer for rediss:// that connects and
// completes the TLS handshake with cfg, and recognises a port that speaks
// plain Redis instead, promptly, as a configuration error. go-redis adds
// TLS only in its own default dialer, so this one does the handshake
// itself; set it on every client (plain, Sentinel, Cluster) that has a
// TLSConfig. An empty cfg.ServerName verifies each address's own host.
//
// An address found not to speak TLS is not dialled again: the clean-up
// of a failed acquisition, which cannot know that its SET was never sent,
// gets the same error at once instead of waiting for another probe.
func tlsDialer(cfg *tls.Config, timeout time.Duration) func(context.Context, string, string) (net.Conn, error) {
	var notTLS sync.Map // address → its ErrConfig
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if err, ok := notTLS.Load(addr); ok {
			return nil, err.(error)
		}
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
		if err := handshake(ctx, conn, network, addr, probeAfter(timeout), cfg.RootCAs != nil); err != nil {
			_ = raw.Close()
			if errors.Is(err, ErrConfig) {
				notTLS.Store(addr, err)
			}
			return nil, err
		}
		return conn, nil
	}
}

// handshake runs conn's TLS handshake. If it has not finished after
// probeIn, a second, plain connection to addr asks whether a plain
// Redis listens there; if so the handshake is abandoned at once. ownCA
// says the certificate is verified against --tls-cacert's CA, not the
// system's.
func handshake(ctx context.Context, conn *tls.Conn, network, addr string, probeIn time.Duration, ownCA bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- conn.HandshakeContext(ctx) }()
	probe := time.NewTimer(probeIn)
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
			var unknown x509.UnknownAuthorityError
			if errors.As(err, &unknown) {
				// Go's words name x509, not the setting that mends it.
				what := "a certificate authority this host trusts"
				if ownCA {
					what = "the CA of --tls-cacert"
				}
				return fmt.Errorf("%w: %s's certificate is not signed by %s (%w): give the CA that signed it with --tls-cacert",
					ErrConfig, addr, what, err)
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
