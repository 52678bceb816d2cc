package config

import (
	"errors"
	"fmt"
	"net/url"
	"time"
)

// Monitoring is what with-lock tells the monitoring about a run: a
// Prometheus textfile (--metrics-dir) and dead man's switch pings (--ping).
type Monitoring struct {
	MetricsDir  string        // write with-lock-<name>.prom here at the end of every run
	MetricsPush string        // POST the run's metrics to this Pushgateway at the end of every run
	PingURL     string        // the healthchecks.io-style check URL; "" sends nothing
	PingTimeout time.Duration // bound on each ping, its retry included
	PingSkips   bool          // report busy and done skips to URL/log

	Check     string        // --check NAME: judge the lock's records as a Nagios plugin, run nothing
	MaxAge    time.Duration // --check: CRITICAL when the last success is older; 0: any age
	WarnAge   time.Duration // --check: WARNING when the last success is older; 0: never
	RunningOK time.Duration // --check: a run going on for less than this is OK; 0: not

	MinDuration     time.Duration // --check: CRITICAL when the last success took less; 0: no bound
	MaxDuration     time.Duration // --check: CRITICAL when the last success took longer; 0: no bound
	DurationOutlier bool          // --check: WARNING when the last success took far less or longer than its history's median
	Doctor          bool          // --doctor [NAME]: check that the deployment can hold locks, run nothing
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
	if c.MetricsPush != "" {
		u, err := url.Parse(c.MetricsPush)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return c.bad("metrics-push", "is not an http:// or https:// URL")
		}
	}
	if c.PingTimeout <= 0 {
		return c.bad("ping-timeout", "%s must be positive", c.PingTimeout)
	}
	durations := map[string]time.Duration{"max-age": c.MaxAge, "warn-age": c.WarnAge, "running-ok": c.RunningOK,
		"min-duration": c.MinDuration, "max-duration": c.MaxDuration}
	for _, name := range []string{"max-age", "warn-age", "running-ok", "min-duration", "max-duration"} {
		d := durations[name]
		switch {
		case d < 0:
			return c.bad(name, "%s is negative", d)
		case d > 0 && c.Check == "":
			return fmt.Errorf("--%s goes with --check", name)
		}
	}
	if c.WarnAge > 0 && c.MaxAge > 0 && c.WarnAge >= c.MaxAge {
		return fmt.Errorf("--warn-age %s must be below --max-age %s", c.WarnAge, c.MaxAge)
	}
	if c.MinDuration > 0 && c.MaxDuration > 0 && c.MinDuration >= c.MaxDuration {
		return fmt.Errorf("--min-duration %s must be below --max-duration %s", c.MinDuration, c.MaxDuration)
	}
	if c.DurationOutlier && c.Check == "" {
		return errors.New("--duration-outlier goes with --check")
	}
	return nil
}
