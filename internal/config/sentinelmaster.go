package config

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"
)

// unknownMaster is the hook of a Sentinel client that says a master name
// the sentinels do not know as bad configuration. go-redis reports it as
// "all sentinels specified in configuration are unreachable: redis: nil",
// though they answered; and since that error wraps redis.Nil, every reader
// that takes redis.Nil for a missing key would take the failure for an
// answer: a lock that is not held, a key with no value.
type unknownMaster struct{ c *Config }

// DialHook replaces the error of finding the master when the sentinels
// that answered know no master of that name.
func (h unknownMaster) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil && errors.Is(err, redis.Nil) {
			return nil, h.error(err)
		}
		return conn, err
	}
}

func (unknownMaster) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (unknownMaster) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// error says which sentinels answered: each that knows no such master
// answered nil, the others did not answer. It wraps neither redis.Nil nor
// their errors.
func (h unknownMaster) error(err error) error {
	answered, asked := 0, len(h.c.Sentinels)
	if joined, ok := errors.Unwrap(err).(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			if errors.Is(e, redis.Nil) {
				answered++
			}
		}
	}
	who := "the sentinels (" + strings.Join(h.c.Sentinels, ", ") + ")"
	if answered > 0 && answered < asked {
		who += fmt.Sprintf(" that answered (%d of %d)", answered, asked)
	}
	return &configError{msg: fmt.Sprintf("%s %q: %s know no master of that name (SENTINEL MASTERS on a sentinel lists the names it monitors)",
		h.c.origin("sentinel-master"), h.c.SentinelMaster, who)}
}
