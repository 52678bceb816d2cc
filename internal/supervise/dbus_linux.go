package supervise

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// The little of D-Bus that with-lock speaks, to ask systemd for a scope:
// a connection to a manager's private socket (no bus daemon, no Hello),
// the EXTERNAL authentication by uid, one method call and its reply. A
// client module (godbus) would bring a megabyte of code and its package
// initialisation to every run for these two hundred lines.

// busTimeout bounds a connection's set-up and each call: a manager that
// does not answer must not hold the job back for long.
const busTimeout = 5 * time.Second

// busConn is a connection to a systemd manager's private socket.
type busConn struct {
	c      *net.UnixConn
	r      *bufio.Reader
	serial uint32
}

// busError is an error a manager replied with.
type busError struct{ name, msg string }

func (e *busError) Error() string { return e.name + ": " + e.msg }

// dialBus connects to the manager at path and authenticates as this
// process's user.
func dialBus(path string) (*busConn, error) {
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(busTimeout))
	b := &busConn{c: c, r: bufio.NewReader(c)}
	uid := hex.EncodeToString([]byte(strconv.Itoa(os.Geteuid())))
	if _, err := c.Write([]byte("\x00AUTH EXTERNAL " + uid + "\r\n")); err != nil {
		c.Close()
		return nil, err
	}
	line, err := b.r.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "OK ") {
		c.Close()
		return nil, fmt.Errorf("authentication refused: %q %v", strings.TrimSpace(line), err)
	}
	if _, err := c.Write([]byte("BEGIN\r\n")); err != nil {
		c.Close()
		return nil, err
	}
	return b, nil
}

func (b *busConn) Close() error { return b.c.Close() }

// busEnc encodes D-Bus's wire format, little-endian. Alignment counts from
// the buffer's start, which a body also starts at (it follows the header
// at a multiple of 8).
type busEnc struct{ b []byte }

func (e *busEnc) align(n int) {
	for len(e.b)%n != 0 {
		e.b = append(e.b, 0)
	}
}

func (e *busEnc) u32(v uint32) { e.align(4); e.b = binary.LittleEndian.AppendUint32(e.b, v) }
func (e *busEnc) u64(v uint64) { e.align(8); e.b = binary.LittleEndian.AppendUint64(e.b, v) }

func (e *busEnc) str(s string) {
	e.u32(uint32(len(s)))
	e.b = append(append(e.b, s...), 0)
}

func (e *busEnc) sig(s string) { e.b = append(append(append(e.b, byte(len(s))), s...), 0) }

// array encodes an array whose elements, aligned to elemAlign, elems
// writes.
func (e *busEnc) array(elemAlign int, elems func()) {
	e.align(4)
	at := len(e.b)
	e.b = append(e.b, 0, 0, 0, 0)
	e.align(elemAlign)
	start := len(e.b)
	elems()
	binary.LittleEndian.PutUint32(e.b[at:], uint32(len(e.b)-start))
}

// busValue is a variant's value: string, bool, uint64 or []uint32.
type busValue any

// variant encodes v as a variant.
func (e *busEnc) variant(v busValue) {
	switch v := v.(type) {
	case string:
		e.sig("s")
		e.str(v)
	case bool:
		e.sig("b")
		e.u32(map[bool]uint32{false: 0, true: 1}[v])
	case uint64:
		e.sig("t")
		e.u64(v)
	case []uint32:
		e.sig("au")
		e.array(4, func() {
			for _, x := range v {
				e.u32(x)
			}
		})
	default:
		panic(fmt.Sprintf("supervise: no D-Bus encoding for %T", v))
	}
}

// Message types and header fields.
const (
	busMethodCall   = 1
	busMethodReturn = 2
	busErrorReply   = 3
	busFieldPath    = 1
	busFieldIface   = 2
	busFieldMember  = 3
	busFieldErrName = 4
	busFieldReplyTo = 5
	busFieldDest    = 6
	busFieldSig     = 8
)

// call calls method member of interface iface on object path of systemd,
// with body (of signature sig), and waits for its reply.
func (b *busConn) call(path, iface, member, sig string, body []byte) error {
	b.serial++
	var e busEnc
	e.b = append(e.b, 'l', busMethodCall, 0, 1)
	e.u32(uint32(len(body)))
	e.u32(b.serial)
	field := func(code byte, typ, val string) {
		e.align(8)
		e.b = append(e.b, code)
		e.sig(typ)
		if typ == "g" {
			e.sig(val)
		} else {
			e.str(val)
		}
	}
	e.array(8, func() {
		field(busFieldPath, "o", path)
		field(busFieldIface, "s", iface)
		field(busFieldMember, "s", member)
		field(busFieldDest, "s", "org.freedesktop.systemd1")
		field(busFieldSig, "g", sig)
	})
	e.align(8)
	_ = b.c.SetDeadline(time.Now().Add(busTimeout))
	if _, err := b.c.Write(append(e.b, body...)); err != nil {
		return err
	}
	for {
		typ, replyTo, errName, body, err := b.read()
		if err != nil {
			return err
		}
		if replyTo != b.serial || (typ != busMethodReturn && typ != busErrorReply) {
			continue // a signal, or another call's reply
		}
		if typ == busMethodReturn {
			return nil
		}
		return &busError{name: errName, msg: firstString(body)}
	}
}

// read reads one message: its type, the serial it replies to, its error
// name, and its body.
func (b *busConn) read() (typ byte, replyTo uint32, errName string, body []byte, err error) {
	var fixed [16]byte
	if _, err = io.ReadFull(b.r, fixed[:]); err != nil {
		return
	}
	var order binary.ByteOrder = binary.LittleEndian
	if fixed[0] == 'B' {
		order = binary.BigEndian
	}
	typ = fixed[1]
	bodyLen, fieldsLen := order.Uint32(fixed[4:]), order.Uint32(fixed[12:])
	if bodyLen > 1<<20 || fieldsLen > 1<<16 {
		return 0, 0, "", nil, errors.New("a D-Bus message too large to be systemd's reply")
	}
	headLen := (16 + int(fieldsLen) + 7) &^ 7
	rest := make([]byte, headLen-16+int(bodyLen))
	if _, err = io.ReadFull(b.r, rest); err != nil {
		return
	}
	fields := append(fixed[:], rest[:fieldsLen]...)
	d := busDec{b: fields, i: 16, order: order}
	for d.i < len(fields) {
		d.align(8)
		code := d.byte()
		sig := d.sig()
		switch sig {
		case "u":
			v := d.u32()
			if code == busFieldReplyTo {
				replyTo = v
			}
		case "s", "o":
			v := d.str()
			if code == busFieldErrName {
				errName = v
			}
		case "g":
			d.sig()
		default:
			return 0, 0, "", nil, fmt.Errorf("a D-Bus header field of type %q", sig)
		}
		if d.err != nil {
			return 0, 0, "", nil, d.err
		}
	}
	return typ, replyTo, errName, rest[headLen-16:], nil
}

// busDec decodes the few types of header fields and of an error's
// message.
type busDec struct {
	b     []byte
	i     int
	order binary.ByteOrder
	err   error
}

func (d *busDec) need(n int) bool {
	if d.err == nil && d.i+n > len(d.b) {
		d.err = errors.New("a truncated D-Bus message")
	}
	return d.err == nil
}

func (d *busDec) align(n int) {
	for d.i%n != 0 {
		d.i++
	}
}

func (d *busDec) byte() byte {
	if !d.need(1) {
		return 0
	}
	d.i++
	return d.b[d.i-1]
}

func (d *busDec) u32() uint32 {
	d.align(4)
	if !d.need(4) {
		return 0
	}
	d.i += 4
	return d.order.Uint32(d.b[d.i-4:])
}

func (d *busDec) str() string { return d.text(int(d.u32())) }

func (d *busDec) sig() string { return d.text(int(d.byte())) }

// text reads n bytes and the NUL that ends them, as a string.
func (d *busDec) text(n int) string {
	if !d.need(n + 1) {
		return ""
	}
	d.i += n + 1
	return string(d.b[d.i-n-1 : d.i-1])
}

// firstString is the string an error's body starts with, its message.
func firstString(body []byte) string {
	d := busDec{b: body, order: binary.LittleEndian}
	s := d.str()
	if d.err != nil {
		return ""
	}
	return s
}
