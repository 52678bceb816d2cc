package config_test

import (
	"testing"

	"github.com/with-lock/with-lock/internal/config"
)

// The deployment is decided once, from the connection settings alone,
// however they were given.
func TestTopologyIsDecidedFromTheConnectionSettings(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want config.Topology
	}{
		{"the default Redis", nil, nil, config.Single},
		{"one URL", []string{"--redis", "redis://a"}, nil, config.Single},
		{"three masters", []string{"--redis", "redis://a", "--redis", "redis://b", "--redis", "redis://c"}, nil, config.Quorum},
		{"three masters from the environment", nil, map[string]string{"WITH_LOCK_REDIS": "redis://a redis://b redis://c"}, config.Quorum},
		{"cluster seeds", []string{"--cluster", "--redis", "redis://a", "--redis", "redis://b"}, nil, config.Cluster},
		{"one cluster seed", []string{"--cluster"}, nil, config.Cluster},
		{"sentinels", []string{"--sentinel", "h:1", "--sentinel", "h:2", "--sentinel-master", "m"}, nil, config.Sentinel},
		{"sentinel with the master's URL", []string{"--sentinel", "h:1", "--sentinel-master", "m", "--redis", "redis://a"}, nil, config.Sentinel},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Parse(append(tc.args, "name", "true"), envMap(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Topology(); got != tc.want {
				t.Errorf("Topology() = %s, want %s", got, tc.want)
			}
		})
	}
}
