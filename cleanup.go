package withlock

// Cleaning up after a command whose outcome is unknown: which failures may
// have landed, a script queued on a fresh connection without waiting for
// its reply, or the deletion sent and retried.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cleanup of an acquisition whose outcome is unknown.
//
// A SET (or script) whose reply never came may still be executed by Redis
// later: a server paused by SIGSTOP, in DEBUG SLEEP or a long fork reads
// the command from its socket when it resumes, even after the client gave
// up and closed the connection. An acquisition that returns an error must
// not leave its token behind, since nobody would release that lock; and it
// must not wait for the stalled server either, or a failed run would last
// several timeouts.
//
// So the compare-and-delete of our own token is queued rather than waited
// for: it is written on a fresh connection to the same server, with the
// AUTH and SELECT it needs in front, and the connection is closed without
// reading a reply (queueScript). The kernel of the server's host holds
// those bytes even while Redis is stopped; when Redis resumes it runs the
// SET first, since that socket became readable first and its event loop
// serves sockets in that order, and the deletion next. A fresh connection
// is used because the SET's own one is closed by go-redis on the timeout,
// and one from the pool would first send HELLO and wait for its answer.
//
// Where that cannot be done — a TLS connection (its handshake needs the
// stalled server), a credentials provider that streams, a client that is
// neither a *redis.Client nor a *redis.ClusterClient — the deletion is sent
// the ordinary way and retried (retryCleanup), all of it within the same
// budget: half the client's read timeout. A SET that lands after that
// blocks the name, never double-holds it, for at most one TTL.

// cleanupBudget is how long a failed acquisition may spend on its clean-up
// on top of the timeout that failed it: half the client's read timeout,
// so that the whole failed acquisition stays within 1.5 of it.
func cleanupBudget(rdb redis.UniversalClient) time.Duration {
	var rt time.Duration
	switch c := rdb.(type) {
	case *redis.Client:
		rt = c.Options().ReadTimeout
	case *redis.ClusterClient:
		rt = c.Options().ReadTimeout
	}
	if rt <= 0 {
		rt = 3 * time.Second // go-redis's default
	}
	return rt / 2
}

// cleanupScript deletes our own token with script (keys, args) on the
// server of rdb that owns key. answered says whether that server has just
// answered (a WAIT that counted too few replicas): then the deletion is
// sent and its reply awaited, within the budget, so that the key is gone
// when the caller returns. Otherwise the server may be stalled and the
// deletion is queued, not waited for: see above. ctx may be cancelled
// already.
func cleanupScript(ctx context.Context, rdb redis.UniversalClient, answered bool, key, script string, keys []string, args ...any) {
	budget := cleanupBudget(rdb)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), budget)
	defer cancel()
	if !answered && queueScript(ctx, rdb, key, script, keys, args...) == nil {
		return
	}
	// A client that ignores context deadlines (go-redis's default) would
	// make each attempt wait its full read timeout: the budget is kept by
	// not waiting for them beyond it.
	done := make(chan bool, 1)
	go func() {
		done <- retryCleanup(ctx, func(ctx context.Context) error {
			return rdb.Eval(ctx, script, keys, args...).Err()
		})
	}()
	var ok bool
	select {
	case ok = <-done:
	case <-ctx.Done():
	}
	if !ok && answered {
		// It stopped answering after all: queue it as a last resort.
		qctx, qcancel := context.WithTimeout(context.WithoutCancel(ctx), queueWait)
		defer qcancel()
		_ = queueScript(qctx, rdb, key, script, keys, args...)
	}
}

// queueScript writes EVAL script on a new connection to the master of rdb
// that owns key, preceded by AUTH and SELECT where the client uses them,
// and closes the connection without reading any reply. A nil error means
// the bytes were handed to the kernel, not that Redis ran them.
func queueScript(ctx context.Context, rdb redis.UniversalClient, key, script string, keys []string, args ...any) error {
	var opt *redis.Options
	switch c := rdb.(type) {
	case *redis.Client:
		opt = c.Options()
	case *redis.ClusterClient:
		node, err := c.MasterForKey(ctx, key)
		if err != nil {
			return err
		}
		opt = node.Options()
	default:
		return errCannotQueue
	}
	if opt.TLSConfig != nil || opt.StreamingCredentialsProvider != nil || opt.Dialer == nil {
		return errCannotQueue
	}
	user, pass, err := credentials(ctx, opt)
	if err != nil {
		return err
	}
	var buf []byte
	switch {
	case pass != "" && user != "":
		buf = appendCommand(buf, "AUTH", user, pass)
	case pass != "":
		buf = appendCommand(buf, "AUTH", pass)
	}
	if opt.DB != 0 {
		buf = appendCommand(buf, "SELECT", strconv.Itoa(opt.DB))
	}
	cmd := []string{"EVAL", script, strconv.Itoa(len(keys))}
	cmd = append(cmd, keys...)
	for _, a := range args {
		cmd = append(cmd, fmt.Sprint(a))
	}
	buf = appendCommand(buf, cmd...)

	conn, err := opt.Dialer(ctx, opt.Network, opt.Addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if d, ok := ctx.Deadline(); ok {
		_ = conn.SetWriteDeadline(d)
	}
	if _, err := conn.Write(buf); err != nil {
		return err
	}
	// Half-close: Redis reads the commands, then the end of the stream.
	if tc, ok := conn.(interface{ CloseWrite() error }); ok {
		_ = tc.CloseWrite()
	}
	return nil
}

// credentials are the user and password a connection of opt authenticates
// with, from its provider if it has one.
func credentials(ctx context.Context, opt *redis.Options) (user, pass string, err error) {
	switch {
	case opt.CredentialsProviderContext != nil:
		return opt.CredentialsProviderContext(ctx)
	case opt.CredentialsProvider != nil:
		user, pass = opt.CredentialsProvider()
		return user, pass, nil
	}
	return opt.Username, opt.Password, nil
}

// appendCommand appends args as one RESP command (an array of bulk
// strings), as redis-cli sends it.
func appendCommand(buf []byte, args ...string) []byte {
	buf = append(buf, '*')
	buf = strconv.AppendInt(buf, int64(len(args)), 10)
	buf = append(buf, "\r\n"...)
	for _, a := range args {
		buf = append(buf, '$')
		buf = strconv.AppendInt(buf, int64(len(a)), 10)
		buf = append(buf, "\r\n"...)
		buf = append(buf, a...)
		buf = append(buf, "\r\n"...)
	}
	return buf
}

// abandonAttempts is how many times the ordinary clean-up (retryCleanup)
// sends its deletion when it cannot be queued, all within
// the clean-up's budget.
const abandonAttempts = 3

// abandonPauses are the pauses after an attempt that failed quicker than
// the pause itself (Redis refused the connection, say): a slow failure has
// waited long enough already.
var abandonPauses = [abandonAttempts - 1]time.Duration{100 * time.Millisecond, 200 * time.Millisecond}

// abandon deletes l's key if it still holds l's token, best effort, even
// when ctx is already cancelled, without waiting for a stalled server: see
// cleanupScript. answered says whether Redis has just answered.
func (s *single) abandon(ctx context.Context, l *Lock, answered bool) {
	abandonOn(ctx, s.rdb, l, answered)
}

// abandonOn is abandon on rdb, a backend's client.
func abandonOn(ctx context.Context, rdb redis.UniversalClient, l *Lock, answered bool) {
	cleanupScript(ctx, rdb, answered, l.key, releaseScript(), []string{l.key}, releaseArgs(l.token, l.waitMark(), 0, "")...)
}

// retryCleanup runs del, a deletion of our own token, up to abandonAttempts
// times until Redis answers or ctx ends. It reports whether Redis answered.
func retryCleanup(ctx context.Context, del func(context.Context) error) bool {
	for i := range abandonAttempts {
		start := time.Now()
		err := del(ctx)
		switch {
		case err == nil || isRedisReply(err):
			return true
		case ctx.Err() != nil:
			return false
		}
		if i < len(abandonPauses) {
			if d := abandonPauses[i] - time.Since(start); d > 0 {
				select {
				case <-time.After(d):
				case <-ctx.Done():
					return false
				}
			}
		}
	}
	return false
}

// mayHaveLanded reports whether a command that failed with err may have
// been executed by Redis, or may still be: anything but an error reply
// from Redis, or a failure to get a connection at all, when nothing was
// sent.
func mayHaveLanded(err error) bool {
	var op *net.OpError
	switch {
	case isRedisReply(err), stoppedWaiting(err): // roundtrip.go cleans up after the latter
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
