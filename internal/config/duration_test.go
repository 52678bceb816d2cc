package config_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/config"
)

// Every duration setting reads Go durations, bare seconds (as flock -w
// does) and days, the same from a flag, a variable and the file.
func TestDurationForms(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"30s", 30 * time.Second},
		{"1m30s", 90 * time.Second},
		{"5", 5 * time.Second},
		{"0.5", 500 * time.Millisecond},
		{".25", 250 * time.Millisecond},
		{"0", 0},
		{"1d", 24 * time.Hour},
		{"2d", 48 * time.Hour},
		{"1.5d", 36 * time.Hour},
		{"1d12h", 36 * time.Hour},
		{"1500ms", 1500 * time.Millisecond},
		{"5.", 5 * time.Second},
		{"+2", 2 * time.Second},
		{"1.d", 24 * time.Hour},
		{"1d30m", 24*time.Hour + 30*time.Minute},
	} {
		for _, src := range []struct {
			name  string
			args  []string
			env   func(string) string
			value func(*config.Config) time.Duration
		}{
			{"--kill-after", []string{"--kill-after", tc.in}, env(), func(c *config.Config) time.Duration { return c.KillAfter }},
			{"-w", []string{"-w", tc.in}, env(), func(c *config.Config) time.Duration { return c.Wait }},
			{"WITH_LOCK_MIN_HOLD", nil, env("WITH_LOCK_MIN_HOLD", tc.in), func(c *config.Config) time.Duration { return c.MinHold }},
			{"file kill-after", []string{"--config", writeConf(t, "kill-after = \""+tc.in+"\"\n")}, env(), func(c *config.Config) time.Duration { return c.KillAfter }},
		} {
			c, err := config.Parse(append(src.args, "job", "true"), src.env)
			if err != nil {
				t.Errorf("%s %q: %v", src.name, tc.in, err)
				continue
			}
			if got := src.value(c); got != tc.want {
				t.Errorf("%s %q = %v, want %v", src.name, tc.in, got, tc.want)
			}
		}
	}
}

func TestDurationFormsRejected(t *testing.T) {
	for _, in := range []string{"soon", "5x", "1e3", "inf", "NaN", "d", "1d-2h", "1d+2h", "1dd", "99999999999d", "5 s", "", ".", ".d", "+", "-", "1.5.5", "d1", "1d\n"} {
		_, err := config.Parse([]string{"--ttl=" + in, "job", "true"}, env())
		if !errors.Is(err, config.ErrUsage) || !strings.Contains(err.Error(), "expected a duration") {
			t.Errorf("--ttl %q: err = %v, want a usage error saying what a duration is", in, err)
		}
	}
}

// --redis host and host:port read as redis-cli users mean them.
func TestRedisHostPortIsARedisURL(t *testing.T) {
	for in, want := range map[string]string{
		"cache:6380":             "redis://cache:6380/0",
		"cache":                  "redis://cache:6379/0",
		"10.0.0.5:7000":          "redis://10.0.0.5:7000/0",
		"[::1]:6380":             "redis://[::1]:6380/0",
		"::1":                    "redis://[::1]:6379/0",
		"redis://a:1/2":          "redis://a:1/2",
		"rediss://u:p@a:1/0":     "rediss://u:p@a:1/0",
		"unix:///tmp/r.sock":     "unix:///tmp/r.sock",
		"redis-primary.internal": "redis://redis-primary.internal:6379/0",
	} {
		c, err := config.Parse([]string{"--redis", in, "job", "true"}, env())
		if err != nil {
			t.Errorf("--redis %q: %v", in, err)
			continue
		}
		if c.RedisURLs[0] != want {
			t.Errorf("--redis %q = %q, want %q", in, c.RedisURLs[0], want)
		}
	}
}
