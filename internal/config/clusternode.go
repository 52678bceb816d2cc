package config

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// clusterNode is the hook of a client of one Redis (not a Cluster client)
// that says a MOVED, ASK or CROSSSLOT reply as what it means: the server is
// a node of a Redis Cluster, and --cluster is missing. Without it the reply reaches
// the user bare ("MOVED 12139 10.0.0.7:6379"), as if Redis were
// unavailable, or as a transaction's "EXECABORT Transaction discarded",
// which hides the MOVED of the commands queued in it.
type clusterNode struct{ addr string }

func (clusterNode) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h clusterNode) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err != nil && isRedirect(err) {
			err = h.error(err)
			cmd.SetErr(err)
		}
		return err
	}
}

func (h clusterNode) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if err == nil {
			return nil
		}
		var said error
		for _, cmd := range cmds {
			if e := cmd.Err(); e != nil && isRedirect(e) {
				if said == nil {
					said = h.error(e)
				}
				cmd.SetErr(said)
			}
		}
		if said != nil {
			return said
		}
		return err
	}
}

// isRedirect reports whether err is a reply only a Cluster node gives: a
// key served by another node (MOVED, ASK), or keys of one command on
// several nodes' slots (CROSSSLOT; a name whose key this node serves gets
// as far as that).
func isRedirect(err error) bool {
	_, moved := redis.IsMovedError(err)
	_, ask := redis.IsAskError(err)
	return moved || ask || redis.HasErrorPrefix(err, "CROSSSLOT")
}

func (h clusterNode) error(redirect error) error {
	return &clusterNodeError{msg: fmt.Sprintf("%s is a Redis Cluster node (it answered %s): add --cluster", h.addr, redirect)}
}

// clusterNodeError is ErrConfig, and a reply from Redis: the command was
// refused, not lost, so no clean-up of its unknown outcome is needed.
type clusterNodeError struct{ msg string }

func (e *clusterNodeError) Error() string        { return ErrConfig.Error() + ": " + e.msg }
func (e *clusterNodeError) Is(target error) bool { return target == ErrConfig }
func (e *clusterNodeError) RedisError()          {}
