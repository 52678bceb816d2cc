package withlock

// Client.List, and how the admin paths tell a lock's key
// from its side keys and records.

import (
	"context"
	"strings"

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
