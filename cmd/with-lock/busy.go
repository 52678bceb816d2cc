package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/config"
)

// logWaiting says, with -v, who holds the lock a wait begins for and
// since when. It only reads (Status): Acquire's place in the waiting line
// stays what it would be without -v. A lock that turns out free says
// nothing; Acquire then takes it at once.
func (r *connected) logWaiting(ctx context.Context) {
	if !r.log.verbose {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, r.cfg.RedisTimeout)
	defer cancel()
	st, err := r.locker.Status(sctx, r.cfg.Name)
	if err != nil || !st.Held {
		return // Acquire will say what is wrong, or take the lock
	}
	who := st.Holder.ID
	if s := since(st.Holder.Since, time.Now()); s != "" {
		who += " " + s
	}
	r.log.info("waiting", holderFields(st.Holder),
		"waiting up to %s for %s, held by %s", r.cfg.Wait, st.Key, who)
}

// gaveUp says that a wait ran out: how long it waited, and who holds the
// lock and since when, asked of Redis now (the holder may have changed
// while we waited; renewal keeps its remaining time near the TTL, which
// says little). Hidden by -q, as the busy message.
func (r *connected) gaveUp(err error, waited time.Duration) {
	key := r.locker.Key(r.cfg.Name)
	var held *withlock.NotObtainedError
	errors.As(err, &held)
	f := fields{DurationMs: ms(waited)}
	who := ""
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.RedisTimeout)
	defer cancel()
	st, serr := r.locker.Status(ctx, r.cfg.Name)
	switch {
	case serr == nil && st.Held:
		f = holderFields(st.Holder)
		f.DurationMs = ms(waited)
		who = waitedFor(st, time.Now())
	case serr == nil:
		who = "it was held until just now"
		if held != nil {
			who = "it was held by " + held.Holder.ID + " until just now"
		}
	case held != nil:
		f.Holder = held.Holder.ID
		who = "held by " + held.Holder.ID
	default:
		who = "held by another owner"
	}
	r.log.warn("busy", f, "gave up waiting for %s after %s (-w %s): %s; command not run", key, round(waited), r.cfg.Wait, who)
}

// busy says, unless -q, that the lock is held and the command not run.
// On one deployment it asks Redis again (Status) for what the failed SET
// NX cannot tell: that the holder's run has finished and only --min-hold
// keeps the key, or that the key has no expiry and will never free by
// itself. A quorum is not asked again: a slow member would slow the
// answer.
func (r *connected) busy(err error) {
	if r.log.quiet {
		return
	}
	if msg, ok := pausedMessage(err); ok { // pause.go
		r.log.warn("paused", fields{}, "%s; command not run", msg)
		return
	}
	var held *withlock.NotObtainedError
	if !errors.As(err, &held) {
		r.log.warn("busy", fields{}, "%v; command not run", err)
		return
	}
	f := holderFields(held.Holder)
	msg := err.Error()
	if held.Slots == 0 && r.cfg.Topology() != config.Quorum {
		ctx, cancel := context.WithTimeout(context.Background(), r.cfg.RedisTimeout)
		st, serr := r.locker.Status(ctx, r.cfg.Name)
		cancel()
		if serr == nil && st.Held {
			f = holderFields(st.Holder)
			msg = busyMessage(st, time.Now())
		}
	}
	r.log.warn("busy", f, "%s; command not run", msg)
}

// holderFields are the log fields that name a holder, wherever one is
// reported (busy, waiting, gave up).
func holderFields(h withlock.Holder) fields {
	return fields{Holder: h.ID, Since: rfc3339(h.Since), TTLMs: h.TTL.Milliseconds()}
}

// busyMessage says who holds the lock st describes, since when, and when it
// frees.
func busyMessage(st *withlock.Status, now time.Time) string {
	switch {
	case st.KeptByMinHold:
		return fmt.Sprintf("%s is kept by --min-hold until %s (%s from now): the last run, by %s, has finished",
			st.Key, clock(now.Add(st.Holder.TTL), now), round(st.Holder.TTL), st.Holder.ID)
	case st.Holder.TTL < 0:
		return fmt.Sprintf("%s is held by %s with no expiry: it will never free by itself (see --status; --break removes it)",
			st.Key, owner(st.Holder.ID))
	}
	who := owner(st.Holder.ID)
	if s := since(st.Holder.Since, now); s != "" {
		who += " " + s
	}
	return fmt.Sprintf("%s is held by %s, expires in %s", st.Key, who, round(st.Holder.TTL))
}

// owner names a holder in a sentence: a token in another format has no
// host:pid to show.
func owner(holder string) string {
	if holder == "unknown" {
		return "an unknown owner (a value with-lock did not write)"
	}
	return holder
}

// waitedFor says, after a wait ran out, what keeps the lock st describes:
// as busyMessage, without the key the message already names, and without the
// remaining time, which renewal keeps near the TTL.
func waitedFor(st *withlock.Status, now time.Time) string {
	switch {
	case st.KeptByMinHold:
		return fmt.Sprintf("the last run, by %s, has finished and --min-hold keeps the lock until %s (%s from now)",
			st.Holder.ID, clock(now.Add(st.Holder.TTL), now), round(st.Holder.TTL))
	case st.Holder.TTL < 0:
		return fmt.Sprintf("held by %s with no expiry: it will never free by itself (see --status; --break removes it)",
			owner(st.Holder.ID))
	}
	who := "held by " + owner(st.Holder.ID)
	if s := since(st.Holder.Since, now); s != "" {
		who += " " + s
	}
	return who
}
