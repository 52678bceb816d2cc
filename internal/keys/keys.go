// Package keys names with-lock's Redis keys and reads its lock tokens: the
// one statement of where a lock's key, its side keys and its fair line live,
// and of which part of a token may be shown. The library builds its keys
// with it and the tests import it, so that no copy of the rule can drift
// from it.
//
// The hash-tag rule: a key's Redis Cluster slot comes from its first "{…}"
// if that is not empty, else from the whole key. The keys beside a lock key
// are in its slot, so that one script can touch them all: "key:what" when
// the key has a hash tag, "{key}:what" when it has none, and for a key with
// '}' but no hash tag, which no tag of ours can hold, a name that CRC16
// puts in its slot. The scripts are given what this package decides; they
// never derive it again.
package keys

import (
	"strconv"
	"strings"
)

// Lock is the key of the lock called name under prefix.
func Lock(prefix, name string) string { return prefix + name }

// Index is the hash of the lock keys under prefix that List reads:
// "{<prefix>}:names", which no lock key under prefix can be (they start
// with prefix) and which the documented ACL's "~{<prefix>*" covers.
func Index(prefix string) string { return "{" + prefix + "}:names" }

// HashTagged reports whether key's Cluster slot comes from a hash tag: a
// non-empty "{…}", the first '{' and the next '}' with something between.
func HashTagged(key string) bool {
	open := strings.IndexByte(key, '{')
	return open >= 0 && strings.IndexByte(key[open+1:], '}') > 0
}

// Taggable reports whether a key without a hash tag can be made one of its
// own, "{key}": not when it contains '}', which would end the tag early.
func Taggable(key string) bool { return strings.IndexByte(key, '}') < 0 }

// LineBase is the hash-tagged base of the names beside key in its slot
// (its fair line, waiting mark, pause, a semaphore's slots): key itself
// when it has a hash tag, else "{key}"; false for a key with '}' but no
// hash tag, which has none (no fair line, no semaphore, no pause).
func LineBase(key string) (string, bool) {
	switch {
	case HashTagged(key):
		return key, true
	case Taggable(key):
		return "{" + key + "}", true
	}
	return "", false
}

// HasLine reports whether key has a line base: LineBase without building it.
func HasLine(key string) bool { return HashTagged(key) || Taggable(key) }

// onBase is the key called what on key's line base, "" for a key without one.
func onBase(key, what string) string {
	if b, ok := LineBase(key); ok {
		return b + what
	}
	return ""
}

// Line is the list of key's fair line, "<base>:q"; "" for a key without a
// line base.
func Line(key string) string { return onBase(key, ":q") }

// Mark is the key of key's waiting mark, "<base>:w": it exists while
// someone may be waiting for key, so that a release with nobody waiting
// skips the line and the release message. "" for a key without a line
// base, whose releases always publish.
func Mark(key string) string { return onBase(key, ":w") }

// Pause is where a pause of key is kept, "<base>:pause"; false for a key
// without a line base, which cannot be paused.
func Pause(key string) (string, bool) {
	b, ok := LineBase(key)
	return b + ":pause", ok
}

// Lease is key's lease mark, "<base>:lease": an acquisition that asks
// for it (internal/lapse, for --lock-delay) sets it, and every release of key
// deletes it, so that one found set when the lock is taken tells of a
// holder whose lease lapsed without a release. The release script builds
// it from the waiting mark's base. False for a key without a line base.
func Lease(key string) (string, bool) {
	b, ok := LineBase(key)
	return b + ":lease", ok
}

// Slot is the key of slot i of the semaphore whose lock key (or line
// base) is key: "<base>:s:<i>".
func Slot(key string, i int) string { return onBase(key, ":s:"+strconv.Itoa(i)) }

// Alive is the liveness key of the waiting Client cid in the fair line of
// key (or of the line base key): "<base>:c:<cid>".
func Alive(key, cid string) string { return onBase(key, ":c:"+cid) }

// Channel is the channel on which the waiting Client cid of key's fair
// line is told it was served: "<base>:w:<cid>".
func Channel(key, cid string) string { return onBase(key, ":w:"+cid) }

// Far is the key a far waiter, the waiting Client cid, keeps in key's fair
// line: "<base>:f:<cid>".
func Far(key, cid string) string { return onBase(key, ":f:"+cid) }

// Side is the key called what beside the lock key key, in its Cluster slot:
// "key:what" when key has a hash tag, else "{key}:what", else (a key with
// '}' and no hash tag) "key:what:<n>", with n chosen by CRC16.
func Side(key, what string) string {
	switch {
	case HashTagged(key):
		return key + ":" + what
	case Taggable(key):
		return "{" + key + "}:" + what
	}
	return sameSlot(key, what)
}

// The side keys of a lock key, each "{key}:<what>" for a key without a hash
// tag (docs/production-redis.md lists them for ACLs).
const (
	FenceName    = "fence"    // the fencing counter
	RecordName   = "last"     // the last run's record
	HistoryName  = "runs"     // the last runs, newest first
	SuccessName  = "ok"       // the last successful run's record
	WindowName   = "done"     // the once-per window the job last succeeded in
	BrokenName   = "broken"   // the marker Break leaves for the holder
	ReplacedName = "replaced" // the marker a replacer leaves for the holder
	LeftName     = "left"     // the note of a run's leftover processes
)

// SideNames are the names of every side key, for telling one from a lock.
var SideNames = []string{FenceName, RecordName, HistoryName, SuccessName, WindowName, BrokenName, ReplacedName, LeftName}

// Fence is the key of key's fencing counter, in its Cluster slot so that
// one script writes both: "{key}:fence" (docs/production-redis.md documents
// it for ACLs).
func Fence(key string) string { return Side(key, FenceName) }

// Record is the key of key's last-run record.
func Record(key string) string { return Side(key, RecordName) }

// History is the list of key's last runs, newest first.
func History(key string) string { return Side(key, HistoryName) }

// Success is the key of the record of key's last successful run.
func Success(key string) string { return Side(key, SuccessName) }

// Window is the marker of the once-per window in which key's job last
// succeeded.
func Window(key string) string { return Side(key, WindowName) }

// Broken is the key of the marker Break leaves beside key for its holder:
// "<host:pid of the breaker> <sha1 of each token removed>…", living as long
// as the broken key had left (plus a second), so that its holder's next
// renewal can find it.
func Broken(key string) string { return Side(key, BrokenName) }

// Replaced is the key of the marker a replacer leaves beside key for its
// holder: "<host:pid of the replacer> <sha1 of the holder's token>", living
// as long as the holder's key had left (plus a second), so that the
// holder's next renewal finds it. It never holds a token.
func Replaced(key string) string { return Side(key, ReplacedName) }

// Left is the key of the note of key's run's leftover processes.
func Left(key string) string { return Side(key, LeftName) }

// sameSlot returns a side key called what in the Cluster slot of key, a key
// without a hash tag that contains '}', so that no tag can hold it: such a
// key's slot is CRC16 of the whole key. It appends a number that makes the
// side key hash to that slot; the result has no tag either, as nothing
// appended is a brace.
//
// CRC16 is linear, so the six-digit numbers, whose CRCs cover all 16384
// slots, cover them after any prefix too: the loop ends before n reaches
// 1e6, after about 16384 steps on average.
func sameSlot(key, what string) string {
	want := ClusterSlot(key)
	base := key + ":" + what + ":"
	crc := crc16(0, base)
	for n := 0; ; n++ {
		s := strconv.Itoa(n)
		if crc16(crc, s)&16383 == want {
			return base + s
		}
	}
}

// ClusterSlot is the Redis Cluster slot of key by its whole text, as for a
// key without a hash tag: CRC16 of key modulo 16384.
func ClusterSlot(key string) uint16 { return crc16(0, key) & 16383 }

// crc16 continues crc over s with CRC-16/XMODEM, Redis Cluster's key hash.
func crc16(crc uint16, s string) uint16 {
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
