package config

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/spf13/pflag"
)

// Environment variables that carry secrets. They are read, then removed
// from the command's environment (see CommandEnviron).
const (
	EnvPassword         = "WITH_LOCK_PASSWORD"
	EnvRedisCLIAuth     = "REDISCLI_AUTH" // redis-cli's own convention
	EnvSentinelPassword = "WITH_LOCK_SENTINEL_PASSWORD"
	EnvRedis            = "WITH_LOCK_REDIS"
)

// Production is the part of Config that reaches beyond one plain Redis:
// TLS, secrets, Sentinel, Cluster, a Redlock quorum and replica
// acknowledgement.
type Production struct {
	// RedisURLs are all --redis URLs (or WITH_LOCK_REDIS's, separated by
	// spaces), never empty after Parse. Several of them without
	// --cluster are the independent masters of a quorum.
	RedisURLs []string

	CACert   string // PEM CA bundle that replaces the system roots
	Cert     string // PEM client certificate
	Key      string // its private key
	Insecure bool   // do not verify the server's certificate

	PasswordFile string // file holding the Redis password

	Sentinels            []string // HOST:PORT of each sentinel
	SentinelMaster       string   // the master's name as the sentinels know it
	SentinelUser         string   // ACL user for the sentinels
	SentinelPasswordFile string   // file holding the sentinels' password

	Cluster bool // RedisURLs are seeds of one Redis Cluster

	MinReplicas int // WAIT for this many replicas after acquiring

	// Warnings are printed once by the CLI before it connects.
	Warnings []string

	redisSource string // "--redis" or WITH_LOCK_REDIS, for messages

	envPassword         string // WITH_LOCK_PASSWORD or else REDISCLI_AUTH
	envSentinelPassword string
	secrets             map[string]string // password files already read
}

// addProductionFlags defines the flags of Production on fs.
func addProductionFlags(fs *pflag.FlagSet, c *Config) {
	p := &c.Production
	fs.StringVar(&p.CACert, "cacert", "", "verify the server's TLS certificate against the CAs in `FILE` (rediss://)")
	fs.StringVar(&p.Cert, "cert", "", "TLS client certificate `FILE` (PEM, with --key)")
	fs.StringVar(&p.Key, "key", "", "TLS client private key `FILE` (PEM)")
	fs.BoolVar(&p.Insecure, "insecure", false, "do not verify the server's TLS certificate (testing only)")
	fs.StringVar(&p.PasswordFile, "password-file", "", "read the Redis password from `FILE` (mode 0600 or stricter)")
	fs.StringArrayVar(&p.Sentinels, "sentinel", nil, "Sentinel `HOST:PORT` (repeat for each sentinel)")
	fs.StringVar(&p.SentinelMaster, "sentinel-master", "", "`NAME` of the master the sentinels monitor")
	fs.StringVar(&p.SentinelUser, "sentinel-user", "", "ACL `USER` for the sentinels")
	fs.StringVar(&p.SentinelPasswordFile, "sentinel-password-file", "", "read the sentinels' password from `FILE`")
	fs.BoolVar(&p.Cluster, "cluster", false, "the --redis URLs are seeds of a Redis Cluster")
	fs.IntVar(&p.MinReplicas, "min-replicas", 0, "after acquiring, wait until `N` replicas have the lock, else exit 69")
}

// resolveProduction fills in what comes from the environment once the
// flags are parsed.
func (c *Config) resolveProduction(getenv func(string) string) {
	p := &c.Production
	fromArgv := len(p.RedisURLs) > 0
	if !fromArgv {
		p.RedisURLs = strings.Fields(getenv(EnvRedis))
	}
	p.redisSource = "--redis"
	if !fromArgv && len(p.RedisURLs) > 0 {
		p.redisSource = EnvRedis
	}
	if len(p.RedisURLs) == 0 {
		p.RedisURLs = []string{DefaultRedisURL}
	}
	if fromArgv && hasPassword(p.RedisURLs...) {
		p.Warnings = append(p.Warnings, "a password in --redis is visible to other users (ps, /proc); use --password-file or "+EnvPassword)
	}
	p.envPassword = getenv(EnvPassword)
	if p.envPassword == "" {
		p.envPassword = getenv(EnvRedisCLIAuth)
	}
	p.envSentinelPassword = getenv(EnvSentinelPassword)
	if p.Insecure {
		p.Warnings = append(p.Warnings, "--insecure: the Redis server's TLS certificate is not verified")
	}
}

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

func (c *Config) validateProduction() error {
	p := &c.Production
	switch {
	case (p.Cert == "") != (p.Key == ""):
		return errors.New("--cert and --key go together")
	case p.Insecure && p.CACert != "":
		return errors.New("--insecure and --cacert contradict each other")
	case p.Cluster && len(p.Sentinels) > 0:
		return errors.New("--cluster and --sentinel exclude each other")
	case len(p.Sentinels) > 0 && p.SentinelMaster == "":
		return errors.New("--sentinel needs --sentinel-master NAME")
	case len(p.Sentinels) == 0 && p.SentinelMaster != "":
		return errors.New("--sentinel-master needs at least one --sentinel HOST:PORT")
	case len(p.Sentinels) > 0 && len(p.RedisURLs) > 1:
		return errors.New("with --sentinel, give at most one --redis URL (for the master's credentials, TLS and database)")
	case !p.Cluster && len(p.RedisURLs) > 1 && len(p.RedisURLs)%2 == 0:
		return fmt.Errorf("a quorum needs an odd number of independent --redis masters, not %d", len(p.RedisURLs))
	case p.MinReplicas < 0:
		return fmt.Errorf("--min-replicas %d is negative", p.MinReplicas)
	case c.Fence && !p.Cluster && len(p.RedisURLs) > 1:
		// Counters on independent masters are not one sequence.
		return errors.New("--fence needs one Redis deployment, not a quorum of masters")
	}
	return nil
}
