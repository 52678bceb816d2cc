package withlock

// A semaphore's part in the fair line: its check script and what a
// hand-over carries (slot and token).

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// A semaphore's part in the fair line (wait_fair.go): its waiters queue as a
// plain lock's do, and a release or the check hands over a slot, telling
// the waiter which one.

// handed reads "<slot>:<token>", as the slots' release and check scripts
// hand a slot over.
func (s *semaphore) handed(v string) (string, int) {
	i, tok, _ := strings.Cut(v, ":")
	n, err := strconv.Atoi(i)
	if err != nil || n < 1 || n > s.n {
		return "", 0 // not a hand-over of ours: deliver nothing
	}
	return tok, n
}

// mayHold: the name's key holds the marker, not the slots' tokens, so any
// waiter whose entry left the line may have been handed a slot; releasing
// by token (slot 0) finds out.
func (s *semaphore) mayHold(string, string) bool { return true }

// lineCheck runs slotsLineCheckScript: it hands every free slot to the head
// of the line, and an entry that holds a slot reads "<slot>:<token>". The
// PTTL is the holder's whose slot frees first. A name in use with another
// number of slots ends the waits with an error matching ErrSlotsMismatch.
func (s *semaphore) lineCheck(ctx context.Context, key, cid string, _ bool, entries []string) (int64, []lineSeen, error) {
	b, err := s.base(key)
	if err != nil {
		return 0, nil, err
	}
	args := []any{b, s.n, cid, aliveFor.Milliseconds()}
	for _, e := range entries {
		args = append(args, e)
	}
	res, err := s.one.rdb.Eval(ctx, slotsLineCheckScript(), []string{key}, args...).Slice()
	if err != nil {
		return 0, nil, err
	}
	if len(res) == 2 && res[0] == int64(-1) {
		have, _ := res[1].(string)
		n, ok := slotsOf(have)
		if !ok {
			n = 1
		}
		return 0, nil, &slotsError{Key: key, Have: n, Want: s.n}
	}
	if len(res) != 2+len(entries) {
		return 0, nil, fmt.Errorf("unexpected reply %v", res)
	}
	pttl, _ := res[1].(int64)
	seen := make([]lineSeen, len(entries))
	for i, r := range res[2:] {
		switch r := r.(type) {
		case int64:
			seen[i].pos = r
		case string:
			_, seen[i].slot = s.handed(r)
			seen[i].handed, seen[i].pos = seen[i].slot > 0, -1
		}
	}
	return pttl, seen, nil
}
