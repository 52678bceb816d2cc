package config_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/config"
)

// A flag beats its variable, which beats the default, for every kind of
// setting; and the Config says which one won.
func TestSettingPrecedence(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		env    func(string) string
		flag   string // the setting's flag
		got    func(*config.Config) any
		want   any
		source string
	}{
		{"duration default", nil, env(), "ttl", ttl, config.DefaultTTL, "default"},
		{"duration from env", nil, env("WITH_LOCK_TTL", "2m"), "ttl", ttl, 2 * time.Minute, "environment"},
		{"duration flag beats env", []string{"--ttl", "5s"}, env("WITH_LOCK_TTL", "2m"), "ttl", ttl, 5 * time.Second, "flag"},
		{"flag equal to the default beats env", []string{"--ttl", "30s"}, env("WITH_LOCK_TTL", "2m"), "ttl", ttl, config.DefaultTTL, "flag"},
		{"empty env is unset", nil, env("WITH_LOCK_TTL", ""), "ttl", ttl, config.DefaultTTL, "default"},
		{"int from env", nil, env("WITH_LOCK_CONFLICT_EXIT_CODE", "0"), "conflict-exit-code",
			func(c *config.Config) any { return c.ConflictExit }, 0, "environment"},
		{"short flag beats env", []string{"-E", "3"}, env("WITH_LOCK_CONFLICT_EXIT_CODE", "0"), "conflict-exit-code",
			func(c *config.Config) any { return c.ConflictExit }, 3, "flag"},
		{"bool from env", nil, env("WITH_LOCK_QUIET", "true"), "quiet", func(c *config.Config) any { return c.Quiet }, true, "environment"},
		{"bool flag beats env", []string{"--quiet=false"}, env("WITH_LOCK_QUIET", "1"), "quiet",
			func(c *config.Config) any { return c.Quiet }, false, "flag"},
		{"string from env", nil, env("WITH_LOCK_PREFIX", "jobs/"), "prefix", func(c *config.Config) any { return c.Prefix }, "jobs/", "environment"},
		{"string default", nil, env(), "prefix", func(c *config.Config) any { return c.Prefix }, config.DefaultPrefix, "default"},
		{"list from env, split at spaces", nil, env("WITH_LOCK_SENTINEL", "h:1  h:2", "WITH_LOCK_SENTINEL_MASTER", "m"), "sentinel",
			func(c *config.Config) any { return c.Sentinels }, []string{"h:1", "h:2"}, "environment"},
		{"list flags replace env", []string{"--sentinel", "f:1", "--sentinel", "f:2"}, env("WITH_LOCK_SENTINEL", "h:1", "WITH_LOCK_SENTINEL_MASTER", "m"),
			"sentinel", func(c *config.Config) any { return c.Sentinels }, []string{"f:1", "f:2"}, "flag"},
		{"redis default", nil, env(), "redis", func(c *config.Config) any { return c.RedisURLs }, []string{config.DefaultRedisURL}, "default"},
		{"redis env replaces the default", nil, env("WITH_LOCK_REDIS", "redis://a:1 redis://b:2 redis://c:3"), "redis",
			func(c *config.Config) any { return c.RedisURLs }, []string{"redis://a:1", "redis://b:2", "redis://c:3"}, "environment"},
		{"on-lost from env", nil, env("WITH_LOCK_ON_LOST", "ignore"), "on-lost", func(c *config.Config) any { return c.OnLost }, "ignore", "environment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Parse(append(tc.args, "job", "true"), tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if got := tc.got(c); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("--%s = %v, want %v", tc.flag, got, tc.want)
			}
			if got := c.SourceOf(tc.flag); got != tc.source {
				t.Errorf("--%s came from %s, want %s", tc.flag, got, tc.source)
			}
		})
	}
}

func ttl(c *config.Config) any { return c.TTL }

// A bad value in a variable is a usage error that names the variable, not
// a flag the user never typed.
func TestEnvValueErrorsNameTheVariable(t *testing.T) {
	for _, tc := range []struct {
		env  func(string) string
		want string
	}{
		{env("WITH_LOCK_TTL", "soon"), "WITH_LOCK_TTL: "},
		{env("WITH_LOCK_TTL", "100ms"), "WITH_LOCK_TTL 100ms is below the minimum of 200ms"},
		{env("WITH_LOCK_QUIET", "yes please"), "WITH_LOCK_QUIET: "},
		{env("WITH_LOCK_CONFLICT_EXIT_CODE", "300"), "WITH_LOCK_CONFLICT_EXIT_CODE 300 is outside 0-255"},
		{env("WITH_LOCK_ON_LOST", "kill"), `WITH_LOCK_ON_LOST "kill": expected term, ignore or reacquire`},
	} {
		_, err := config.Parse([]string{"job", "true"}, tc.env)
		if !errors.Is(err, config.ErrUsage) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "--") {
			t.Errorf("err = %v, want a usage error saying %q and naming no flag", err, tc.want)
		}
	}
}

// Every setting's variable is WITH_LOCK_*, its own, and none of those
// with-lock sets for the command or reads secrets from: a nested with-lock
// must not read its parent's lock as its own settings.
func TestSettingVariablesAreDistinct(t *testing.T) {
	reserved := []string{config.EnvLockName, config.EnvLockKey, config.EnvLockToken, config.EnvLockFence, config.EnvLockSlot,
		config.EnvPassword, config.EnvSentinelPassword, config.EnvRedisCLIAuth}
	seen := map[string]string{}
	for flag, v := range config.Env() {
		if !strings.HasPrefix(v, "WITH_LOCK_") || slices.Contains(reserved, v) {
			t.Errorf("--%s reads %s", flag, v)
		}
		if other, ok := seen[v]; ok {
			t.Errorf("--%s and --%s both read %s", flag, other, v)
		}
		seen[v] = flag
	}
	for _, flag := range []string{"redis", "ttl", "prefix", "redis-timeout", "password-file", "on-lost", "kill-after", "cluster"} {
		if _, ok := config.Env()[flag]; !ok {
			t.Errorf("--%s has no variable", flag)
		}
	}
	// Actions are not settings: WITH_LOCK_STATUS=1 must not turn every run into --status.
	for _, flag := range []string{"status", "json", "version", "help"} {
		if v, ok := config.Env()[flag]; ok {
			t.Errorf("action --%s reads %s", flag, v)
		}
	}
	var b strings.Builder
	config.Usage(&b)
	for flag, v := range config.Env() {
		if !strings.Contains(b.String(), "$"+v) {
			t.Errorf("--help does not show %s for --%s", v, flag)
		}
	}
}
