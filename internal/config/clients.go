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

// RedisClients returns the clients for the configured deployment: one for
// a single Redis, a Sentinel-managed master or a Cluster; one per master
// for a quorum. Each comes from universalOptions through go-redis's own
// conversion (Simple, Failover, Cluster). Errors wrap ErrConfig and never
// show a URL, which may hold a password. The caller closes the clients.
func (c *Config) RedisClients() ([]redis.UniversalClient, error) {
	switch c.Topology() {
	case Sentinel:
		for _, addr := range c.Sentinels {
			if err := checkPort(addr); err != nil {
				return nil, fmt.Errorf("%w: --sentinel: %w", ErrConfig, err)
			}
		}
		u, _, err := c.universalOptions(c.RedisURLs[0]) // the master's credentials, database, TLS
		if err != nil {
			return nil, err
		}
		u.Addrs, u.MasterName, u.SentinelUsername = c.Sentinels, c.SentinelMaster, c.SentinelUser
		if u.SentinelPassword, err = c.sentinelPassword(); err != nil {
			return nil, err
		}
		c.verifyEachHost(u)
		rdb := redis.NewFailoverClient(u.Failover())
		rdb.AddHook(unknownMaster{c}) // sentinelmaster.go
		return []redis.UniversalClient{rdb}, nil
	case Cluster:
		u, _, err := c.universalOptions(c.RedisURLs[0]) // the seeds share the first one's credentials and TLS
		if err != nil {
			return nil, err
		}
		if u.DB != 0 {
			return nil, fmt.Errorf("%w: Redis Cluster has only database 0, not %d", ErrConfig, u.DB)
		}
		u.Addrs = nil
		for _, raw := range c.RedisURLs {
			opt, err := c.parseURL(raw)
			if err != nil {
				return nil, err
			}
			u.Addrs = append(u.Addrs, opt.Addr)
		}
		u.MaxRedirects = 3 // follow MOVED/ASK during resharding and failover
		c.verifyEachHost(u)
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
		rdb := redis.NewClient(opt)
		rdb.AddHook(clusterNode{addr: opt.Addr}) // clusternode.go
		clients = append(clients, rdb)
	}
	return clients, nil
}

// redisOptions returns the options of a client for the one Redis at rawURL.
func (c *Config) redisOptions(rawURL string) (*redis.Options, error) {
	u, parsed, err := c.universalOptions(rawURL)
	if err != nil {
		return nil, err
	}
	opt := u.Simple()
	opt.Network = parsed.Network // a unix socket: UniversalOptions knows only TCP
	return opt, nil
}

// universalOptions returns what rawURL says (address, credentials,
// database, TLS) with with-lock's policy for every client, and the URL as
// go-redis parsed it. go-redis converts UniversalOptions to the options of
// each kind of client, but has no conversion from the Options its URL
// parser returns: the URL's own parts are carried over here, and only
// they.
func (c *Config) universalOptions(rawURL string) (*redis.UniversalOptions, *redis.Options, error) {
	o, err := c.parseURL(rawURL)
	if err != nil {
		return nil, nil, err
	}
	return &redis.UniversalOptions{
		Addrs:      []string{o.Addr},
		Username:   o.Username,
		Password:   o.Password,
		DB:         o.DB,
		Protocol:   o.Protocol,
		ClientName: o.ClientName,
		TLSConfig:  o.TLSConfig, // informational when Dialer does the TLS
		Dialer:     o.Dialer,

		DialTimeout:  c.RedisTimeout,
		ReadTimeout:  c.RedisTimeout,
		WriteTimeout: c.RedisTimeout,
		// A SET NX whose reply was lost may have landed; retrying it
		// blindly would report our own lock as busy. Fail fast instead:
		// cron runs again.
		MaxRetries:    -1,
		DialerRetries: 1,
		PoolSize:      4,
		// Pipelines (--status, inspecting a busy lock) share the pool:
		// go-redis's separate pipeline pool would cost a second connection
		// and handshake per run, and on a stalled Redis it falls back to
		// the main pool after its own handshake timed out, doubling the
		// wait.
		PipelinePoolSize: -1,
		// A context's deadline bounds the socket's wait too, so that one
		// deadline can bound a whole operation of several round trips
		// (the handshake of a new connection, then the command).
		ContextTimeoutEnabled: true,
		// One short-lived process: skip CLIENT SETINFO and maintenance
		// notifications, which only cost round trips at start-up.
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}, o, nil
}

// verifyEachHost makes a TLS client of several hosts (sentinels, masters,
// cluster nodes) verify each connection against its own host, not the
// first URL's.
func (c *Config) verifyEachHost(u *redis.UniversalOptions) {
	if u.TLSConfig == nil {
		return
	}
	u.TLSConfig = u.TLSConfig.Clone()
	u.TLSConfig.ServerName = ""
	u.Dialer = tlsDialer(u.TLSConfig, c.RedisTimeout)
}

// parseURL parses one Redis URL with go-redis's parser, checks its port
// and applies TLS and the password (see secure).
func (c *Config) parseURL(rawURL string) (*redis.Options, error) {
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // url.Error repeats the whole URL, password included
		}
		return nil, fmt.Errorf("%w: %s URL: %w (expected redis://[user:password@]host:port/db)", ErrConfig, c.origin("redis"), err)
	}
	if opt.Network != "unix" {
		if err := checkPort(opt.Addr); err != nil {
			// Named only now: finding where the URL came from walks the
			// settings table, which a good URL need not cost.
			return nil, fmt.Errorf("%w: %s URL: %w", ErrConfig, c.origin("redis"), err)
		}
	}
	if err := c.secure(opt, rawURL); err != nil {
		return nil, err
	}
	return opt, nil
}

// checkPort refuses an address whose port no server can listen on (0,
// 99999), before anything is dialled: dialling would report it as Redis
// being unreachable. The caller names where the address came from; addr
// holds no password.
func checkPort(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q is not a TCP port (1-65535)", port)
	}
	return nil
}
