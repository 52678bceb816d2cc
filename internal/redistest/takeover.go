package redistest

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Takeover is one way another owner comes to hold a lock's key under its
// holder; Do leaves value at key for a minute.
type Takeover struct {
	Name string
	Do   func(ctx context.Context, rdb *redis.Client, key, value string) error
}

// Takeovers are the ways another owner comes to hold a lock's key: it took
// the key after the key vanished (FLUSHALL, as a Redis restarted empty), or
// it overwrote the key. A holder must leave the key alone in both.
var Takeovers = []Takeover{
	{"vanished then taken", func(ctx context.Context, rdb *redis.Client, key, value string) error {
		_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.FlushAll(ctx)
			p.SetNX(ctx, key, value, time.Minute)
			return nil
		})
		return err
	}},
	{"overwritten", func(ctx context.Context, rdb *redis.Client, key, value string) error {
		return rdb.Set(ctx, key, value, time.Minute).Err()
	}},
}
