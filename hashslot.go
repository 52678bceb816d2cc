package withlock

// The hash-tag rule, written once: side keys in the lock key's Cluster hash
// slot (the fence counter, records, markers, the fair line's base) and the
// CRC16 that checks it. The scripts are given what it decides (the line's
// base, the waiting mark), never re-derive it.

import (
	"strconv"
	"strings"
)

// fenceKey is the key of the fencing counter of the lock key key. It lies in
// the same Redis Cluster slot as key, so both can be written by one script:
// "{key}:fence" (docs/production-redis.md documents it for ACLs).
func fenceKey(key string) string { return sideKey(key, "fence") }

// hashTagged reports whether key's Cluster slot comes from a hash tag: a
// key's slot comes from its first "{...}" if there is a non-empty one, else
// from the whole key. Keys beside it keep that hash tag.
func hashTagged(key string) bool {
	open := strings.IndexByte(key, '{')
	return open >= 0 && strings.IndexByte(key[open+1:], '}') > 0
}

// taggable reports whether a key without a hash tag can be made one of its
// own, "{key}": not when it contains '}', which would end the tag early.
func taggable(key string) bool { return !strings.Contains(key, "}") }

// lineBase is the hash-tagged base of names beside key in its slot: key
// itself when it has a hash tag, else "{key}"; false for a key with '}' but
// no hash tag, which has none (so no fair line and no semaphore: such a key
// waits without a line).
func lineBase(key string) (string, bool) {
	switch {
	case hashTagged(key):
		return key, true
	case taggable(key):
		return "{" + key + "}", true
	}
	return "", false
}

// hasLine reports whether key has a line: lineBase without building it.
func hasLine(key string) bool { return hashTagged(key) || taggable(key) }

// lineArg is what the line's check is given for key's fair line: its
// base, or "" for a key that has none.
func lineArg(key string) string {
	b, _ := lineBase(key)
	return b
}

// waitMark is the key of key's waiting mark, "<base>:w": it exists while
// someone may be waiting for key, so that a release with nobody waiting
// skips the line and the release message (releaseScript). "" for a key
// without a line base, whose releases always publish.
func waitMark(key string) string {
	if b, ok := lineBase(key); ok {
		return b + ":w"
	}
	return ""
}

// sideKey is the key called what beside the lock key key, in its Redis
// Cluster slot: "{key}:what", or "key:what" when key has a hash tag.
func sideKey(key, what string) string {
	switch {
	case hashTagged(key):
		return key + ":" + what
	case taggable(key):
		return "{" + key + "}:" + what
	}
	return sameSlotKey(key, what)
}

// sameSlotKey returns a side key called what in the Redis Cluster slot of
// key, a key without a hash tag that contains '}', so that no tag can hold
// it: such a key's slot is CRC16 of the whole key. It appends a number that
// makes the side key hash to that slot; the result has no tag either, as
// nothing appended is a brace.
//
// CRC16 is linear, so the six-digit numbers, whose CRCs cover all 16384
// slots, cover them after any prefix too: the loop ends before n reaches
// 1e6, after about 16384 steps on average.
func sameSlotKey(key, what string) string {
	want := slot(0, key)
	base := key + ":" + what + ":"
	crc := crc16(0, base)
	for n := 0; ; n++ {
		s := strconv.Itoa(n)
		if slot(crc, s) == want {
			return base + s
		}
	}
}

// slot continues crc over s and returns the Redis Cluster slot it gives.
func slot(crc uint16, s string) uint16 { return crc16(crc, s) & 16383 }

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
