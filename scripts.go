package withlock

import _ "embed"

// The scripts are always sent with EVAL, never EVALSHA first: a one-shot
// process such as the CLI would otherwise pay an extra NOSCRIPT round trip,
// and Redis caches the compiled script by its digest either way.
var (
	// releaseScript releases a lock only if it is still ours, in one atomic
	// step. KEYS[1] is the lock key, ARGV[1] our token, ARGV[2] the
	// milliseconds the key must still live (min-hold) or 0. It returns 1 when
	// the lock was ours and 0 when it was not (the key is left untouched).
	// With a min-hold left, a short job keeps the key until it passes, so a
	// server whose cron fires late does not run the same job again.
	// Otherwise it deletes the key and publishes on a channel named exactly
	// like the key, which wakes waiting Acquires at once (one ACL pattern
	// covers both). Its explanations live here rather than in release.lua:
	// the script's text travels with every release and Redis hashes it each
	// time, so the Lua is kept short.
	//go:embed release.lua
	releaseScript string
	//go:embed extend.lua
	extendScript string
	//go:embed pttl.lua
	pttlScript string
	// acquireFencedScript takes a lock and draws its fencing number in one
	// atomic step. KEYS[1] is the lock key, KEYS[2] its fence counter (same
	// slot), ARGV[1] our token, ARGV[2] the TTL in ms. It returns the number,
	// or nil when the lock is held, which draws nothing.
	//
	// The number is max(counter+1, the server's TIME in microseconds), and
	// is stored back as the counter. So it strictly increases on one server,
	// and it keeps increasing when the counter is lost, by a restart without
	// persistence or a failover to a replica that missed the last draws, as
	// long as the new server's clock is not behind the old one's by more
	// than the time between the last draw there and the next one here.
	// Microseconds since 1970 stay below 2^53 (until the year 2255), so Lua's
	// doubles hold them exactly; %.0f writes them without an exponent.
	//
	// The counter is checked before anything is written: a counter that is
	// not a decimal integer below 2^53 (another program's key) fails the
	// script with a WRONGTYPE error, as a counter of another type already
	// does at its GET, and leaves the lock free.
	//go:embed acquire_fenced.lua
	acquireFencedScript string
	//go:embed claim.lua
	claimScript string
)
