package config

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// clusterNode is the hook of a client of one Redis (not a Cluster client)
// that finds a node of a Redis Cluster, named without --cluster, before
// any command of with-lock's reaches it. Every new connection's handshake
// is a HELLO, whose reply has the server's mode: "cluster" fails the
// connection, so the command that wanted it fails as a configuration
// error, unsent. This costs nothing: the reply is read anyway. Were it
// left to the replies of the commands, a lock whose key the node serves
// would be taken, its command run, and only a later command of several
// keys (the release: CROSSSLOT) would fail, leaving the key to its TTL.
//
// A server without HELLO (before Redis 6) is found by its replies: a
// MOVED, ASK or CROSSSLOT is said as what it means, instead of bare
// ("MOVED 12139 10.0.0.7:6379"), as if Redis were unavailable, or as a
// transaction's "EXECABORT Transaction discarded", which hides the MOVED
// of the commands queued in it.
type clusterNode struct{ addr string }

func (clusterNode) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h clusterNode) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		switch {
		case err == nil && cmd.Name() == "hello":
			// Inside the handshake of a new connection (the hook is
			// cloned onto it): go-redis fails the connection on an
			// error that is not a Redis reply, and would fall back to
			// RESP2 on one that is, so the mark is not one; the
			// command that wanted the connection says it (below).
			if hello, ok := cmd.(*redis.MapStringInterfaceCmd); ok && hello.Val()["mode"] == "cluster" {
				err = errClusterHello
				cmd.SetErr(err)
			}
		case err != nil && (isRedirect(err) || errors.Is(err, errClusterHello)):
			err = h.error(err)
			cmd.SetErr(err)
		}
		return err
	}
}

// errClusterHello marks a connection whose HELLO said the server is a
// Cluster node.
var errClusterHello = errors.New("HELLO with mode cluster")

func (h clusterNode) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if err == nil {
			return nil
		}
		var said error
		for _, cmd := range cmds {
			if e := cmd.Err(); e != nil && (isRedirect(e) || errors.Is(e, errClusterHello)) {
				if said == nil {
					said = h.error(e)
				}
				cmd.SetErr(said)
			}
		}
		if said == nil && errors.Is(err, errClusterHello) { // no command was sent
			said = h.error(err)
			for _, cmd := range cmds {
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
// refused, or never sent (the HELLO of its connection said "cluster"), not
// lost, so no clean-up of its unknown outcome is needed.
type clusterNodeError struct{ msg string }

func (e *clusterNodeError) Error() string        { return ErrConfig.Error() + ": " + e.msg }
func (e *clusterNodeError) Is(target error) bool { return target == ErrConfig }
func (e *clusterNodeError) RedisError()          {}
