package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// ErrConfig marks a configuration that cannot work, such as a bad Redis URL;
// the CLI exits 78 on it.
var ErrConfig = errors.New("bad configuration")

// RedisOptions returns the client options for the first Redis URL. Its
// errors wrap ErrConfig and never show the URL, which may hold a password.
func (c *Config) RedisOptions() (*redis.Options, error) { return c.redisOptions(c.RedisURLs[0]) }

// redisOptions returns the client options for one URL, with TLS and the
// password applied (see secure).
func (c *Config) redisOptions(rawURL string) (*redis.Options, error) {
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // url.Error repeats the whole URL, password included
		}
		return nil, fmt.Errorf("%w: %s URL: %w (expected redis://[user:password@]host:port/db)", ErrConfig, c.redisSource, err)
	}
	if opt.Network != "unix" {
		if err := checkPort(c.redisSource+" URL", opt.Addr); err != nil {
			return nil, err
		}
	}
	opt.DialTimeout = c.RedisTimeout
	opt.ReadTimeout = c.RedisTimeout
	opt.WriteTimeout = c.RedisTimeout
	// A SET NX whose reply was lost may have landed; retrying it blindly
	// would report our own lock as busy. Fail fast instead: cron runs again.
	opt.MaxRetries = -1
	opt.DialerRetries = 1
	opt.PoolSize = 4
	// One short-lived process: skip CLIENT SETINFO and maintenance
	// notifications, which only cost round trips at start-up.
	opt.DisableIdentity = true
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	if err := c.secure(opt, rawURL); err != nil {
		return nil, err
	}
	return opt, nil
}

// checkPort refuses an address whose port no server can listen on (0,
// 99999), before anything is dialled: dialling would report it as Redis
// being unreachable. what names where the address came from; addr holds
// no password.
func checkPort(what, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrConfig, what, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%w: %s: port %q is not a TCP port (1-65535)", ErrConfig, what, port)
	}
	return nil
}
