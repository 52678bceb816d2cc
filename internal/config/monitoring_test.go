package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/with-lock/with-lock/internal/config"
)

// The monitoring settings refuse what cannot work, before anything runs,
// and --check takes its name as its value so that its options may follow.
func TestMonitoringSettingsRefuseWhatCannotWork(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--ping", "ftp://h/x", "job", "true"}, "--ping is not an http:// or https:// URL"},
		{[]string{"--ping", "https:///x", "job", "true"}, "--ping is not an http:// or https:// URL"},
		{[]string{"--ping-timeout", "0", "job", "true"}, "--ping-timeout 0s must be positive"},
		{[]string{"--max-age", "25h", "job", "true"}, "--max-age goes with --check"},
		{[]string{"--running-ok", "1h", "--status", "job"}, "--running-ok goes with --check"},
		{[]string{"--check", "job", "--max-age", "1h", "--warn-age", "2h"}, "--warn-age 2h0m0s must be below --max-age 1h0m0s"},
		{[]string{"--check", "job", "--max-age", "-1s"}, "--max-age -1s is negative"},
		{[]string{"--min-duration", "1s", "job", "true"}, "--min-duration goes with --check"},
		{[]string{"--duration-outlier", "--status", "job"}, "--duration-outlier goes with --check"},
		{[]string{"--check", "job", "--max-duration", "-1s"}, "--max-duration -1s is negative"},
		{[]string{"--check", "job", "--min-duration", "2s", "--max-duration", "1s"}, "--min-duration 2s must be below --max-duration 1s"},
		{[]string{"--check", "job", "other"}, "--check NAME takes no other name and no command"},
		{[]string{"--check", "job", "--status"}, "go alone"},
	} {
		_, err := config.Parse(tc.args, env())
		if !errors.Is(err, config.ErrUsage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want a usage error saying %q", tc.args, err, tc.want)
		}
	}
	c, err := config.Parse([]string{"--check", "nightly-report", "--max-age", "25h", "--json"}, env())
	if err != nil || c.Name != "nightly-report" || c.Command != nil || c.MaxAge.Hours() != 25 || !c.JSON {
		t.Errorf("--check nightly-report --max-age 25h --json: %+v, %v", c, err)
	}
}
