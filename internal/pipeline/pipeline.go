// Package pipeline sends a go-redis pipeline so that a connection Redis
// refused gives every command that refusal, not an empty reply.
package pipeline

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Pipeliner is what can send a pipeline: a client, or one of its
// connections.
type Pipeliner interface {
	Pipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
}

// Send sends what queue queues in one round trip on rdb. When the
// connection itself failed with a reply from Redis (a wrong password,
// answered to the handshake's HELLO and AUTH), go-redis returns that error
// but leaves the commands without one, each reading as its zero value: a
// SET NX never sent would read as "held", and the run would go on to
// inspect the holder and fail there, in other words than a missing
// password's. The error is then set on every command. It returns the
// pipeline's error, as Pipelined does.
func Send(ctx context.Context, rdb Pipeliner, queue func(redis.Pipeliner)) error {
	cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		queue(p)
		return nil
	})
	if err == nil {
		return nil
	}
	for _, c := range cmds {
		if c.Err() != nil {
			return err // answered: each command has its own reply
		}
	}
	for _, c := range cmds {
		c.SetErr(err)
	}
	return err
}
