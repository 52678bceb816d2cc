package withlock_test

// The root tests' shared helpers: servers and Clients, waiting Acquires and
// what they return, the fair line's keys, and Redis's count of commands.

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/keys"
	"github.com/with-lock/with-lock/internal/redistest"
)

// longPoll is a fallback poll no test waits for: a waiter that gets the
// lock well before it was woken by a release message or by the holder's
// expiry, not by polling.
const longPoll = time.Minute

// promptly bounds a wake-up that a notification explains; it is far below
// longPoll and generous for a loaded machine running -race.
const promptly = 10 * time.Second

// setup starts a Redis of the test's own and a Client on it.
func setup(t *testing.T) (*withlock.Client, *redis.Client, *redistest.Server) {
	t.Helper()
	srv := redistest.Start(t)
	rdb := srv.Client()
	return withlock.New(rdb, nil), rdb, srv
}

// startRedis starts a Redis of the test's own and returns a client of it.
func startRedis(t *testing.T) *redis.Client {
	t.Helper()
	return redistest.Start(t).Client()
}

// waitClient returns a Client on srv whose waiters poll only every longPoll.
func waitClient(t *testing.T, srv *redistest.Server) *withlock.Client {
	t.Helper()
	return waitClientOn(srv.Client())
}

// waitSetup is a Redis of the test's own, a waitClient on it, and a client
// to inspect the server with.
func waitSetup(t *testing.T) (*withlock.Client, *redis.Client) {
	t.Helper()
	srv := redistest.Start(t)
	return waitClient(t, srv), srv.Client()
}

// aclWaitClient is a waitClient logged in as a user of its own with the
// given rules beside access to every key and channel.
func aclWaitClient(t *testing.T, srv *redistest.Server, rules string) *withlock.Client {
	t.Helper()
	return waitClientOn(aclClient(t, srv, rules))
}

// aclClient is a client of srv logged in as a user of its own with the
// given rules, beside access to every key and channel unless they name
// keys.
func aclClient(t *testing.T, srv *redistest.Server, rules string) *redis.Client {
	t.Helper()
	user := fmt.Sprintf("waiter%d", time.Now().UnixNano())
	args := []any{"ACL", "SETUSER", user, "reset", "on", ">pw"}
	for _, r := range strings.Fields(rules) {
		args = append(args, r)
	}
	if !strings.Contains(rules, "~") {
		args = append(args, "~*", "&*")
	}
	if err := srv.Client().Do(context.Background(), args...).Err(); err != nil {
		t.Fatalf("ACL SETUSER: %v", err)
	}
	return srv.ClientWith(&redis.Options{Username: user, Password: "pw"})
}

// waitClientOn is waitClient on rdb.
func waitClientOn(rdb redis.UniversalClient) *withlock.Client {
	c := withlock.New(rdb, nil)
	withlock.SetWaitTimings(c, longPoll, 100*time.Millisecond)
	return c
}

// acquireAsync runs Acquire in a goroutine and delivers its outcome.
type outcome struct {
	lock *withlock.Lock
	err  error
	at   time.Time
}

func acquireAsync(ctx context.Context, c *withlock.Client, name string, ttl time.Duration) <-chan outcome {
	return acquireAsyncWith(ctx, c, name, ttl, nil)
}

// acquireAsyncWith is acquireAsync with options.
func acquireAsyncWith(ctx context.Context, c *withlock.Client, name string, ttl time.Duration, opts *withlock.LockOptions) <-chan outcome {
	ch := make(chan outcome, 1)
	go func() {
		l, err := c.Acquire(ctx, name, ttl, opts)
		ch <- outcome{l, err, time.Now()}
	}()
	return ch
}

// holder is "<host>:<pid>" of this test process, as tokens, records and
// loss errors name it.
func holder(t *testing.T) string {
	t.Helper()
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

func mustAcquire(t *testing.T, c *withlock.Client, name string, ttl time.Duration) *withlock.Lock {
	t.Helper()
	l, err := c.TryAcquire(context.Background(), name, ttl, nil)
	if err != nil {
		t.Fatalf("TryAcquire %s: %v", name, err)
	}
	return l
}

func wait(t *testing.T, ch <-chan outcome, within time.Duration, what string) outcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(within):
		t.Fatalf("%s: Acquire did not return within %s", what, within)
		return outcome{}
	}
}

// served is the lock a waiting Acquire delivers on ch within promptly; it
// fails the test on an error.
func served(t *testing.T, ch <-chan outcome, what string) *withlock.Lock {
	t.Helper()
	o := wait(t, ch, promptly, what)
	if o.err != nil {
		t.Fatalf("%s: %v", what, o.err)
	}
	return o.lock
}

// servedWithin bounds one waiting Acquire of a test that expects every
// waiter to be served: well below longPoll, so that a lost wake-up (which
// only the minute's poll would repair) fails the test in seconds with a
// message instead of blocking until go test's timeout; and generous for a
// loaded machine running -race.
const servedWithin = 30 * time.Second

// acquireBounded is Acquire bounded by servedWithin.
func acquireBounded(c *withlock.Client, name string, ttl time.Duration, opts *withlock.LockOptions) (*withlock.Lock, error) {
	ctx, cancel := context.WithTimeout(context.Background(), servedWithin)
	defer cancel()
	l, err := c.Acquire(ctx, name, ttl, opts)
	if err != nil {
		return nil, fmt.Errorf("waiter not served within %s (a lost wake-up?): %w", servedWithin, err)
	}
	return l, nil
}

// semaphore returns a Client of n slots on rdb.
func semaphore(t *testing.T, rdb redis.UniversalClient, n int) *withlock.Client {
	t.Helper()
	c, err := withlock.NewSemaphore(rdb, n, nil)
	if err != nil {
		t.Fatalf("NewSemaphore(%d): %v", n, err)
	}
	return c
}

// The fair line's keys and a semaphore's slots are where internal/keys
// puts them: the tests import the rule rather than copy it.

// slotKeyOf is the key of slot i of the lock key key.
func slotKeyOf(key string, i int) string { return keys.Slot(key, i) }

// lineBaseOf is the hash-tagged base of the line's keys for the lock key
// key, "" for a key that has none.
func lineBaseOf(key string) string {
	b, _ := keys.LineBase(key)
	return b
}

// markOf is the waiting mark of the lock key key.
func markOf(key string) string { return keys.Mark(key) }

// inLine is the length of the fair line of the lock key key, read on rdb
// (on Cluster, the node of key's slot). It is the one way the tests count
// a line.
func inLine(t *testing.T, rdb *redis.Client, key string) int64 {
	t.Helper()
	n, err := rdb.LLen(context.Background(), keys.Line(key)).Result()
	if err != nil {
		t.Fatalf("LLEN of %s's line: %v", key, err)
	}
	return n
}

// subscribers is how many connections listen on channel, by PUBSUB NUMSUB.
func subscribers(t *testing.T, rdb *redis.Client, channel string) int64 {
	t.Helper()
	n, err := rdb.PubSubNumSub(context.Background(), channel).Result()
	if err != nil {
		t.Fatalf("PUBSUB NUMSUB: %v", err)
	}
	return n[channel]
}

// randomPart is the secret part of a token, which no message may show.
func randomPart(token string) string { return keys.Secret(token) }

// commandCalls returns the calls of each command since the last CONFIG
// RESETSTAT, Lua-internal calls included, from INFO commandstats.
func commandCalls(t *testing.T, rdb *redis.Client) map[string]int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	calls := map[string]int{}
	for _, line := range strings.Split(info, "\r\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":calls=")
		if !ok {
			continue
		}
		n, _ := strconv.Atoi(strings.SplitN(rest, ",", 2)[0])
		calls[name] = n
	}
	return calls
}

// commandCallsExceptSetup is commandCalls without the test's own INFO and
// CONFIG RESETSTAT and the handshake of new connections: what the code
// under test sent.
func commandCallsExceptSetup(t *testing.T, rdb *redis.Client) map[string]int {
	t.Helper()
	calls := commandCalls(t, rdb)
	for _, setup := range []string{"info", "config|resetstat", "hello"} {
		delete(calls, setup)
	}
	return calls
}

func resetStats(t *testing.T, rdb *redis.Client) {
	t.Helper()
	if err := rdb.ConfigResetStat(context.Background()).Err(); err != nil {
		t.Fatalf("CONFIG RESETSTAT: %v", err)
	}
}

// kaClient is a lock client on srv whose Redis client never retries, as the
// CLI's, with the given read timeout.
func kaClient(t *testing.T, srv *redistest.Server, readTimeout time.Duration) *withlock.Client {
	t.Helper()
	return withlock.New(srv.ClientWith(&redis.Options{
		MaxRetries: -1, DialerRetries: 1,
		DialTimeout: time.Second, ReadTimeout: readTimeout, WriteTimeout: readTimeout,
	}), nil)
}

// kaSetup is a Redis of the test's own, a kaClient on it with a read
// timeout of a second, and a client to inspect the server with.
func kaSetup(t *testing.T) (*withlock.Client, *redis.Client) {
	t.Helper()
	srv := redistest.Start(t)
	return kaClient(t, srv, time.Second), srv.Client()
}
