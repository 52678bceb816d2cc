package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
)

// Environment variables that carry secrets and have no flag. They are
// read, then removed from the command's environment (see CommandEnviron),
// as is WITH_LOCK_REDIS when its URLs hold a password.
const (
	EnvPassword         = "WITH_LOCK_PASSWORD"
	EnvRedisCLIAuth     = "REDISCLI_AUTH" // redis-cli's own convention
	EnvSentinelPassword = "WITH_LOCK_SENTINEL_PASSWORD"
	EnvRedis            = "WITH_LOCK_REDIS"
)

// Connection is which Redis to lock on and how to reach it: the URLs,
// TLS, the password files, Sentinel, Cluster. Several URLs without
// --cluster are the independent masters of a quorum.
type Connection struct {
	// RedisURLs are all --redis URLs (or WITH_LOCK_REDIS's, separated by
	// spaces), never empty after Parse.
	RedisURLs    []string
	RedisTimeout time.Duration // connect and command timeout

	TLSCACert   string // PEM CA bundle that replaces the system roots
	TLSCert     string // PEM client certificate
	TLSKey      string // its private key
	TLSInsecure bool   // do not verify the server's certificate

	PasswordFile string // file holding the Redis password

	Sentinels            []string // HOST:PORT of each sentinel
	SentinelMaster       string   // the master's name as the sentinels know it
	SentinelUser         string   // ACL user for the sentinels
	SentinelPasswordFile string   // file holding the sentinels' password

	Cluster bool // RedisURLs are seeds of one Redis Cluster

	envPassword         string            // WITH_LOCK_PASSWORD or else REDISCLI_AUTH
	envSentinelPassword string            // WITH_LOCK_SENTINEL_PASSWORD
	secrets             map[string]string // password files already read
}

// resolveConnection reads the passwords from the environment and notes
// what is worth a warning, once the settings are parsed.
func (c *Config) resolveConnection(getenv func(string) string) {
	for i, u := range c.RedisURLs {
		c.RedisURLs[i] = redisURL(u)
	}
	if c.source("redis") == fromFlag && hasPassword(c.RedisURLs...) {
		c.Warnings = append(c.Warnings, "a password in --redis is visible to other users (ps, /proc); use --password-file or "+EnvPassword)
	}
	c.envPassword = getenv(EnvPassword)
	if c.envPassword == "" {
		c.envPassword = getenv(EnvRedisCLIAuth)
	}
	c.envSentinelPassword = getenv(EnvSentinelPassword)
	if c.TLSInsecure {
		c.Warnings = append(c.Warnings, c.origin("tls-insecure")+": the Redis server's TLS certificate is not verified")
	}
}

// redisURL reads "host" and "host:port", as redis-cli users write them,
// as redis://host[:6379]/0; anything with a scheme is left to the URL
// parser.
func redisURL(s string) string {
	if s == "" || strings.Contains(s, "://") || strings.ContainsAny(s, "/@?# ") {
		return s
	}
	if _, _, err := net.SplitHostPort(s); err != nil {
		s = net.JoinHostPort(strings.Trim(s, "[]"), "6379")
	}
	return "redis://" + s + "/0"
}

// RedisIsDefault reports whether no flag, variable or config file named a
// Redis: with-lock then locks on DefaultRedisURL, a Redis on this host, and
// so only against other runs on this host.
func (c *Config) RedisIsDefault() bool { return c.source("redis") == fromDefault }

// LocalOnlyWarning says what RedisIsDefault means, in one line.
const LocalOnlyWarning = "no Redis configured: using " + DefaultRedisURL +
	", so this host locks only against itself; set redis in " + DefaultFile + ", " + EnvRedis + " or --redis"

// hasPassword reports whether any of the URLs carries a password.
func hasPassword(urls ...string) bool {
	for _, raw := range urls {
		if u, err := url.Parse(raw); err == nil && u.User != nil {
			if _, ok := u.User.Password(); ok {
				return true
			}
		}
	}
	return false
}

func (c *Config) validateConnection() error {
	p := &c.Connection
	switch {
	case (p.TLSCert == "") != (p.TLSKey == ""):
		return errors.New("--tls-cert and --tls-key go together")
	case p.TLSInsecure && p.TLSCACert != "":
		return errors.New("--tls-insecure and --tls-cacert contradict each other")
	case p.Cluster && len(p.Sentinels) > 0:
		return errors.New("--cluster and --sentinel exclude each other")
	case len(p.Sentinels) > 0 && p.SentinelMaster == "":
		return errors.New("--sentinel needs --sentinel-master NAME")
	case len(p.Sentinels) == 0 && p.SentinelMaster != "":
		return errors.New("--sentinel-master needs at least one --sentinel HOST:PORT")
	case len(p.Sentinels) > 0 && len(p.RedisURLs) > 1:
		return errors.New("with --sentinel, give at most one --redis URL (for the master's credentials, TLS and database)")
	case p.Topology() == Quorum && len(p.RedisURLs)%2 == 0:
		return fmt.Errorf("a quorum needs an odd number of independent --redis masters, not %d", len(p.RedisURLs))
	}
	return nil
}
