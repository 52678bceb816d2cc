package withlock

// Reading and breaking a semaphore's slots for Status, List and Break.

import (
	"context"
	"fmt"
)

// Reading and breaking a semaphore's name, for any Client of the
// deployment: the key's marker says how many slots to read.

// viewSlots completes v, the view of a key that holds the marker of n
// slots, with the slots' holders, read at one moment by statusScript (not
// a MULTI/EXEC, which Redis refuses when out of memory).
func (s *single) viewSlots(ctx context.Context, v lockView, n int) (lockView, error) {
	key := v.st.Key
	b, ok := lineBase(key)
	if !ok {
		return v, nil
	}
	keys := make([]string, n)
	for i := range n {
		keys[i] = slotKey(b, i+1)
	}
	res, err := s.rdb.Eval(ctx, statusScript(), keys, n, 0).Slice()
	if err == nil && len(res) != 2*n {
		err = fmt.Errorf("unexpected reply %v", res)
	}
	if err != nil {
		return lockView{}, fmt.Errorf("status of %s: %w", key, err)
	}
	st := v.st
	st.Slots, st.Held, st.Holder = n, false, Holder{}
	v.token = ""
	for i := range n {
		token, ok := res[2*i].(string)
		if !ok {
			continue
		}
		ms, _ := res[2*i+1].(int64)
		h := Holder{Slot: i + 1, ID: holderOf(token), TTL: holderTTL(ms), Since: sinceOf(token)}
		st.Holders = append(st.Holders, h)
		if !st.Held {
			st.Held, st.Holder = true, h
			v.token = token
		}
	}
	return v, nil
}

// brokenSlots completes v, the view of a broken key that held the marker of
// n slots, with the tokens removed from its slots.
func brokenSlots(v lockView, n int, tokens []string) lockView {
	st := v.st
	st.Slots = n
	v.token = ""
	for i, token := range tokens {
		if token == "" {
			continue
		}
		h := Holder{Slot: i + 1, ID: holderOf(token), Since: sinceOf(token)}
		st.Holders = append(st.Holders, h)
		if !st.Held {
			st.Held, st.Holder = true, h
			v.token = token
		}
	}
	return v
}

// A semaphore's name is read, listed, broken and recorded as a plain lock's
// is (single's view reads the marker and then the slots), so these pass on
// to the plain lock's backend; finish is its own (backend_semaphore.go).

func (s *semaphore) view(ctx context.Context, key string) (lockView, error) {
	return s.one.view(ctx, key)
}

func (s *semaphore) views(ctx context.Context, keys []string) ([]lockView, error) {
	return s.one.views(ctx, keys)
}

func (s *semaphore) keys(ctx context.Context, match string) ([]string, error) {
	return s.one.keys(ctx, match)
}

func (s *semaphore) breakLock(ctx context.Context, key, by string) (lockView, error) {
	return s.one.breakLock(ctx, key, by)
}

func (s *semaphore) history(ctx context.Context, key string, n int) ([]string, error) {
	return s.one.history(ctx, key, n)
}

func (s *semaphore) indexed(ctx context.Context, prefix string) ([]string, bool, error) {
	return s.one.indexed(ctx, prefix)
}

func (s *semaphore) unindex(ctx context.Context, prefix string, keys []string) error {
	return s.one.unindex(ctx, prefix, keys)
}

// brokenBy reads the marker Break left on the name's key, which names the
// digest of every slot's token it removed.
func (s *semaphore) brokenBy(ctx context.Context, l *Lock) (string, error) {
	return s.one.brokenBy(ctx, l)
}
