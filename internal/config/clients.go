package config

import (
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// RedisClients returns the clients for the configured deployment: one for
// a single Redis, a Sentinel-managed master or a Cluster; one per master
// for a quorum. Errors wrap ErrConfig. The caller closes the clients.
func (c *Config) RedisClients() ([]redis.UniversalClient, error) {
	switch {
	case len(c.Sentinels) > 0:
		u, err := c.universalOptions()
		if err != nil {
			return nil, err
		}
		for _, addr := range c.Sentinels {
			if err := checkPort("--sentinel", addr); err != nil {
				return nil, err
			}
		}
		u.Addrs, u.MasterName, u.SentinelUsername = c.Sentinels, c.SentinelMaster, c.SentinelUser
		if u.SentinelPassword, err = c.sentinelPassword(); err != nil {
			return nil, err
		}
		return []redis.UniversalClient{redis.NewFailoverClient(u.Failover())}, nil
	case c.Cluster:
		u, err := c.universalOptions()
		if err != nil {
			return nil, err
		}
		if u.DB != 0 {
			return nil, fmt.Errorf("%w: Redis Cluster has only database 0, not %d", ErrConfig, u.DB)
		}
		u.Addrs = nil
		for _, raw := range c.RedisURLs {
			opt, err := c.redisOptions(raw)
			if err != nil {
				return nil, err
			}
			u.Addrs = append(u.Addrs, opt.Addr)
		}
		u.MaxRedirects = 3 // follow MOVED/ASK during resharding and failover
		return []redis.UniversalClient{redis.NewClusterClient(u.Cluster())}, nil
	}
	var clients []redis.UniversalClient
	for _, raw := range c.RedisURLs {
		opt, err := c.redisOptions(raw)
		if err != nil {
			for _, rdb := range clients {
				_ = rdb.Close()
			}
			return nil, err
		}
		clients = append(clients, redis.NewClient(opt))
	}
	return clients, nil
}

// universalOptions carries the first URL's credentials, database, TLS and
// our timeouts over to a Sentinel or Cluster client.
func (c *Config) universalOptions() (*redis.UniversalOptions, error) {
	o, err := c.redisOptions(c.RedisURLs[0])
	if err != nil {
		return nil, err
	}
	if o.TLSConfig != nil {
		// Sentinels, masters and cluster nodes live on different hosts:
		// with no ServerName, each connection verifies its own host.
		o.TLSConfig = o.TLSConfig.Clone()
		o.TLSConfig.ServerName = ""
		o.Dialer = tlsDialer(o.TLSConfig, c.RedisTimeout)
	}
	return &redis.UniversalOptions{
		Addrs:           []string{o.Addr},
		Username:        o.Username,
		Password:        o.Password,
		DB:              o.DB,
		TLSConfig:       o.TLSConfig, // informational: Dialer does the TLS
		Dialer:          o.Dialer,
		DialTimeout:     o.DialTimeout,
		ReadTimeout:     o.ReadTimeout,
		WriteTimeout:    o.WriteTimeout,
		MaxRetries:      o.MaxRetries,
		DialerRetries:   o.DialerRetries,
		PoolSize:        o.PoolSize,
		DisableIdentity: o.DisableIdentity,
		MaintNotificationsConfig: &maintnotifications.Config{
			Mode: maintnotifications.ModeDisabled,
		},
	}, nil
}
