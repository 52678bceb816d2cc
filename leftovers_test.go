package withlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/leftovers"
	"github.com/with-lock/with-lock/internal/redistest"
)

// Status shows a leftovers note only while its writer holds the lock: not
// once another holder has taken it, though the note is still there; a
// holder that lost the lock cannot write one nor delete the present
// holder's; the present holder's ReleaseAndRecord deletes it. On one
// deployment and on a quorum, where the note is on every node.
func TestStatusShowsLeftoversOnlyOfThePresentHolder(t *testing.T) {
	t.Run("single", func(t *testing.T) {
		rdb := redistest.Start(t).Client()
		leftoversOfThePresentHolder(t, withlock.New(rdb, nil), []*redis.Client{rdb})
	})
	t.Run("quorum", func(t *testing.T) {
		_, admins, c := quorumNodes(t)
		leftoversOfThePresentHolder(t, c, admins)
	})
}

func leftoversOfThePresentHolder(t *testing.T, c *withlock.Client, nodes []*redis.Client) {
	ctx := context.Background()
	// noted is on how many nodes the note is.
	noted := func() (n int) {
		for _, rdb := range nodes {
			n += int(rdb.Exists(ctx, "{lock:left}:left").Val())
		}
		return n
	}
	left := leftovers.Note{ExitCode: 3, Exited: time.Now().Add(-time.Second).Round(0), Processes: 2}

	l, err := c.TryAcquire(ctx, "left", 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := leftovers.Store(ctx, l, left); err != nil {
		t.Fatal(err)
	}
	st, err := c.Status(ctx, "left")
	if err != nil {
		t.Fatal(err)
	}
	if got := leftovers.Of(st); got == nil || got.ExitCode != 3 || got.Processes != 2 || !got.Exited.Equal(left.Exited) {
		t.Errorf("leftovers.Of(Status) = %+v, want %+v", got, left)
	}
	if ttl := nodes[0].PTTL(ctx, "{lock:left}:left").Val(); ttl <= 0 || ttl > 5*time.Second || noted() != len(nodes) {
		t.Errorf("the note lives %s on %d of %d nodes: want the lock's remaining time on all", ttl, noted(), len(nodes))
	}

	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := leftovers.Store(ctx, l, left); !errors.Is(err, withlock.ErrLockNotHeld) {
		t.Errorf("leftovers.Store after the release: %v, want ErrLockNotHeld", err)
	}
	next, err := c.TryAcquire(ctx, "left", 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if noted() != len(nodes) {
		t.Fatal("the first holder's note is gone: the check below would prove nothing")
	}
	if err := leftovers.Store(ctx, l, left); !errors.Is(err, withlock.ErrLockNotHeld) {
		t.Errorf("leftovers.Store by the last holder while another holds the lock: %v, want ErrLockNotHeld", err)
	}
	if st, err := c.Status(ctx, "left"); err != nil || leftovers.Of(st) != nil {
		t.Errorf("Status of the next holder = %+v, %v: want no leftovers (the note is the last holder's)", st, err)
	}

	if err := leftovers.Store(ctx, next, left); err != nil {
		t.Fatal(err)
	}
	if err := l.ReleaseAndRecord(ctx, withlock.Run{ExitCode: 3}, time.Minute); !errors.Is(err, withlock.ErrLockNotHeld) {
		t.Errorf("ReleaseAndRecord by the last holder: %v, want ErrLockNotHeld", err)
	}
	if noted() != len(nodes) {
		t.Error("a holder that no longer holds the lock deleted the present holder's note")
	}
	if err := next.ReleaseAndRecord(ctx, withlock.Run{ExitCode: 3}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := noted(); n != 0 {
		t.Errorf("ReleaseAndRecord left the leftovers note behind on %d nodes", n)
	}
}
