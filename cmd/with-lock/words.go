package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// inUserWords is err's message with every timeout in it said as the
// setting that bounds it, "timed out after 3s (--redis-timeout)", instead
// of Go's "i/o timeout" or "context deadline exceeded". A timeout on a
// connection keeps the address it was on.
func (r *runner) inUserWords(err error) string {
	msg := err.Error()
	said := fmt.Sprintf("timed out after %s (--redis-timeout)", r.cfg.RedisTimeout)
	msg = unresolvedInWords(err, msg, said)
	msg = oomInWords(err, msg)
	msg = unauthenticatedInWords(msg)
	for _, t := range timeouts(err, nil) {
		words := said
		var op *net.OpError
		if errors.As(t, &op) && op.Addr != nil {
			if op.Op == "dial" {
				words = "connect to " + op.Addr.String() + ": " + said
			} else {
				words = "no answer from " + op.Addr.String() + ": " + said
			}
		}
		msg = strings.ReplaceAll(msg, t.Error(), words)
	}
	// A refused connection: nothing listens there (Redis down, or the
	// wrong port), which Go says as "dial tcp ADDR: connect: connection
	// refused".
	for _, e := range outermost(err, isRefused, nil) {
		op := e.(*net.OpError)
		msg = strings.ReplaceAll(msg, op.Error(), "nothing listens at "+op.Addr.String()+" (connection refused)")
	}
	for _, e := range outermost(err, isNoSocket, nil) {
		op := e.(*net.OpError)
		msg = strings.ReplaceAll(msg, op.Error(), "no socket at "+op.Addr.String()+" (no such file or directory)")
	}
	// What a wrapper said in words of its own, not as a wrapped error.
	return strings.NewReplacer("context deadline exceeded", said, "i/o timeout", said).Replace(msg)
}

// timeouts appends to found the outermost errors in err's tree that are
// timeouts: a net.Error that says so, a context deadline or go-redis's
// wait for a free connection.
func timeouts(err error, found []error) []error {
	switch {
	case err == nil, isUnresolved(err): // a failed lookup is said by unresolvedInWords
		return found
	case isTimeout(err), err == context.DeadlineExceeded, err == redis.ErrPoolTimeout:
		return append(found, err)
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return timeouts(u.Unwrap(), found)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			found = timeouts(e, found)
		}
	}
	return found
}

// isTimeout reports whether err itself, not something it wraps, is a
// timeout.
func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// unresolvedInWords is msg, err's message, with every failed lookup of a
// Redis host name in err said as such: "the host name redis-01 does not
// resolve (no such host)" instead of Go's "dial tcp: lookup redis-01 on
// 10.0.0.2:53: no such host". A lookup that timed out says the setting
// that bounds it, as said does.
func unresolvedInWords(err error, msg, said string) string {
	for _, e := range outermost(err, isUnresolved, nil) {
		var dns *net.DNSError
		errors.As(e, &dns)
		var words string
		switch {
		case dns.IsNotFound:
			words = fmt.Sprintf("the host name %s does not resolve (no such host)", dns.Name)
		case dns.IsTimeout:
			words = fmt.Sprintf("the host name %s did not resolve: %s", dns.Name, said)
		default:
			words = fmt.Sprintf("the host name %s does not resolve (%s)", dns.Name, dns.Err)
		}
		msg = strings.ReplaceAll(msg, e.Error(), words)
	}
	return msg
}

// isUnresolved reports whether err itself is a failed lookup of a host
// name: a *net.DNSError, or the dial error that holds one (and says
// "dial tcp: " before it).
func isUnresolved(err error) bool {
	if op, ok := err.(*net.OpError); ok {
		err = op.Err
	}
	_, ok := err.(*net.DNSError)
	return ok
}

// isRefused reports whether err itself is a dial refused at an address:
// nothing listens there.
func isRefused(err error) bool {
	op, ok := err.(*net.OpError)
	return ok && op.Addr != nil && errors.Is(op.Err, syscall.ECONNREFUSED)
}

// isNoSocket reports whether err itself is a dial of a unix socket that is
// not there: Redis is not running, or the path is wrong.
func isNoSocket(err error) bool {
	op, ok := err.(*net.OpError)
	return ok && op.Op == "dial" && op.Addr != nil && op.Addr.Network() == "unix" && errors.Is(op.Err, syscall.ENOENT)
}

// outermost appends to found the outermost errors in err's tree for which
// match holds: each node of a quorum's joined errors has its own.
func outermost(err error, match func(error) bool, found []error) []error {
	switch {
	case err == nil:
		return found
	case match(err):
		return append(found, err)
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return outermost(u.Unwrap(), match, found)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			found = outermost(e, match, found)
		}
	}
	return found
}

// oomInWords is msg, err's message, with every refusal of Redis to write
// because its used memory is above maxmemory (its reply "OOM command not
// allowed when used memory > 'maxmemory'.") said as such.
func oomInWords(err error, msg string) string {
	for _, e := range outermost(err, isOOM, nil) {
		msg = strings.ReplaceAll(msg, e.Error(), "Redis refuses to write while its used memory is above maxmemory")
	}
	return msg
}

// unauthenticatedInWords says, as a missing password is said on the other
// paths (NOAUTH), Redis's answer to a long command (a script, a
// pipeline's array) from a client that gave no password: it reads as a
// bug of the client's ("Protocol error"), but means a password is wanted.
func unauthenticatedInWords(msg string) string {
	for _, what := range []string{"multibulk", "bulk"} {
		said := "ERR Protocol error: unauthenticated " + what + " length"
		msg = strings.Replace(msg, said, "NOAUTH Authentication required (Redis said: "+said+")", 1)
	}
	return msg
}

// isOOM reports whether err itself, not an error wrapping it, is Redis's
// OOM reply.
func isOOM(err error) bool {
	_, wraps := err.(interface{ Unwrap() error })
	return !wraps && redis.IsOOMError(err)
}
