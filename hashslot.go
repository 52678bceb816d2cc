package withlock

// Side keys in the lock key's Cluster hash slot (the fence counter, records,
// markers) and the CRC16 that checks it.

import (
	"strconv"
	"strings"
)

// fenceKey is the key of the fencing counter of the lock key key. It lies in
// the same Redis Cluster slot as key, so both can be written by one script:
// "{key}:fence" (docs/production-redis.md documents it for ACLs).
func fenceKey(key string) string { return sideKey(key, "fence") }

// sideKey is the key called what beside the lock key key, in its Redis
// Cluster slot: "{key}:what", or "key:what" when key has a hash tag.
func sideKey(key, what string) string {
	// A key's slot comes from its first "{...}" if there is a non-empty one,
	// else from the whole key. Keep that hash tag, or make the whole key one.
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			return key + ":" + what
		}
	}
	if strings.Contains(key, "}") { // it would end the tag early
		return sameSlotKey(key, what)
	}
	return "{" + key + "}:" + what
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
