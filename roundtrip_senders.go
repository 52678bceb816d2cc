package withlock

// What sends through shared round trips (roundtrip.go): an acquisition's
// setter and a release's script sender, each sending a lone command at
// once and the others in the next shared pipeline; and how a release's
// script is sent, whole or by its digest.

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// sharedSetter is the setter of an acquisition of the Lock it is: its
// commands share the round trips of its Client's backend (tripsOf).
type sharedSetter Lock

// share returns rdb, or where rdb is s's own plain client, a setter that
// shares round trips for the acquisition of l.
func (s *single) share(rdb pipeSetter, l *Lock) pipeSetter {
	if s.trips.rdb == nil || rdb != pipeSetter(s.trips.rdb) || tripsOf(l) != &s.trips {
		return rdb
	}
	return (*sharedSetter)(l) // no allocation: every acquisition asks
}

// tripsOf is the round trips of l's Client's backend on one deployment, or
// nil.
func tripsOf(l *Lock) *roundTrips {
	switch b := l.c.b.(type) {
	case *single:
		return &b.trips
	case *semaphore:
		return &b.one.trips
	}
	return nil
}

// scriptSender sends a script: the client, or a releaseSender.
type scriptSender interface {
	Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd
	EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd
}

// releaser is what a release's script is sent through: s's round trips
// where its client is a plain one. A release that lands needs no clean-up.
func (s *single) releaser() scriptSender {
	if s.trips.rdb == nil {
		return s.rdb
	}
	return (*releaseSender)(&s.trips) // no allocation: every release asks
}

// releaseSender sends release scripts through shared round trips.
type releaseSender roundTrips

func (r *releaseSender) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return (*roundTrips)(r).eval(ctx, script, keys, args, nil)
}

func (r *releaseSender) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	return (*roundTrips)(r).evalSha(ctx, sha, keys, args, nil)
}

func (sh *sharedSetter) SetNX(ctx context.Context, key string, value any, expiration time.Duration) *redis.BoolCmd {
	rt := tripsOf((*Lock)(sh))
	if rt.alone() {
		defer rt.done()
		return rt.rdb.SetNX(ctx, key, value, expiration)
	}
	var cmd *redis.BoolCmd
	rt.share(ctx, func(p redis.Pipeliner) { cmd = p.SetNX(ctx, key, value, expiration) }, (*Lock)(sh), false)
	return cmd
}

func (sh *sharedSetter) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return tripsOf((*Lock)(sh)).eval(ctx, script, keys, args, (*Lock)(sh))
}

func (sh *sharedSetter) Pipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error) {
	rt := tripsOf((*Lock)(sh))
	if rt.alone() {
		defer rt.done()
		return rt.rdb.Pipelined(ctx, fn)
	}
	var cmds []redis.Cmder
	rt.share(ctx, func(p redis.Pipeliner) {
		// The acquisition's functions queue and return nil. The commands
		// are copied out: p is used again once they are answered.
		_ = fn(p)
		cmds = append(cmds[:0], p.Cmds()...)
	}, (*Lock)(sh), true) // fn may queue other commands a second time: it runs once
	for _, cmd := range cmds {
		if err := cmd.Err(); err != nil {
			return cmds, err
		}
	}
	return cmds, nil
}

// eval is EVAL through shared round trips, l as share's.
func (rt *roundTrips) eval(ctx context.Context, script string, keys []string, args []any, l *Lock) *redis.Cmd {
	if rt.alone() {
		defer rt.done()
		return rt.rdb.Eval(ctx, script, keys, args...)
	}
	var cmd *redis.Cmd
	rt.share(ctx, func(p redis.Pipeliner) { cmd = p.Eval(ctx, script, keys, args...) }, l, false)
	return cmd
}

// evalSha is EVALSHA through shared round trips, l as share's.
func (rt *roundTrips) evalSha(ctx context.Context, sha string, keys []string, args []any, l *Lock) *redis.Cmd {
	if rt.alone() {
		defer rt.done()
		return rt.rdb.EvalSha(ctx, sha, keys, args...)
	}
	var cmd *redis.Cmd
	rt.share(ctx, func(p redis.Pipeliner) { cmd = p.EvalSha(ctx, sha, keys, args...) }, l, false)
	return cmd
}

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
