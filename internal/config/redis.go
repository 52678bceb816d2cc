package config

import (
	"errors"
	"fmt"
	"net/url"

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
		return nil, fmt.Errorf("%w: Redis URL (--redis or WITH_LOCK_REDIS): %w (expected redis://[user:password@]host:port/db)", ErrConfig, err)
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
