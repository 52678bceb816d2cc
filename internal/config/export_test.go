package config

import "github.com/redis/go-redis/v9"

// RedisOptions returns the client options for the first Redis URL.
func (c *Config) RedisOptions() (*redis.Options, error) { return c.redisOptions(c.RedisURLs[0]) }

// SourceOf says where the setting named by its flag came from: "default",
// "environment" or "flag".
func (c *Config) SourceOf(name string) string { return c.source(name).String() }

// Env lists the flags and variables of every setting that has a variable.
func Env() map[string]string {
	m := map[string]string{}
	for _, g := range settings(&Config{}) {
		for _, s := range g.settings {
			if s.env != "" {
				m[s.name] = s.env
			}
		}
	}
	return m
}

// Tests read no /etc/with-lock.conf the machine may have: the default
// file is one that does not exist, unless a test sets it.
func init() { defaultFile = "/nonexistent/with-lock.conf" }

// SetDefaultFile makes path the default config file until the test ends.
func SetDefaultFile(t interface{ Cleanup(func()) }, path string) {
	old := defaultFile
	defaultFile = path
	t.Cleanup(func() { defaultFile = old })
}
