package withlock

// Replacing a running holder (LockOptions.Replace): the marker that asks it
// to stop, read by its renewals, and the waiter that goes first in line.

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/keys"
)

// renewed reads the reply v (or err) of the renewal scripts for the lock
// key key: nil when renewed, ErrLockNotHeld when the lock is not ours, a
// *replacedError matching ErrReplaced when it was renewed but a replacer
// asked its holder to stop.
func renewed(key string, v any, err error) error {
	if err != nil {
		return opError("extend", key, err)
	}
	switch v := v.(type) {
	case int64:
		if v == 1 {
			return nil
		}
	case string:
		return &replacedError{key: key, by: v}
	}
	return ErrLockNotHeld
}

// replacedError is Extend's answer for a lock that a replacer asked its
// holder to give up: it was renewed all the same.
type replacedError struct{ key, by string }

func (e *replacedError) Error() string {
	return fmt.Sprintf("lock %s replaced by %s", e.key, e.by)
}

func (e *replacedError) Unwrap() error { return ErrReplaced }

// replacedBy is who replaced the lock, from an error of Extend; "" when
// none did.
func replacedBy(err error) string {
	var re *replacedError
	if errors.As(err, &re) {
		return re.by
	}
	return ""
}

// errReplaceUnsupported is Acquire's answer to LockOptions.Replace where
// the fair line cannot put the replacer first.
var errReplaceUnsupported = fmt.Errorf("%w: LockOptions.Replace needs the fair line: one Redis deployment (not a quorum), a name with a line, and Redis 7.0 or newer", errors.ErrUnsupported)

// lineOptions are opts for a replacer's wait in the fair line: without
// Fence and MinReplicas, which confirmReplacer adds once the lock is ours.
func lineOptions(opts *LockOptions) *LockOptions {
	if opts == nil || !opts.Replace || (!opts.Fence && opts.MinReplicas == 0) {
		return opts
	}
	o := *opts
	o.Fence, o.MinReplicas = false, 0
	return &o
}

// confirmReplacer completes l, which a replacer got in the fair line (by
// its first try or a hand-over, both without fencing or replicas), as an
// acquisition with opts would have taken it: its fencing number drawn, and
// acknowledged by opts.MinReplicas replicas. On failure l is released
// (handing it on) and the error says why.
func (c *Client) confirmReplacer(ctx context.Context, l *Lock, opts *LockOptions) (*Lock, error) {
	if !opts.Fence && opts.MinReplicas == 0 && l.slot == 0 {
		return l, nil
	}
	s, key := replacerKey(c.b, l)
	if s == nil {
		return nil, fmt.Errorf("acquire %s: %w", l.key, errReplaceUnsupported)
	}
	err := s.confirm(ctx, l, key, opts)
	if err != nil {
		_ = c.b.release(context.WithoutCancel(ctx), l, 0)
		return nil, err
	}
	return l, nil
}

// replaceRefused is the error of an Acquire of want with opts.Replace on
// b that cannot put the replacer first, or nil; it is checked before the
// holder is asked to stop.
func replaceRefused(b backend, want *Lock, opts *LockOptions) error {
	_, sem := b.(*semaphore)
	switch s, _ := replacerKey(b, want); {
	case s == nil || !keys.HasLine(want.key):
		return fmt.Errorf("acquire %s: %w", want.key, errReplaceUnsupported)
	case sem && opts.MinReplicas > 0:
		return unsupported(fmt.Sprintf("acquire %s: a semaphore does not wait for replicas (MinReplicas)", want.key))
	}
	return nil
}

// replacerKey is the deployment of b and the key that holds l's token:
// the lock key, or a semaphore's slot; nil for a backend without a line.
func replacerKey(b backend, l *Lock) (*single, string) {
	switch b := b.(type) {
	case *single:
		return b, l.key
	case *semaphore:
		base, _ := keys.LineBase(l.key)
		return b.one, keys.Slot(base, l.slot)
	}
	return nil, ""
}

// confirm runs replaceConfirmScript for l's token in key, then, with
// opts.MinReplicas, WAIT on the same connection (acquireReplicated).
func (s *single) confirm(ctx context.Context, l *Lock, key string, opts *LockOptions) error {
	fence := "0"
	if opts.Fence {
		fence = "1"
	}
	var rdb setter = s.rdb
	ttl := int64(0)
	if opts.MinReplicas > 0 {
		conn, err := stickyConn(ctx, s.rdb, l.key)
		if err != nil {
			return fmt.Errorf("acquire %s: %w", l.key, err)
		}
		defer conn.Close()
		rdb, ttl = conn, l.ttl.Milliseconds() // a write for WAIT to count, without a fence
	}
	mine := ""
	if l.slot > 0 {
		mine = l.c.breaker() + " "
	}
	n, err := rdb.Eval(ctx, replaceConfirmScript(), []string{key, keys.Fence(l.key), keys.Replaced(l.key)}, l.token, ttl, fence, mine).Int64()
	switch {
	case errors.Is(err, redis.Nil):
		return fmt.Errorf("acquire %s: it expired before it was confirmed: %w", l.key, ErrLockNotHeld)
	case isWrongType(err):
		return wrongType(ctx, s.rdb, keys.Fence(l.key), "fence counter", err)
	case err != nil:
		return fmt.Errorf("acquire %s: %w", l.key, err)
	}
	l.fence = n
	if opts.MinReplicas == 0 {
		return nil
	}
	conn := rdb.(*redis.Conn)
	timeout := opts.ReplicaTimeout
	if timeout <= 0 {
		timeout = defaultReplicaTimeout
	}
	acks, err := conn.Wait(ctx, opts.MinReplicas, timeout).Result()
	switch {
	case err != nil:
		return fmt.Errorf("wait for replicas of %s: %w", l.key, err)
	case acks < int64(opts.MinReplicas):
		return &notReplicatedError{key: l.key, want: opts.MinReplicas, got: int(acks)}
	}
	return nil
}

// queueReplace sends, in the join's pipeline p and after the waiter's
// LPUSH of entry to the head of r's line, the script that marks r's
// holder as replaced by by.
func queueReplace(ctx context.Context, p redis.Pipeliner, r *room, by, entry string) *redis.Cmd {
	paused, _ := keys.Pause(r.key) // r has a line: its key has a base
	return p.Eval(ctx, replaceScript(), []string{r.key, keys.Replaced(r.key), paused, r.queue()}, by, entry)
}
