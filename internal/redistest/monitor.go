package redistest

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Monitor is a MONITOR connection to a Server: it sees every command the
// server runs, from any client, including the calls made by Lua scripts.
// It speaks RESP on a plain connection because go-redis cannot stream
// MONITOR replies through Do.
type Monitor struct {
	s    *Server
	conn net.Conn
	r    *bufio.Reader
	// rawQuotes: the server writes '"' and '\' inside an argument as they
	// are (Valkey 8.1) instead of escaping them as Redis's sdscatrepr does.
	rawQuotes bool
	// early holds the lines read before the dialect was known.
	early []string
}

// Command is one command seen by a Monitor.
type Command struct {
	Client string   // "<ip>:<port>" of the client, or "lua" for a script's call
	Args   []string // the command's name as sent (go-redis: lower case) and arguments
}

// String shows the command as MONITOR does, for failure messages.
func (c Command) String() string {
	q := make([]string, len(c.Args))
	for i, a := range c.Args {
		q[i] = strconv.Quote(a)
	}
	return "[" + c.Client + "] " + strings.Join(q, " ")
}

// monitorTimeout bounds every read and write of a Monitor.
const monitorTimeout = 10 * time.Second

// Monitor starts a MONITOR connection, closed with the test. Commands the
// server runs from now on are recorded.
func (s *Server) Monitor() *Monitor {
	s.t.Helper()
	conn, err := net.DialTimeout("tcp", s.Addr(), monitorTimeout)
	if err != nil {
		s.t.Fatalf("monitor: %v", err)
	}
	s.t.Cleanup(func() { _ = conn.Close() })
	m := &Monitor{s: s, conn: conn, r: bufio.NewReader(conn)}
	m.send("MONITOR")
	if line := m.readLine(); line != "+OK" {
		s.t.Fatalf("monitor: MONITOR answered %q", line)
	}
	m.rawQuotes = m.writesQuotesRaw()
	return m
}

// dialectProbe is an argument with a quote and a backslash, echoed once
// to learn how the server's MONITOR writes them.
const dialectProbe = `redistest-monitor-dialect-"-\`

// writesQuotesRaw echoes dialectProbe and reports whether MONITOR wrote
// its quote and backslash unescaped. Lines read before the probe's are
// kept for Commands.
func (m *Monitor) writesQuotesRaw() bool {
	m.s.t.Helper()
	m.sendAside("ECHO", dialectProbe)
	for {
		line := m.readLine()
		switch {
		case strings.HasSuffix(line, ` "`+dialectProbe+`"`):
			return true
		case strings.HasSuffix(line, ` "redistest-monitor-dialect-\"-\\"`):
			return false
		case strings.Contains(line, "redistest-monitor-dialect-"):
			m.s.t.Fatalf("monitor: the dialect probe reads %q", line)
		default:
			m.early = append(m.early, line)
		}
	}
}

// sendAside sends a command on a connection of its own, which it closes
// once the command is answered.
func (m *Monitor) sendAside(args ...string) {
	m.s.t.Helper()
	conn, err := net.DialTimeout("tcp", m.s.Addr(), monitorTimeout)
	if err != nil {
		m.s.t.Fatalf("monitor: %v", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(monitorTimeout))
	if _, err := conn.Write(resp(args...)); err != nil {
		m.s.t.Fatalf("monitor: %v", err)
	}
	if _, err := bufio.NewReader(conn).ReadString('\n'); err != nil {
		m.s.t.Fatalf("monitor: %v", err)
	}
}

// Commands returns the commands the server ran since the Monitor started or
// since the previous call. To know it has seen them all it sends a marker
// ECHO on a connection of its own and reads up to it; the marker is left
// out.
func (m *Monitor) Commands() []Command {
	m.s.t.Helper()
	var b [8]byte
	_, _ = rand.Read(b[:])
	marker := "redistest-monitor-marker-" + hex.EncodeToString(b[:])
	m.sendAside("ECHO", marker)
	var cmds []Command
	for {
		var line string
		if len(m.early) > 0 {
			line, m.early = m.early[0], m.early[1:]
		} else {
			line = m.readLine()
		}
		c, err := parseMonitorLine(line, m.rawQuotes)
		if err != nil {
			m.s.t.Fatalf("monitor: %v", err)
		}
		if len(c.Args) == 2 && strings.EqualFold(c.Args[0], "echo") && c.Args[1] == marker {
			return cmds
		}
		cmds = append(cmds, c)
	}
}

func (m *Monitor) send(args ...string) {
	m.s.t.Helper()
	_ = m.conn.SetWriteDeadline(time.Now().Add(monitorTimeout))
	if _, err := m.conn.Write(resp(args...)); err != nil {
		m.s.t.Fatalf("monitor: %v", err)
	}
}

func (m *Monitor) readLine() string {
	m.s.t.Helper()
	_ = m.conn.SetReadDeadline(time.Now().Add(monitorTimeout))
	line, err := m.r.ReadString('\n')
	if err != nil {
		m.s.t.Fatalf("monitor: read: %v", err)
	}
	return strings.TrimSuffix(line, "\r\n")
}

// resp encodes a command as a RESP array of bulk strings.
func resp(args ...string) []byte {
	b := fmt.Appendf(nil, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b
}

// parseMonitorLine parses `+<time> [<db> <client>] "arg" "arg"...`, with
// quotes and backslashes escaped in the arguments, or as they are when
// rawQuotes.
func parseMonitorLine(line string, rawQuotes bool) (Command, error) {
	open := strings.IndexByte(line, '[')
	end := strings.Index(line, "] ")
	if !strings.HasPrefix(line, "+") || open < 0 || end < open {
		return Command{}, fmt.Errorf("unexpected line %q", line)
	}
	_, client, ok := strings.Cut(line[open+1:end], " ")
	if !ok {
		return Command{}, fmt.Errorf("no client in %q", line)
	}
	args, err := unquoteArgs(line[end+2:], rawQuotes)
	if err != nil {
		return Command{}, fmt.Errorf("%w in %q", err, line)
	}
	return Command{Client: client, Args: args}, nil
}

// unquoteArgs splits `"a" "b\n"` as Redis writes them (sdscatrepr). With
// rawQuotes, as Valkey 8.1 writes them: control bytes still escaped, but
// '"' and '\' as they are, so an argument ends at the quote before ` "`
// or the end of the line, and a backslash is an escape only where one of
// sdscatrepr's escapes follows it. That reading is exact for arguments
// that hold neither `" "` nor a backslash before one of n, r, t, a, b or
// x: with-lock's commands, scripts and keys hold neither
// (TestScriptsReadExactlyThroughEveryMonitor).
func unquoteArgs(s string, rawQuotes bool) ([]string, error) {
	var args []string
	for i := 0; i < len(s); {
		if s[i] == ' ' {
			i++
			continue
		}
		if s[i] != '"' {
			return nil, fmt.Errorf("argument not quoted at %d", i)
		}
		var arg []byte
		for i++; ; i++ {
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated argument")
			}
			c := s[i]
			if c == '"' && (!rawQuotes || i+1 == len(s) || strings.HasPrefix(s[i+1:], ` "`)) {
				i++
				break
			}
			if c != '\\' || rawQuotes && (i+1 == len(s) || !strings.ContainsRune("nrtabx", rune(s[i+1]))) {
				arg = append(arg, c)
				continue
			}
			if i+1 >= len(s) {
				return nil, fmt.Errorf("dangling backslash")
			}
			i++
			switch s[i] {
			case 'n':
				arg = append(arg, '\n')
			case 'r':
				arg = append(arg, '\r')
			case 't':
				arg = append(arg, '\t')
			case 'a':
				arg = append(arg, '\a')
			case 'b':
				arg = append(arg, '\b')
			case 'x':
				if i+2 >= len(s) {
					return nil, fmt.Errorf("short \\x escape")
				}
				v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
				if err != nil {
					return nil, fmt.Errorf("bad \\x escape: %w", err)
				}
				arg = append(arg, byte(v))
				i += 2
			default: // \\ and \"
				arg = append(arg, s[i])
			}
		}
		args = append(args, string(arg))
	}
	return args, nil
}
