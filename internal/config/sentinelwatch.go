package config

import (
	"fmt"

	"github.com/redis/go-redis/v9"
)

// SentinelClients returns a client of each configured sentinel, with the
// sentinels' credentials and the TLS of the master's URL, as the failover
// client reaches them: for watching their failover events while a lock is
// held. The caller closes them.
func (c *Config) SentinelClients() ([]*redis.SentinelClient, error) {
	if c.Topology() != Sentinel {
		return nil, fmt.Errorf("%w: no --sentinel to watch", ErrConfig)
	}
	u, _, err := c.universalOptions(c.RedisURLs[0])
	if err != nil {
		return nil, err
	}
	c.verifyEachHost(u)
	pw, err := c.sentinelPassword()
	if err != nil {
		return nil, err
	}
	var clients []*redis.SentinelClient
	for _, addr := range c.Sentinels {
		o := u.Simple()
		o.Addr, o.Username, o.Password, o.DB = addr, c.SentinelUser, pw, 0
		clients = append(clients, redis.NewSentinelClient(o))
	}
	return clients, nil
}

// MasterClient returns a client of the Redis at addr with the master's
// credentials, database and TLS: the master a failover has just promoted,
// asked directly, before every sentinel names it. The caller closes it.
func (c *Config) MasterClient(addr string) (*redis.Client, error) {
	u, _, err := c.universalOptions(c.RedisURLs[0])
	if err != nil {
		return nil, err
	}
	c.verifyEachHost(u)
	o := u.Simple()
	o.Addr = addr
	return redis.NewClient(o), nil
}
