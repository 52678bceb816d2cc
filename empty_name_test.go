package withlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/redistest"
)

// A lock called "" is refused with ErrEmptyName by every entry point, on a
// plain lock, a semaphore and a quorum, and touches no key: its key would
// be the bare prefix, one lock shared by every caller that forgot a name.
func TestEmptyNameIsRefused(t *testing.T) {
	rdb := startRedis(t)
	ctx := context.Background()
	sem, err := withlock.NewSemaphore(rdb, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	quorum, err := withlock.NewQuorum([]redis.UniversalClient{rdb, redistest.Start(t).Client(), redistest.Start(t).Client()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		client *withlock.Client
	}{{"lock", withlock.New(rdb, nil)}, {"semaphore", sem}, {"quorum", quorum}} {
		for _, call := range []struct {
			name string
			do   func(*withlock.Client) error
		}{
			{"TryAcquire", func(l *withlock.Client) error { _, err := l.TryAcquire(ctx, "", time.Second, nil); return err }},
			{"Acquire", func(l *withlock.Client) error { _, err := l.Acquire(ctx, "", time.Second, nil); return err }},
			{"Do", func(l *withlock.Client) error {
				return l.Do(ctx, "", time.Second, nil, func(context.Context, *withlock.Lock) error {
					t.Error("Do ran fn for an empty name")
					return nil
				})
			}},
			{"Do waiting", func(l *withlock.Client) error {
				return l.Do(ctx, "", time.Second, &withlock.DoOptions{Wait: true}, func(context.Context, *withlock.Lock) error {
					t.Error("Do ran fn for an empty name")
					return nil
				})
			}},
			{"Status", func(l *withlock.Client) error { _, err := l.Status(ctx, ""); return err }},
			{"Break", func(l *withlock.Client) error { _, err := l.Break(ctx, ""); return err }},
		} {
			t.Run(c.name+"/"+call.name, func(t *testing.T) {
				if err := call.do(c.client); !errors.Is(err, withlock.ErrEmptyName) {
					t.Errorf("err = %v, want ErrEmptyName", err)
				}
				if n := rdb.DBSize(ctx).Val(); n != 0 {
					keys, _ := rdb.Keys(ctx, "*").Result()
					t.Errorf("keys written: %q", keys)
				}
			})
		}
	}
}
