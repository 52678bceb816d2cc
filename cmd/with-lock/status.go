package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	withlock "github.com/with-lock/with-lock"
)

// Exit codes of --status.
const (
	exitStatusHeld = 0
	exitStatusFree = 1
)

// statusJSON is --status --json's output, one object on one line.
type statusJSON struct {
	Key    string `json:"key"`
	Held   bool   `json:"held"`
	Holder string `json:"holder,omitempty"` // "<host>:<pid>"
	Host   string `json:"host,omitempty"`
	PID    int    `json:"pid,omitempty"`
	TTLMs  int64  `json:"ttl_ms"`          // remaining time; -1: no expiry
	Fence  int64  `json:"fence,omitempty"` // last fencing number drawn
}

// status prints who holds the lock, for how long and its fencing number,
// and exits 0 when it is held, 1 when it is free.
func (r *runner) status() int {
	locker, closeRedis, err := newLocker(r.cfg) // the same deployment the lock is taken on
	if err != nil {
		warn("%v", err)
		return exitConfig
	}
	defer closeRedis()
	r.locker = locker
	ctx, cancel := context.WithTimeout(context.Background(), 2*r.cfg.RedisTimeout)
	defer cancel()
	st, err := r.locker.Status(ctx, r.cfg.Name)
	if err != nil {
		code := redisExit(err)
		warn("%s%s", r.inUserWords(err), hint(code, err))
		return code
	}
	if r.cfg.JSON {
		out := statusJSON{Key: st.Key, Held: st.Held, Holder: st.Holder, TTLMs: st.TTL.Milliseconds(), Fence: st.Fence}
		if st.TTL < 0 {
			out.TTLMs = -1
		}
		if i := strings.LastIndexByte(st.Holder, ':'); i > 0 {
			out.Host = st.Holder[:i]
			out.PID, _ = strconv.Atoi(st.Holder[i+1:])
		}
		b, err := json.Marshal(out)
		if err != nil {
			warn("encode status: %v", err)
			return exitInternal
		}
		fmt.Println(string(b))
	} else {
		fmt.Println(statusLine(st))
	}
	if st.Held {
		return exitStatusHeld
	}
	return exitStatusFree
}

func statusLine(st *withlock.Status) string {
	var b strings.Builder
	switch {
	case !st.Held:
		fmt.Fprintf(&b, "%s is free", st.Key)
	case st.TTL < 0:
		fmt.Fprintf(&b, "%s is held by %s, with no expiry", st.Key, st.Holder)
	default:
		fmt.Fprintf(&b, "%s is held by %s, expires in %s", st.Key, st.Holder, st.TTL.Round(time.Millisecond))
	}
	if st.Fence > 0 {
		fmt.Fprintf(&b, ", fence %d", st.Fence)
	}
	return b.String()
}
