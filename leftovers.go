package withlock

// The leftovers note (internal/leftovers), beside a held lock: the run's own
// command has exited and processes it started still run under the lock.
// The CLI holds the lock until its job's last process ends; Status reads
// the note so that --status shows why. Each backend's part of storing it
// is here; its script (leftScript) is declared in lock.go.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/keys"
	"github.com/with-lock/with-lock/internal/leftovers"
)

// leftNote is a leftovers.Note as stored at keys.Left, with a digest of the
// holder's token (tokenTag): a note outlived by its holder's lock names
// another holder than the present one and is not shown.
type leftNote struct {
	leftovers.Note
	Tag string `json:"token_sha256"`
}

// leftNoter is a backend that can store a leftovers note: one deployment
// or a quorum.
type leftNoter interface {
	noteLeft(ctx context.Context, l *Lock, note string) (bool, error)
}

func (s *single) noteLeft(ctx context.Context, l *Lock, note string) (bool, error) {
	n, err := s.rdb.Eval(ctx, leftScript(), []string{l.key, keys.Left(l.key)}, l.token, note).Int64()
	if err != nil {
		return false, fmt.Errorf("leftovers note on %s: %w", l.key, err)
	}
	return n == 1, nil
}

// noteLeft on a quorum stores the note on every node that holds the lock,
// and reports it held when a majority does.
func (q *quorum) noteLeft(ctx context.Context, l *Lock, note string) (bool, error) {
	res := eachNode(q.nodes, func(rdb redis.UniversalClient) nodeResult {
		n, err := rdb.Eval(ctx, leftScript(), []string{l.key, keys.Left(l.key)}, l.token, note).Int64()
		return nodeResult{n: n, err: err}
	})
	yes, no, errs := tally(res)
	if yes >= q.need {
		return true, nil
	}
	if err := q.quorumError("leftovers note on", l, yes, no, errs); !errors.Is(err, ErrLockNotHeld) {
		return false, err
	}
	return false, nil
}

func init() {
	leftovers.Implement(leftovers.Backend{
		Store: func(ctx context.Context, lock any, n leftovers.Note) error { return lock.(*Lock).noteLeftovers(ctx, n) },
		Of:    func(status any) *leftovers.Note { return status.(*Status).leftovers },
	})
}

// noteLeftovers is leftovers.Store.
func (l *Lock) noteLeftovers(ctx context.Context, left leftovers.Note) error {
	b, ok := l.c.b.(leftNoter)
	if !ok || l.slot > 0 {
		return unsupported("leftovers note on " + l.key + ": a semaphore keeps none")
	}
	raw, err := json.Marshal(leftNote{Note: left, Tag: tokenTag(l.token)})
	if err != nil {
		return fmt.Errorf("encode the leftovers note of %s: %w", l.key, err)
	}
	held, err := b.noteLeft(ctx, l, string(raw))
	switch {
	case err != nil:
		return err
	case !held:
		return fmt.Errorf("leftovers note on %s: %w", l.key, ErrLockNotHeld)
	}
	return nil
}

// leftovers is the note among raws written by the holder of token, or
// nil.
func leftoversOf(raws []string, token string) *leftovers.Note {
	for _, raw := range raws {
		var n leftNote
		if json.Unmarshal([]byte(raw), &n) == nil && token != "" && n.Tag == tokenTag(token) {
			return &n.Note
		}
	}
	return nil
}
