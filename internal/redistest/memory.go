package redistest

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Filling a server's memory for real, with keys of 1 KB under "fill:", as
// the data of a cache would: up to its maxmemory under noeviction, and
// until a key is evicted under a policy that evicts.

// fillBudget bounds a fill: how long it may take and how many keys it may
// write (about 400 MB), far beyond any maxmemory a test sets.
const (
	fillBudget  = 20 * time.Second
	fillMaxKeys = 400_000
	fillBatch   = 200
)

// fillValue is the value of every key a fill writes.
var fillValue = strings.Repeat("x", 1024)

// FillUntilOOM writes keys without expiry until the server refuses a write
// with OOM: its used memory is then above its maxmemory, which must be set
// with maxmemory-policy noeviction (what redis-server starts with). The
// first refusal comes with the fill's own batch in the server's memory, as
// a query buffer the server frees soon after, which could bring it back
// under its maxmemory: so the maxmemory is then halved, and the server
// stays out of memory whatever it frees of that.
func (s *Server) FillUntilOOM() {
	s.t.Helper()
	s.fill("FillUntilOOM", 0, func(err error) bool {
		if err != nil && !strings.HasPrefix(err.Error(), "OOM ") {
			s.t.Fatalf("FillUntilOOM: %v", err)
		}
		return err != nil
	})
	ctx := context.Background()
	rdb := s.Client()
	got, err := rdb.ConfigGet(ctx, "maxmemory").Result()
	if err != nil {
		s.t.Fatalf("FillUntilOOM: CONFIG GET maxmemory: %v", err)
	}
	max, err := strconv.ParseInt(got["maxmemory"], 10, 64)
	if err != nil || max <= 0 {
		s.t.Fatalf("FillUntilOOM: maxmemory %q: want a limit", got["maxmemory"])
	}
	if err := rdb.ConfigSet(ctx, "maxmemory", strconv.FormatInt(max/2, 10)).Err(); err != nil {
		s.t.Fatalf("FillUntilOOM: CONFIG SET maxmemory: %v", err)
	}
}

// FillUntilEvicted writes keys with an hour's TTL, as a cache does, until
// key is gone: the server evicted it to make room. Its maxmemory must be
// set with a policy that evicts keys with a TTL (volatile-* or allkeys-*).
func (s *Server) FillUntilEvicted(key string) {
	s.t.Helper()
	rdb := s.Client()
	s.fill("FillUntilEvicted", time.Hour, func(err error) bool {
		if err != nil {
			s.t.Fatalf("FillUntilEvicted: %v", err)
		}
		n, err := rdb.Exists(context.Background(), key).Result()
		if err != nil {
			s.t.Fatalf("FillUntilEvicted: EXISTS %s: %v", key, err)
		}
		return n == 0
	})
}

// fill writes batches of keys with ttl (0: none) until done, given the
// first error of a batch, says so, or fails the test when the budget runs
// out.
func (s *Server) fill(what string, ttl time.Duration, done func(error) bool) {
	s.t.Helper()
	rdb := s.Client()
	ctx, cancel := context.WithTimeout(context.Background(), fillBudget)
	defer cancel()
	for n := 0; n < fillMaxKeys; n += fillBatch {
		cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := range fillBatch {
				p.Set(ctx, "fill:"+strconv.Itoa(n+i), fillValue, ttl)
			}
			return nil
		})
		if ctx.Err() != nil {
			break
		}
		var rerr redis.Error
		if err != nil && !errors.As(err, &rerr) {
			s.t.Fatalf("%s: %v", what, err)
		}
		for _, c := range cmds {
			if c.Err() != nil {
				err = c.Err()
				break
			}
		}
		if done(err) {
			return
		}
	}
	s.t.Fatalf("%s: not done after %d keys of 1 KB or %s", what, fillMaxKeys, fillBudget)
}
