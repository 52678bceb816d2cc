package withlock

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
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

// newToken returns prefix followed by 128 random bits in hex, built in one
// allocation: it is on the path of every acquisition.
func newToken(prefix string) (string, error) {
	var b [tokenRandomBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("read random token: %w", err)
	}
	var sb strings.Builder
	sb.Grow(len(prefix) + hex.EncodedLen(len(b)))
	sb.WriteString(prefix)
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
