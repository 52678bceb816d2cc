package config

import (
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A connection to a redis:// address passes Redis's replies through as they
// are, and turns a first reply that is not RESP into ErrConfig naming the
// address and the answer's first line, or that it speaks TLS: every read
// after says the same.
func TestPlainConnectionTellsRedisFromSomethingElse(t *testing.T) {
	type conversation struct {
		name    string
		replies []string // what the server sends, one write each
		err     string   // "": the replies come through unchanged
	}
	var cases []conversation
	for _, b := range respTypes {
		cases = append(cases, conversation{"a reply of type " + string(b), []string{string(b) + "1\r\n"}, ""})
	}
	for _, tc := range append(cases, []conversation{
		{"a RESP3 map", []string{"%7\r\n"}, ""},
		{"an error reply", []string{"-ERR unknown command 'HELLO'\r\n"}, ""},
		{"later replies are not checked", []string{"$5\r\n", "hello\r\n"}, ""},
		{"a web server", []string{"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n"},
			`bad configuration: test:1 is not Redis (it answered "HTTP/1.1 400 Bad Request"): check the port`},
		{"a long first line", []string{strings.Repeat("x", 100)},
			`(it answered "` + strings.Repeat("x", 40) + `")`},
		{"a TLS alert", []string{"\x15\x03\x01\x00\x02\x02\x46"},
			"bad configuration: test:1 speaks TLS, not plain Redis: use rediss://, not redis://"},
		{"a hang-up where no TLS server listens", nil, ""},
	}...) {
		t.Run(tc.name, func(t *testing.T) {
			client, server := net.Pipe()
			t.Cleanup(func() { client.Close(); server.Close() })
			go func() {
				for _, r := range tc.replies {
					if _, err := io.WriteString(server, r); err != nil {
						return
					}
				}
				server.Close()
			}()
			c := &respConn{Conn: client, addr: "test:1"}
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			got, err := io.ReadAll(c)
			if tc.err == "" {
				if want := strings.Join(tc.replies, ""); err != nil || string(got) != want {
					t.Errorf("read %q, %v; want %q, nil", got, err, want)
				}
				return
			}
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.err) || len(got) != 0 {
				t.Errorf("read %q, %v; want nothing and ErrConfig saying %q", got, err, tc.err)
			}
			if _, again := c.Read(make([]byte, 8)); again != err {
				t.Errorf("the next read returned %v, want the same error", again)
			}
		})
	}
}

// go-redis checks an idle pooled connection's socket before reusing it only
// when the connection hands it over (syscall.Conn): the plain dialer's
// connections must, as a bare TCP connection does.
func TestPlainConnectionLendsItsSocketToPoolChecks(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	c, err := plainDialer(time.Second)(t.Context(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	sc, ok := c.(syscall.Conn)
	if !ok {
		t.Fatalf("%T is not a syscall.Conn", c)
	}
	if _, err := sc.SyscallConn(); err != nil {
		t.Errorf("SyscallConn: %v", err)
	}
}
