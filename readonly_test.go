package withlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// TestReadOnlyIsLost demotes the master that holds a lock after its replica
// took over (a failover): the old master still has the key but answers
// READONLY, and the lock counts as lost.
func TestReadOnlyIsLost(t *testing.T) {
	ctx := context.Background()
	master := redistest.Start(t, "repl-diskless-sync-delay", "0")
	replica := redistest.Start(t, "replicaof", fmt.Sprintf("127.0.0.1 %d", master.Port), "repl-diskless-sync-delay", "0")
	c := withlock.New(master.ClientWith(&redis.Options{MaxRetries: -1}), nil)

	var locks []*withlock.Lock
	for i := range 3 {
		l, err := c.TryAcquire(ctx, fmt.Sprint("ro-", i), time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		locks = append(locks, l)
	}
	mc, rc := master.Client(), replica.Client()
	clitest.Eventually(t, 20*time.Second, "replica has the keys", func() bool {
		n, _ := rc.Exists(ctx, locks[0].Key(), locks[1].Key(), locks[2].Key()).Result()
		return n == 3
	})
	// The failover: promote the replica, demote the master under it.
	if err := rc.ReplicaOf(ctx, "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	if err := mc.ReplicaOf(ctx, "127.0.0.1", fmt.Sprint(replica.Port)).Err(); err != nil {
		t.Fatal(err)
	}
	clitest.Eventually(t, 20*time.Second, "old master in sync as a replica", func() bool {
		info, _ := mc.Info(ctx, "replication").Result()
		return strings.Contains(info, "master_link_status:up")
	})
	if v, _ := mc.Get(ctx, locks[0].Key()).Result(); v != locks[0].Token() {
		t.Fatalf("old master lost the key (%q): the test would not reach READONLY", v)
	}

	for name, op := range map[string]func(*withlock.Lock) error{
		"Extend":  func(l *withlock.Lock) error { return l.Extend(ctx, time.Minute) },
		"Release": func(l *withlock.Lock) error { return l.Release(ctx) },
	} {
		l := locks[0]
		if name == "Release" {
			l = locks[1]
		}
		err := op(l)
		if !errors.Is(err, withlock.ErrLockNotHeld) || !strings.Contains(err.Error(), "READONLY") {
			t.Errorf("%s on a demoted master = %v, want ErrLockNotHeld saying READONLY", name, err)
		}
	}
}
