package withlock

// Keys and tokens. Where a lock's keys live (its side keys and fair line in
// its Cluster hash slot) is decided once, in internal/keys, which the tests
// import too; the short names below are the library's for it. Tokens are
// made here (owner prefix, time, crypto/rand); which part of one may be
// shown is internal/keys' too.

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/with-lock/with-lock/internal/keys"
)

// fenceKey is the key of the fencing counter of the lock key key, in its
// Cluster slot, so that both can be written by one script: "{key}:fence"
// (docs/production-redis.md documents it for ACLs).
func fenceKey(key string) string { return keys.Fence(key) }

// sideKey is the key called what beside the lock key key, in its slot.
func sideKey(key, what string) string { return keys.Side(key, what) }

// hashTagged reports whether key's Cluster slot comes from a hash tag of
// its own.
func hashTagged(key string) bool { return keys.HashTagged(key) }

// taggable reports whether a key without a hash tag can be made one of its
// own, "{key}".
func taggable(key string) bool { return keys.Taggable(key) }

// lineBase is the hash-tagged base of the names beside key in its slot,
// false for a key that has none (so no fair line and no semaphore: such a
// key waits without a line).
func lineBase(key string) (string, bool) { return keys.LineBase(key) }

// hasLine reports whether key has a line: lineBase without building it.
func hasLine(key string) bool { return keys.HasLine(key) }

// lineArg is what the line's check is given for key's fair line: its
// base, or "" for a key that has none.
func lineArg(key string) string {
	b, _ := keys.LineBase(key)
	return b
}

// waitMark is the key of key's waiting mark, "<base>:w": it exists while
// someone may be waiting for key, so that a release with nobody waiting
// skips the line and the release message (releaseScript). "" for a key
// without a line base, whose releases always publish.
func waitMark(key string) string { return keys.Mark(key) }

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
func holderOf(token string) string { return keys.Holder(token) }

// sinceOf returns the time a token was made (see newToken), or the zero
// time for a token without one: from an older version, or another program.
func sinceOf(token string) time.Time {
	rest := keys.Secret(token)
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
