package withlock

// Client.Break, and the marker it leaves for the holder of the lock it
// removed, so that the holder's KeepAlive can say who broke it
// (LostError.BrokenBy) and not take it back (KeepAliveOptions.Reacquire):
// every backend's part of reading that marker (breakTeller). The break
// itself is each backend's breakLock (backend_admin.go,
// backend_quorum_admin.go); its script (breakScript) is declared in
// admin_list.go.

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/keys"
)

// Break removes the lock called name whatever its token, and hands it to
// the head of the fair line or wakes those waiting for it, with one
// script: on a Cluster on the key's master, on a quorum on every node. It returns what it removed:
// Held false when nothing was held (on a quorum: no token was on a
// majority; keys on a minority are removed all the same). On a quorum it
// returns once a majority removed the key and their answers settle whose
// it was; a node that has not answered by then gets the removal of that
// holder's key queued, and is named in Status.Unanswered. The former
// holder finds out at its next renewal, which fails with ErrLockNotHeld;
// the break leaves a marker beside the key, for as long as the removed key
// had left, from which the holder's KeepAlive learns who broke it
// (LostError.BrokenBy) and that it must not take it back
// (KeepAliveOptions.Reacquire). The marker names this Client's host:pid
// and holds only digests of the tokens removed. A paused name is left
// paused, with a *NotObtainedError with Paused (ErrPaused): Resume ends a pause.
func (c *Client) Break(ctx context.Context, name string) (*Status, error) {
	if name == "" {
		return nil, ErrEmptyName
	}
	a, err := c.admin("break " + c.Key(name))
	if err != nil {
		return nil, err
	}
	v, err := a.breakLock(ctx, c.Key(name), c.breaker())
	if err != nil {
		return nil, err
	}
	return v.st, nil
}

// breakOn runs the break script for key on rdb, as the Client by
// ("<host>:<pid>"), and returns the token it removed, "" when the key was
// missing; for a semaphore's marker also the tokens it removed from the
// slots, by slot ("" for a free one). A paused key is left as it is, with
// a *NotObtainedError with Paused: a pause is no holder.
func breakOn(ctx context.Context, rdb redis.UniversalClient, key, by string) (string, []string, error) {
	b, _ := keys.LineBase(key) // "" for a key that cannot be a semaphore
	v, err := rdb.Eval(ctx, breakScript(), []string{key, keys.Broken(key)}, b, by, pausePrefix).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "", nil, nil
	case isWrongType(err):
		return "", nil, wrongType(ctx, rdb, key, "key", err)
	case err != nil:
		// Not opError: a READONLY here says the server is a replica, not
		// that a lock of ours was lost.
		return "", nil, fmt.Errorf("break %s: %w", key, err)
	}
	switch v := v.(type) {
	case string:
		if p, ok := pauseOf(v); ok {
			return "", nil, pausedError(key, p)
		}
		return v, nil, nil
	case []any:
		var out []string
		for _, t := range v {
			s, _ := t.(string)
			out = append(out, s)
		}
		if len(out) > 0 {
			return out[0], out[1:], nil
		}
	}
	return "", nil, fmt.Errorf("break %s: unexpected reply %v", key, v)
}

// The marker.

// breaker is who breaks a lock as the marker names it: the Client's
// "<host>:<pid>".
func (c *Client) breaker() string { return strings.TrimSuffix(c.owner, ":") }

// tokenSum is how the break marker names a token it removed: the hex SHA-1
// that Lua's redis.sha1hex computes. The marker never holds a token.
func tokenSum(token string) string {
	sum := sha1.Sum([]byte(token))
	return hex.EncodeToString(sum[:])
}

// brokenBy reads the break marker of l's key: the "<host>:<pid>" of the
// Client whose Break removed l's token, or "" when Redis knows of no such
// break (the key vanished otherwise, or the marker has expired). It is one
// GET, sent only after a renewal found l not ours. A semaphore's slot is
// named in its name's marker, so this serves both.
func (s *single) brokenBy(ctx context.Context, l *Lock) (string, error) {
	return brokenOn(ctx, s.rdb, l)
}

// brokenOn reads the break marker of l's key on rdb (see single.brokenBy).
func brokenOn(ctx context.Context, rdb redis.UniversalClient, l *Lock) (string, error) {
	v, err := rdb.Get(ctx, keys.Broken(l.key)).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "", nil
	case err != nil:
		return "", err
	}
	by, sums, _ := strings.Cut(v, " ")
	for _, sum := range strings.Fields(sums) {
		if sum == tokenSum(l.token) {
			return by, nil
		}
	}
	return "", nil
}

// brokenBy on a quorum asks every node at once (Break left the marker on
// each that held the key) and returns the first breaker named, without
// waiting for the nodes that are slow to answer once one did; "" when none
// names l's token.
func (q *quorum) brokenBy(ctx context.Context, l *Lock) (string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // the slower reads end here
	found := make(chan string, len(q.nodes))
	for _, rdb := range q.nodes {
		go func() {
			by, _ := brokenOn(ctx, rdb, l)
			found <- by
		}()
	}
	for range q.nodes {
		if by := <-found; by != "" {
			return by, nil
		}
	}
	return "", nil
}

// brokenBy reads the marker Break left on the name's key, which names the
// digest of every slot's token it removed.
func (s *semaphore) brokenBy(ctx context.Context, l *Lock) (string, error) {
	return s.one.brokenBy(ctx, l)
}
