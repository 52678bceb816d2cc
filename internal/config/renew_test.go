package config_test

import (
	"errors"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/config"
)

func TestParseRenewFlags(t *testing.T) {
	noEnv := func(string) string { return "" }
	tests := []struct {
		args []string
		want config.RenewConfig
		name string
		cmd  int // length of the command
	}{
		{[]string{"job", "true"}, config.RenewConfig{OnLost: "term", KillAfter: 5 * time.Second}, "job", 1},
		{[]string{"--no-renew", "--on-lost", "ignore", "--kill-after", "1s", "--min-hold", "55s", "--fence", "job", "sh", "-c", "x"},
			config.RenewConfig{NoRenew: true, OnLost: "ignore", KillAfter: time.Second, MinHold: 55 * time.Second, Fence: true}, "job", 3},
		{[]string{"--kill-after=0", "job", "true"}, config.RenewConfig{OnLost: "term"}, "job", 1},
		{[]string{"--status", "job"}, config.RenewConfig{OnLost: "term", KillAfter: 5 * time.Second, Status: true}, "job", 0},
		{[]string{"--status", "--json", "job"}, config.RenewConfig{OnLost: "term", KillAfter: 5 * time.Second, Status: true, JSON: true}, "job", 0},
	}
	for _, tt := range tests {
		c, err := config.Parse(tt.args, noEnv)
		if err != nil {
			t.Errorf("%q: %v", tt.args, err)
			continue
		}
		if c.RenewConfig != tt.want || c.Name != tt.name || len(c.Command) != tt.cmd {
			t.Errorf("%q: got %+v name %q command %q, want %+v name %q and %d args", tt.args, c.RenewConfig, c.Name, c.Command, tt.want, tt.name, tt.cmd)
		}
	}
}

func TestParseRenewFlagsErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--status"},
		{"--status", "job", "true"},
		{"--status", ""},
		{"--json", "job", "true"},
		{"--on-lost", "kill", "job", "true"},
		{"--kill-after", "-1s", "job", "true"},
		{"--min-hold", "-5s", "job", "true"},
		{"--min-hold", "5", "job", "true"},
	} {
		if _, err := config.Parse(args, func(string) string { return "" }); !errors.Is(err, config.ErrUsage) {
			t.Errorf("%q: err = %v, want ErrUsage", args, err)
		}
	}
}
