package withlock

// Client.List and Client.Break, and how the admin paths tell a lock's key
// from its side keys and records.

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

// ListOptions configure List. A nil *ListOptions lists the locks held now.
type ListOptions struct {
	// All also lists the names that are free now but have a last-run
	// record (Status.Held false, Status.LastRun set). Where List scans it
	// costs a second SCAN.
	All bool
	// Scan finds the locks with SCAN even where the deployment keeps an
	// index of names ("{<prefix>}:names"): it also finds keys under the prefix
	// that no Client of this version took, set by another program or an
	// older version, at the cost of reading every key in Redis.
	Scan bool
}

// List returns the Status of every lock held under the Client's prefix,
// sorted by key. On one deployment (a plain server, Sentinel, a Cluster)
// it reads the prefix's index of names, the hash "{<prefix>}:names" (on a
// Cluster, on the master of its slot), so that its cost grows with the
// locks, not with the other keys in Redis: every acquisition of a Client
// writes its name there in the round trip of its SET, so a lock is listed
// from the moment it is taken, whatever its options, a semaphore's slot and
// a lock handed over in the fair line too; a key under the prefix that
// another program set is not, unless ListOptions.Scan. On a quorum, or
// with Scan, it finds the keys under the prefix with SCAN (never KEYS) on
// every master of a Cluster and every node of a quorum, another program's
// keys too (held by "unknown" when their value is not a token).
// The keys are then read in one pipeline per master (on a quorum, per
// node, answering from a majority as Status does): a lock taken or
// released meanwhile may be missed or shown free. Fencing counters, last-run records and break
// markers are not locks and are skipped. Index entries of names out of use
// (no lock, record or waiter) for ten minutes are removed.
func (c *Client) List(ctx context.Context, opts *ListOptions) ([]*Status, error) {
	a, err := c.admin("list " + c.prefix + "*")
	if err != nil {
		return nil, err
	}
	all := opts != nil && opts.All
	keys, fromIndex, err := c.listKeys(ctx, a, all, opts != nil && opts.Scan)
	if err != nil {
		return nil, err
	}
	views, err := a.views(ctx, keys)
	if err != nil {
		return nil, err
	}
	var list []*Status
	var stale []string
	for i, v := range views {
		if v.st == nil {
			// Another program's key under the prefix, or a name whose
			// acquisition found one and wrote the index all the same:
			// pruned once none of its keys is left.
			stale = append(stale, keys[i])
			continue
		}
		st, err := v.status()
		if err != nil {
			return nil, err
		}
		if st.Held || st.Paused != nil || (all && st.LastRun != nil) {
			list = append(list, st)
		}
		if !st.Held && st.Paused == nil && len(v.records) == 0 && len(v.successes) == 0 {
			stale = append(stale, keys[i])
		}
	}
	if ik, ok := c.b.(indexKeeper); ok && fromIndex {
		// Best effort: a failed pruning is tried again at the next List.
		_ = ik.unindex(ctx, c.prefix, stale)
	}
	return list, nil
}

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

// breakScript removes a lock whatever its token. KEYS[1] is the lock key,
// KEYS[2] its break marker (keys.Broken). It returns the token it removed, or
// nil when the key was missing; like the line's check it hands a plain
// lock to the first live waiter of the fair line (handKey, scripts.go;
// ARGV[1] is the key's line base, "" for none; a lease mark left then
// reads "2", lapsed: lease.go), and a semaphore's slots to
// the first live waiters (handSlot), and publishes on the key's channel,
// so that waiters outside the line try at once. When it removed a token
// it sets the marker to "<ARGV[2]> <SHA-1 of each token removed>…" for the
// key's remaining life plus a second (a minute more for a key without
// expiry): the holder's next renewal comes within that life.
var breakScript = withHands("break.lua", slotsHand, keyHand)

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

// isSideKey reports whether key is the fencing counter, last-run record,
// history, last success, once-per marker, break or replace marker, leftovers note
// or lease mark of another key (see keys.Side), or one of the keys beside it that have its
// line base (keys.LineBase): its fair line, its waiting mark, a waiting Client's
// liveness or far key, a semaphore's slot. None of them is a lock.
func isSideKey(key string) bool {
	for _, what := range []string{"fence", "last", "runs", "ok", "done", "broken", "replaced", "left", "pause", "lease"} {
		if base, ok := baseOf(key, what); ok && keys.Side(base, what) == key {
			return true
		}
	}
	return isLineKey(key)
}

// isLineKey reports whether key is "B:q", "B:w", "B:c:<hex id>",
// "B:f:<hex id>" or "B:s:<n>" for a line base B (a key with a hash tag).
func isLineKey(key string) bool {
	b, ok := strings.CutSuffix(key, ":q")
	if !ok {
		b, ok = strings.CutSuffix(key, ":w")
	}
	if !ok {
		i := strings.LastIndexByte(key, ':')
		j := strings.LastIndexByte(key[:max(i, 0)], ':')
		if j < 0 {
			return false
		}
		id := key[i+1:]
		switch key[j:i] {
		case ":c", ":f":
			ok = id != "" && strings.Trim(id, "0123456789abcdef") == ""
		case ":s":
			ok = id != "" && strings.Trim(id, "0123456789") == ""
		}
		b = key[:j]
	}
	lb, tagged := keys.LineBase(b)
	return ok && tagged && lb == b && strings.Contains(b, "{")
}

// lockKeyOfRecord returns the lock key whose last-run record is at key.
func lockKeyOfRecord(key string) (string, bool) {
	base, ok := baseOf(key, "last")
	return base, ok && keys.Side(base, "last") == key
}

// baseOf guesses the lock key whose side key called what key is:
// "{base}:what", "base:what" or "base:what:<n>". The caller checks the guess
// with keys.Side.
func baseOf(key, what string) (string, bool) {
	if base, ok := strings.CutSuffix(key, ":"+what); ok {
		if strings.HasPrefix(base, "{") && strings.HasSuffix(base, "}") && keys.Side(base[1:len(base)-1], what) == key {
			return base[1 : len(base)-1], true
		}
		return base, true
	}
	if i := strings.LastIndex(key, ":"+what+":"); i > 0 {
		return key[:i], true
	}
	return "", false
}

// recordPattern is the SCAN pattern that matches the last-run records of
// the keys that start with prefix.
func recordPattern(prefix string) string {
	const name = "\x00" // stands for any name: no glob character, no brace
	if p := globEscape(keys.Record(prefix + name)); strings.HasSuffix(p, ":last") {
		return strings.Replace(p, name, "*", 1)
	}
	// A prefix with a '}' and no hash tag: the record's numeric suffix
	// depends on the name.
	return globEscape(prefix) + "*:last:*"
}

// globEscape escapes the characters SCAN's MATCH pattern gives a meaning.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Client.Break's marker: the key naming who broke a lock, which a holder's
// KeepAlive reads to say so in its LostError.

// The marker Client.Break leaves for the holder of the lock it removed, so
// that the holder's KeepAlive can say who broke it (LostError.BrokenBy)
// and not take it back (KeepAliveOptions.Reacquire).

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
