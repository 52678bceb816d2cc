package withlock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
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

// Holder returns the "<host>:<pid>" part of a token, the part that is safe
// to show: the random part is what proves ownership and must not be printed.
// A token in another format yields "unknown".
func Holder(token string) string {
	i := strings.LastIndexByte(token, ':')
	if i <= 0 {
		return "unknown"
	}
	return token[:i]
}

// Cleanup of an acquisition whose outcome is unknown.
//
// A SET (or fenced script) whose reply never came may still be executed by
// Redis later: a server paused by SIGSTOP or a long fork reads the command
// from its socket when it resumes, even after the client gave up. An
// acquisition that returns an error must not leave its token behind, since
// nobody would release that lock. So before returning such an error it
// deletes its own token with the release script (keep 0, which also wakes
// waiters), never anyone else's key, making up to abandonAttempts attempts,
// each bounded by the Redis client's own timeouts.
//
// What remains: when Redis stays silent for longer than all the attempts
// and executes the SET only afterwards, the key is created when nobody
// waits for it any more, and blocks the name until it expires, at most one
// TTL after Redis executed the SET. The cleanup also relies on Redis
// running the stalled SET before the cleanup sent later on another
// connection, as its event loop does when both wait for it (it serves
// sockets in the order they became readable).
const abandonAttempts = 3

// abandonPauses are the pauses after an attempt that failed quicker than
// the pause itself (Redis refused the connection, say): a slow failure has
// waited long enough already.
var abandonPauses = [abandonAttempts - 1]time.Duration{100 * time.Millisecond, 200 * time.Millisecond}

// abandon deletes l's key if it still holds l's token, best effort, even
// when ctx is already cancelled: see abandonAttempts.
func (l *Lock) abandon(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	for i := range abandonAttempts {
		start := time.Now()
		err := l.c.rdb.Eval(ctx, releaseScript, []string{l.key}, l.token, 0).Err()
		if err == nil || isRedisReply(err) {
			return
		}
		if i < len(abandonPauses) {
			if d := abandonPauses[i] - time.Since(start); d > 0 {
				time.Sleep(d)
			}
		}
	}
}

// mayHaveLanded reports whether a command that failed with err may have
// been executed by Redis, or may still be: anything but an error reply
// from Redis, or a failure to get a connection at all, when nothing was
// sent.
func mayHaveLanded(err error) bool {
	var op *net.OpError
	switch {
	case isRedisReply(err):
		return false
	case errors.As(err, &op) && op.Op == "dial",
		errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrClosed):
		return false
	}
	return true
}

// isRedisReply reports whether err is an error reply from Redis (or
// redis.Nil): the server answered, so the command did run, or was refused.
func isRedisReply(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr)
}
