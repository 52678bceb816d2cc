package main

import (
	"context"
	"errors"
	"time"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/leftovers"
)

// While the lock is held for what a finished command left running,
// --status and --list say so: hold notes it beside the lock
// (internal/leftovers), and notes it again every third of the TTL, for the
// note lives only as long as the lock had left, and the count of
// processes changes. The release deletes it.

// noteLeftovers stores the note in the background: a slow Redis must not
// hold up hold's loop (signals, the lock's loss). A note that cannot be
// stored costs only what --status shows, so -v says it. While one is on
// its way the next is skipped, so that a hung Redis does not pile them up.
func (h *holding) noteLeftovers(processes int) {
	if !h.noting.CompareAndSwap(false, true) {
		return
	}
	left := leftovers.Note{ExitCode: h.code, Exited: h.exited, Processes: processes}
	lock, r := h.lock.Lock, h.r
	go func() {
		defer h.noting.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), r.cfg.RedisTimeout)
		defer cancel()
		err := leftovers.Store(ctx, lock, left)
		if err != nil && !errors.Is(err, withlock.ErrLockNotHeld) {
			r.log.info("leftovers", fields{}, "--status will not show what the command left running: %s", r.inUserWords(err))
		}
	}()
}

// noteEvery is how often the note is stored again: every third of the
// lock's TTL, as the lock is renewed.
func (h *holding) noteEvery() time.Duration { return max(h.r.cfg.TTL/3, settleTime) }
