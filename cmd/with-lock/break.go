package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	withlock "github.com/with-lock/with-lock"
)

// Exit codes of --break.
const (
	exitBroken  = 0 // a held lock was removed
	exitNotHeld = 1 // there was nothing to remove
)

// breakLock removes the lock whoever holds it and says on stdout whose it
// was; the holder finds out at its next renewal and stops its command
// (125). It exits 0 when it removed a held lock, 1 when none was held.
func (r *connected) breakLock() int {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.RedisTimeout) // the whole wait, as the message says
	defer cancel()
	st, err := r.locker.Break(ctx, r.cfg.Name)
	var paused *withlock.NotObtainedError
	if errors.As(err, &paused) && paused.Paused != nil {
		r.log.print(levelWarn, "warning", fields{}, "%s is not held: it is %s; nothing removed (--resume %s ends the pause)",
			paused.Key, paused.Paused.Describe(time.Now()), r.cfg.Name)
		return exitNotHeld
	}
	if err != nil {
		return r.redisFailed(err)
	}
	r.warnUnanswered("the lock is removed", st) // unanswered.go
	if !st.Held {
		// The answer to --break, as its exit code says: shown with -q too.
		r.log.print(levelWarn, "warning", fields{}, "%s was not held; nothing removed", st.Key)
		return exitNotHeld
	}
	if len(st.Holders) > 0 {
		who := make([]string, len(st.Holders))
		for i, h := range st.Holders {
			who[i] = fmt.Sprintf("slot %d by %s", h.Slot, h.ID)
		}
		fmt.Printf("removed %s, held in %s\n", st.Key, strings.Join(who, ", "))
		return exitBroken
	}
	fmt.Printf("removed %s, held by %s\n", st.Key, st.Holder.ID)
	return exitBroken
}
