package withlock_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/redistest"
)

// A SET sent to a server that then stays stopped for longer than the
// client's timeouts is cleaned up all the same, on a server that needs a
// password and in a database other than 0: the acquisition returns within
// 1.5 read timeouts, the clean-up it queued authenticates, selects the
// database and runs right after the SET once the server resumes. The
// fence counter shows that the SET did land.
func TestAcquireCleanupQueuedForAStoppedServerRunsWhenItResumes(t *testing.T) {
	const password, db = "cleanup-pw-321", 3
	const readTimeout = 500 * time.Millisecond
	for _, tc := range []struct {
		name string
		opts redis.Options
	}{
		{"password", redis.Options{Password: password, DB: db}},
		{"ACL user", redis.Options{Username: "locker", Password: password, DB: db}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			srv := redistest.Start(t, "requirepass", password)
			admin := srv.ClientWith(&redis.Options{Password: password, DB: db})
			if err := admin.Do(ctx, "ACL", "SETUSER", "locker", "on", ">"+password, "~*", "&*", "+@all").Err(); err != nil {
				t.Fatal(err)
			}
			o := tc.opts
			o.MaxRetries, o.DialerRetries = -1, 1
			o.DialTimeout, o.ReadTimeout, o.WriteTimeout = time.Second, readTimeout, readTimeout
			c := withlock.New(srv.ClientWith(&o), nil)
			// A connection in the pool, so the stopped server gets the SET
			// itself rather than the handshake of a new connection.
			if err := mustAcquire(t, c, "warm-up", time.Minute).Release(ctx); err != nil {
				t.Fatal(err)
			}
			srv.Signal(syscall.SIGSTOP)
			start := time.Now()
			_, err := c.TryAcquire(ctx, "job", time.Minute, &withlock.LockOptions{Fence: true})
			took := time.Since(start)
			// Stopped for longer than the old clean-up's three attempts.
			time.Sleep(5 * readTimeout)
			srv.Signal(syscall.SIGCONT)
			if err == nil {
				t.Fatal("TryAcquire on a stopped server succeeded")
			}
			if bound := readTimeout*3/2 + time.Second; took > bound {
				t.Errorf("TryAcquire returned after %s; want at most %s (1.5 read timeouts and a margin)", took, bound)
			}
			deadline := time.Now().Add(3 * time.Second)
			for admin.Exists(ctx, "lock:job").Val() != 0 {
				if time.Now().After(deadline) {
					t.Fatalf("lock:job was left behind, PTTL %s", admin.PTTL(ctx, "lock:job").Val())
				}
				time.Sleep(20 * time.Millisecond)
			}
			if admin.Exists(ctx, "{lock:job}:fence").Val() == 0 {
				t.Fatal("the fence counter is unset: the SET never landed, so this tested nothing")
			}
		})
	}
}
