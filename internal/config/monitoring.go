package config

import (
	"net/url"
	"time"
)

// Monitoring is what with-lock tells the monitoring about a run: a
// Prometheus textfile (--metrics-dir) and dead man's switch pings (--ping).
type Monitoring struct {
	MetricsDir  string        // write with-lock-<name>.prom here at the end of every run
	PingURL     string        // the healthchecks.io-style check URL; "" sends nothing
	PingTimeout time.Duration // bound on each ping, its retry included
	PingSkips   bool          // report busy and done skips to URL/log
}

// DefaultPingTimeout bounds a ping: the run's exit waits for its end ping
// at most this long.
const DefaultPingTimeout = 10 * time.Second

// validateMonitoring checks the monitoring settings. The ping URL is not
// echoed: it is a credential of the check.
func (c *Config) validateMonitoring() error {
	if c.PingURL != "" {
		u, err := url.Parse(c.PingURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return c.bad("ping", "is not an http:// or https:// URL")
		}
	}
	if c.PingTimeout <= 0 {
		return c.bad("ping-timeout", "%s must be positive", c.PingTimeout)
	}
	return nil
}
