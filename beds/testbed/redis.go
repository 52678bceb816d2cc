package testbed

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// Wait bounds every wait of a bed's test for something to happen; a hang
// fails in seconds, not at the test binary's timeout.
const Wait = 20 * time.Second

// Redis is a test's redis-server on the host's loopback, which machines
// and containers share, and what its tests ask of the locks in it.
type Redis struct {
	*redistest.Server
	t   testing.TB
	rdb *redis.Client
}

// StartRedis starts a redis-server for the test (internal/redistest).
// Start it before the machines and containers that use it: it is stopped
// after them.
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	srv := redistest.Start(t)
	return &Redis{Server: srv, t: t, rdb: srv.Client()}
}

// StartRedisWithPassword is StartRedis for a server that requires
// password (requirepass); the test's client logs in with it.
func StartRedisWithPassword(t testing.TB, password string) *Redis {
	t.Helper()
	srv := redistest.Start(t, "requirepass", password)
	return &Redis{Server: srv, t: t, rdb: srv.ClientWith(&redis.Options{Password: password})}
}

// Client is the test's client of the server.
func (r *Redis) Client() *redis.Client { return r.rdb }

// Holder is the value of lock:name, "" when it is free.
func (r *Redis) Holder(name string) string {
	v, _ := r.rdb.Get(context.Background(), "lock:"+name).Result()
	return v
}

// WaitHeld waits until someone holds lock:name and returns the token.
func (r *Redis) WaitHeld(name string) string {
	r.t.Helper()
	var token string
	clitest.Eventually(r.t, Wait, "lock:"+name+" was never taken", func() bool {
		token = r.Holder(name)
		return token != ""
	})
	return token
}

// WaitFree waits until lock:name is free.
func (r *Redis) WaitFree(name string) {
	r.t.Helper()
	clitest.Eventually(r.t, Wait, "lock:"+name+" is still held", func() bool { return r.Holder(name) == "" })
}

// Renewed waits until lock:name has been renewed n times (its TTL went
// up), and fails the test if it vanishes meanwhile.
func (r *Redis) Renewed(name string, n int) {
	r.t.Helper()
	ctx := context.Background()
	last, seen := time.Duration(0), 0
	clitest.Eventually(r.t, Wait, "lock:"+name+" is not being renewed", func() bool {
		ttl := r.rdb.PTTL(ctx, "lock:"+name).Val()
		if ttl <= 0 {
			r.t.Fatalf("lock:%s is gone (TTL %v) while its job runs", name, ttl)
		}
		if last > 0 && ttl > last+50*time.Millisecond {
			seen++
		}
		last = ttl
		return seen >= n
	})
}
