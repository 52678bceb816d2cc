package withlock

// The Lua scripts in lua/, embedded once and each read on its first use;
// what each script does is documented at its variable.

import (
	"context"
	"embed"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/luacode"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// lazyScript returns the text of lua/name, read when first asked for:
// a process reads only the scripts it sends (a CLI run, three or four of
// them), not every one at start-up. A missing script is a build mistake,
// found by the test that reads them all (TestEveryScriptIsEmbedded).
func lazyScript(name string) func() string {
	return sync.OnceValue(func() string {
		b, err := luaFiles.ReadFile("lua/" + name)
		if err != nil {
			panic("withlock: " + err.Error())
		}
		return string(b)
	})
}

// withHands returns the text of lua/name after the snippets': a script
// that hands a free lock or free slots to the fair line calls handKey or
// handSlot, each written once. The composed text is sent without its
// comment-only lines (luacode.Strip): the release script travels with
// every release, and the snippets' comments alone made up a quarter of
// it; lua/ keeps them for readers.
func withHands(name string, snippets ...func() string) func() string {
	body := lazyScript(name)
	return sync.OnceValue(func() string {
		var s strings.Builder
		for _, snippet := range snippets {
			s.WriteString(luacode.Strip(snippet()))
		}
		s.WriteString(luacode.Strip(body()))
		return s.String()
	})
}

// keyHand is lua/key_hand.lua, which defines handKey(k, b, cid), the
// hand-over of a release, the line's check and a break: it pops entries off
// the fair line "<b>:q" until one can take the key k (a live waiter, the
// releasing Client's own, cid, counted live; a far one for 3 s with the
// next nudged; a pending pause), sets k to it and returns it, with true for
// a pause; nil when nobody live waits (the line is then empty).
var keyHand = lazyScript("key_hand.lua")

// slotsHand is lua/slots_hand.lua, which defines handSlot(k, b, i, want):
// it pops entries off the fair line "<b>:q" until one belongs to a live
// Client (its liveness key "<b>:c:<id>" exists and its channel "<b>:w:<id>"
// has a subscriber, which is published "<i>:<token>"), sets slot i
// ("<b>:s:<i>") to that token for its TTL and the name's key k to the
// marker want for at least as long, and returns the token; nil when nobody
// live waits (the line is then empty).
var slotsHand = lazyScript("slots_hand.lua")

// The scripts are sent with EVAL, never EVALSHA first: a one-shot process
// such as the CLI would otherwise pay an extra NOSCRIPT round trip, and Redis
// caches the compiled script by its digest either way. The one exception is
// a Client's releases after its first.
var (
	// releaseScript releases a lock only if it is still ours, in one atomic
	// step. KEYS[1] is the lock key, ARGV[1] our token, ARGV[2] the
	// key's waiting mark (waitMark: "<base>:w", where the base is "{key}"
	// or the key itself when it has a hash tag; "" for a key with '}' but
	// no hash tag, which has no line), ARGV[3], when sent, the milliseconds
	// the key must still live (min-hold) or 0, and ARGV[4], sent only by a
	// Client that has waiters of its own for the key, that Client's id in
	// the fair line (wait_fair.go), or ownWaitersOutsideTheLine. A plain
	// release sends only the first two (releaseArgs). It returns 0 when
	// the lock was not ours (the key is left untouched). With a min-hold
	// left, a short job keeps the key until it passes, so a server whose
	// cron fires late does not run the same job again; it returns 1.
	//
	// A release deletes the key's lease mark "<base>:lease" (keys.Lease,
	// built from the mark's base; lease.go), which says a lease is out: one
	// found when the lock is taken tells of a lease that lapsed. With
	// ARGV[4] a hand-over leaves it for the waiter to read, which costs
	// that frequent hand-over no command; a release that hands nothing
	// deletes it with the key.
	//
	// Otherwise, without ARGV[4], one DEL removes the key, its mark and its
	// lease mark: when there were neither, nobody waits, and it returns 2
	// (releasedUnwatched) having run only GET and DEL, as a bare
	// compare-and-delete does; a lease mark alone costs an empty line's
	// LPOP and the release message, as a mark does. Every
	// waiter keeps the mark while it waits: one in the fair line with its
	// liveness key, one outside it with each try (Lock.announce).
	//
	// With a mark, or with ARGV[4], it serves the fair line (wait_fair.go):
	// it pops entries "<client id>|<ttl ms>|<token>" off "<base>:q" until
	// one belongs to a live Client: the releaser's own (ARGV[4]), or one
	// whose liveness key "<base>:c:<id>" exists and whose sharded channel
	// "<base>:w:<id>" has a subscriber to take the token published on it.
	// It sets the key to that waiter's token with its TTL, sets the mark
	// again (it lives aliveFor, 3000 ms, for those still waiting) if its
	// DEL took it, and returns the token: the lock never comes free while a
	// live waiter is queued. A Client without a liveness key but with a far
	// key "<base>:f:<id>" (its waiters far back, wait_fair_far.go) was alive
	// lately: its waiter gets the lock for at most 3000 ms, published as
	// "~<token>" so that it renews it, and the entry now at the head is
	// published "?<its token>", so that it checks the line once that much
	// has passed, should the other be frozen. With nobody live in line it deletes the key,
	// publishes on a channel named exactly like the key (which wakes
	// waiters that do not queue: quorum Clients, fenced acquisitions, names
	// without a line) and returns 1. With ARGV[4] the mark is left as it
	// is: the Client's own waiters are not marking it while one of them is
	// handed the lock. An entry "0|0|<pause>" that a pause put first in
	// line (pauseScript) takes the key for the rest of the pause instead,
	// and the script publishes and returns 1. The line's keys are built from the base, not
	// declared in KEYS, as they depend on the entries popped; the base puts
	// them in the key's Cluster slot. Its explanations live here rather
	// than in release.lua: the script's text travels with every release
	// and Redis hashes it each time, so the Lua is kept short, and its
	// comment lines are not sent (withHands).
	releaseScript = withHands("release.lua", keyHand)
	extendScript  = lazyScript("extend.lua")
	pttlScript    = lazyScript("pttl.lua")
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
	acquireFencedScript = lazyScript("acquire_fenced.lua")
	claimScript         = lazyScript("claim.lua")
	// lineCheckScript is the fair line's check (wait_fair.go): KEYS[1] is the
	// lock key, ARGV[1] the base of its line (lineArg), ARGV[2] the
	// Client's id, ARGV[3] the life in ms of its liveness key and of the
	// key's waiting mark, which it refreshes both, ARGV[4] 0, or when the
	// Client's waiters are all far back (wait_fair_far.go) the life in ms
	// of its far key, which it then refreshes with the mark instead, and
	// ARGV[5:] entries of that Client's waiters. If the key is free (its
	// holder crashed or a min-hold ran out, so no release served the line)
	// it hands the lock to the first live waiter as releaseScript does
	// (handKey), publishing to it even when that is the caller, and turns
	// the key's lease mark, if one was left, into "2" (lease.go: the lease
	// lapsed). It returns the key's holder ("" if free),
	// its PTTL (1, not 0, in its last millisecond, so that the head waiter
	// checks again rather than wait for the poll), and each entry's position in the line (-1 when absent).
	lineCheckScript = withHands("line_check.lua", keyHand)
)

// finishScript ends a run in one EVAL: the release script, then the
// record's writes (finishAround, admin_records.go).
var finishScript = sync.OnceValue(func() string { return finishAround(releaseScript()) })

// Sending the release script by its digest (EVALSHA) once a Client has sent
// it whole.

// releaseDigest is the SHA1 digest of releaseScript, what EVALSHA sends. It
// is computed at a Client's second release, not at package initialization:
// a one-shot process such as the CLI never sends it, and would pay for the
// hash at every start.
var releaseDigest = sync.OnceValue(func() string { return redis.NewScript(releaseScript()).Hash() })

// How a Client sends the release script (single.releaseBy).
const (
	releaseWhole    int32 = iota // no release yet: EVAL
	releaseByDigest              // one EVAL done: EVALSHA, EVAL on NOSCRIPT
	releaseNoDigest              // EVALSHA refused by ACL: EVAL for good
)

// runRelease runs the release script with keys and args. A Client's first release sends
// the whole script with EVAL, which also loads it into the server's cache;
// every later one sends only its 40-byte digest instead of ~1,900 bytes that
// Redis would hash again, and the whole script again when the server answers
// NOSCRIPT (a restart, a failover, SCRIPT FLUSH, another Cluster node). The
// rule is per Client, with no option: a one-shot process such as the CLI
// releases once, so it always sends one plain EVAL (and never pays a
// NOSCRIPT round trip on a fresh server), while a long-lived Client pays the
// whole script once. A user whose ACL allows EVAL but not EVALSHA (the
// least-privilege list in docs/production-redis.md) costs one refused EVALSHA, then EVAL only.
func (s *single) runRelease(ctx context.Context, keys []string, args []any) (any, error) {
	rdb := s.releaser() // roundtrip_senders.go
	if s.releaseBy.Load() == releaseByDigest {
		v, err := rdb.EvalSha(ctx, releaseDigest(), keys, args...).Result()
		switch {
		case err == nil: // HasErrorPrefix allocates even for nil
			return v, nil
		case redis.HasErrorPrefix(err, "NOPERM"):
			s.releaseBy.Store(releaseNoDigest)
		case !redis.HasErrorPrefix(err, "NOSCRIPT"):
			return v, err
		}
	}
	v, err := rdb.Eval(ctx, releaseScript(), keys, args...).Result()
	if err == nil {
		s.releaseBy.CompareAndSwap(releaseWhole, releaseByDigest)
	}
	return v, err
}
