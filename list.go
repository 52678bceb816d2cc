package withlock

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ListOptions configure List. A nil *ListOptions lists the locks held now.
type ListOptions struct {
	// All also lists the names that are free now but have a last-run
	// record (Status.Held false, Status.LastRun set). It costs a second
	// SCAN.
	All bool
}

// List returns the Status of every lock held under the Client's prefix,
// sorted by key, found with SCAN (never KEYS) on every master of a Cluster
// and every node of a quorum, and then read one by one as Status reads
// them: a lock taken or released meanwhile may be missed or shown free.
// Fencing counters, last-run records and break markers are not locks and
// are skipped.
func (c *Client) List(ctx context.Context, opts *ListOptions) ([]*Status, error) {
	keys, err := c.b.keys(ctx, globEscape(c.prefix)+"*")
	if err != nil {
		return nil, fmt.Errorf("list %s*: %w", c.prefix, err)
	}
	var recorded []string // with All: the lock keys of the records found
	if opts != nil && opts.All {
		recs, err := c.b.keys(ctx, recordPattern(c.prefix))
		if err != nil {
			return nil, fmt.Errorf("list records of %s*: %w", c.prefix, err)
		}
		// The records of names with a hash tag or a '}' ("P{tag}x:last",
		// "Pa}b:last:<n>") start with the prefix P: the first SCAN found them.
		for _, rk := range append(recs, keys...) {
			if key, ok := lockKeyOfRecord(rk); ok && strings.HasPrefix(key, c.prefix) {
				recorded = append(recorded, key)
			}
		}
	}
	keys = append(slices.DeleteFunc(keys, isSideKey), recorded...)
	slices.Sort(keys)
	keys = slices.Compact(keys)
	var list []*Status
	for _, key := range keys {
		v, err := c.b.view(ctx, key)
		if isWrongType(err) {
			continue // another program's key under the prefix
		}
		if err != nil {
			return nil, err
		}
		st, err := v.status()
		if err != nil {
			return nil, err
		}
		if st.Held || (opts != nil && opts.All && st.LastRun != nil) {
			list = append(list, st)
		}
	}
	return list, nil
}

// Break removes the lock called name whatever its token, and wakes those
// waiting for it, with one script (GET, DEL, PUBLISH): on a Cluster on the
// key's master, on a quorum on every node. It returns what it removed:
// Held false when nothing was held (on a quorum: no token was on a
// majority; keys on a minority are removed all the same). The former
// holder finds out at its next renewal, which fails with ErrLockNotHeld;
// the break leaves a marker beside the key, for as long as the removed key
// had left, from which the holder's KeepAlive learns who broke it
// (LostError.BrokenBy) and that it must not take it back
// (KeepAliveOptions.Reacquire). The marker names this Client's host:pid
// and holds only digests of the tokens removed.
func (c *Client) Break(ctx context.Context, name string) (*Status, error) {
	if name == "" {
		return nil, ErrEmptyName
	}
	v, err := c.b.breakLock(ctx, c.Key(name), c.breaker())
	if err != nil {
		return nil, err
	}
	return v.st, nil
}

// breakScript removes a lock whatever its token. KEYS[1] is the lock key,
// KEYS[2] its break marker (brokenKey). It returns the token it removed, or
// nil when the key was missing; like the release script it publishes on
// the key's channel, so that waiters try at once. When it removed a token
// it sets the marker to "<ARGV[2]> <SHA-1 of each token removed>…" for the
// key's remaining life plus a second (a minute more for a key without
// expiry): the holder's next renewal comes within that life.
//
//go:embed break.lua
var breakScript string

// breakOn runs the break script for key on rdb, as the Client by
// ("<host>:<pid>"), and returns the token it removed, "" when the key was
// missing; for a semaphore's marker also the tokens it removed from the
// slots, by slot ("" for a free one).
func breakOn(ctx context.Context, rdb redis.UniversalClient, key, by string) (string, []string, error) {
	b, _ := lineBase(key) // "" for a key that cannot be a semaphore
	v, err := rdb.Eval(ctx, breakScript, []string{key, brokenKey(key)}, b, by).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "", nil, nil
	case isWrongType(err):
		return "", nil, wrongType(ctx, rdb, key, "key", err)
	case err != nil:
		return "", nil, opError("break", key, err)
	}
	switch v := v.(type) {
	case string:
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
// history, last success, once-per marker or break marker of another key
// (see sideKey), or one of the keys beside it that have its line base
// (lineBase): its fair line, a waiting Client's liveness key, a semaphore's
// slot. None of them is a lock.
func isSideKey(key string) bool {
	for _, what := range []string{"fence", "last", "runs", "ok", "done", "broken"} {
		if base, ok := baseOf(key, what); ok && sideKey(base, what) == key {
			return true
		}
	}
	return isLineKey(key)
}

// isLineKey reports whether key is "B:q", "B:c:<hex id>" or "B:s:<n>" for
// a line base B (a key with a hash tag).
func isLineKey(key string) bool {
	b, ok := strings.CutSuffix(key, ":q")
	if !ok {
		i := strings.LastIndexByte(key, ':')
		j := strings.LastIndexByte(key[:max(i, 0)], ':')
		if j < 0 {
			return false
		}
		id := key[i+1:]
		switch key[j:i] {
		case ":c":
			ok = id != "" && strings.Trim(id, "0123456789abcdef") == ""
		case ":s":
			ok = id != "" && strings.Trim(id, "0123456789") == ""
		}
		b = key[:j]
	}
	lb, tagged := lineBase(b)
	return ok && tagged && lb == b && strings.Contains(b, "{")
}

// lockKeyOfRecord returns the lock key whose last-run record is at key.
func lockKeyOfRecord(key string) (string, bool) {
	base, ok := baseOf(key, "last")
	return base, ok && sideKey(base, "last") == key
}

// baseOf guesses the lock key whose side key called what key is:
// "{base}:what", "base:what" or "base:what:<n>". The caller checks the guess
// with sideKey.
func baseOf(key, what string) (string, bool) {
	if base, ok := strings.CutSuffix(key, ":"+what); ok {
		if strings.HasPrefix(base, "{") && strings.HasSuffix(base, "}") && sideKey(base[1:len(base)-1], what) == key {
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
	if p := globEscape(recordKey(prefix + name)); strings.HasSuffix(p, ":last") {
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
