package withlock

// Lock tokens (owner prefix, time, crypto/rand) and what a token tells of its
// holder.

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// tokenRandomBytes is the random part of a token: 128 bits make a collision
// between two owners practically impossible.
const tokenRandomBytes = 16

// ownerPrefix returns "<host>:<pid>:", the part of every token that tells an
// operator who holds a lock. It is computed once per Client.
func ownerPrefix() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return fmt.Sprintf("%s:%d:", host, os.Getpid())
}

// newToken returns prefix, the time now as base-36 Unix milliseconds, a dot
// and 128 random bits in hex: "<host>:<pid>:<ms36>.<hex>". The time says
// since when the lock is held (Holder.Since); it is the start of the
// acquisition, which for a waiting Acquire is the start of the wait, since
// every try of one acquisition sends the same token. The token is built in
// one allocation: it is on the path of every acquisition.
func newToken(prefix string, now time.Time) (string, error) {
	var b [tokenRandomBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("read random token: %w", err)
	}
	var ms [16]byte
	stamp := strconv.AppendInt(ms[:0], now.UnixMilli(), 36)
	var sb strings.Builder
	sb.Grow(len(prefix) + len(stamp) + 1 + hex.EncodedLen(len(b)))
	sb.WriteString(prefix)
	sb.Write(stamp)
	sb.WriteByte('.')
	var h [2 * tokenRandomBytes]byte
	hex.Encode(h[:], b[:])
	sb.Write(h[:])
	return sb.String(), nil
}

// holderOf returns the "<host>:<pid>" part of a token, the part that is safe
// to show: the random part is what proves ownership and must not be printed.
// A token in another format yields "unknown".
func holderOf(token string) string {
	i := strings.LastIndexByte(token, ':')
	if i <= 0 {
		return "unknown"
	}
	return token[:i]
}

// sinceOf returns the time a token was made (see newToken), or the zero
// time for a token without one: from an older version, or another program.
func sinceOf(token string) time.Time {
	rest := token[strings.LastIndexByte(token, ':')+1:]
	stamp, random, ok := strings.Cut(rest, ".")
	if !ok || len(random) != hex.EncodedLen(tokenRandomBytes) {
		return time.Time{}
	}
	ms, err := strconv.ParseInt(stamp, 36, 64)
	if err != nil || ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
