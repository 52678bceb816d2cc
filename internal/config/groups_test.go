package config_test

import (
	"errors"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/config"
)

func TestParseSupervisionFlags(t *testing.T) {
	term := config.Supervision{OnLost: config.OnLostTerm, KillAfter: config.DefaultKillAfter, RecordTTL: config.DefaultRecordTTL, Leftovers: config.LeftoversWait, Job: config.Job{Tracking: config.TrackingAuto}, HistorySize: config.DefaultHistorySize}
	text := config.Output{LogFormat: config.LogText}
	tests := []struct {
		args   []string
		want   config.Supervision
		output config.Output
		name   string
		cmd    int // length of the command
	}{
		{[]string{"job", "true"}, term, text, "job", 1},
		{[]string{"--no-renew", "--on-lost", "ignore", "--kill-after", "1s", "job", "sh", "-c", "x"},
			config.Supervision{NoRenew: true, OnLost: "ignore", KillAfter: time.Second, RecordTTL: config.DefaultRecordTTL, Leftovers: config.LeftoversWait, Job: config.Job{Tracking: config.TrackingAuto}, HistorySize: config.DefaultHistorySize}, text, "job", 3},
		{[]string{"--kill-after=0", "job", "true"}, config.Supervision{OnLost: "term", RecordTTL: config.DefaultRecordTTL, Leftovers: config.LeftoversWait, Job: config.Job{Tracking: config.TrackingAuto}, HistorySize: config.DefaultHistorySize}, text, "job", 1},
		{[]string{"--no-record", "--record-ttl", "1h", "job", "true"},
			config.Supervision{OnLost: "term", KillAfter: config.DefaultKillAfter, NoRecord: true, RecordTTL: time.Hour, Leftovers: config.LeftoversWait, Job: config.Job{Tracking: config.TrackingAuto}, HistorySize: config.DefaultHistorySize}, text, "job", 1},
		{[]string{"--list", "--all", "--json"}, term, config.Output{List: true, All: true, JSON: true, LogFormat: config.LogText}, "", 0},
		{[]string{"--break", "job"}, term, config.Output{Break: true, LogFormat: config.LogText}, "job", 0},
		{[]string{"--status", "job"}, term, config.Output{Status: true, LogFormat: config.LogText}, "job", 0},
		{[]string{"--status", "--json", "job"}, term, config.Output{Status: true, JSON: true, LogFormat: config.LogText}, "job", 0},
		{[]string{"-v", "job", "true"}, term, config.Output{Verbose: true, LogFormat: config.LogText}, "job", 1},
		{[]string{"--verbose", "--log-format", "json", "job", "true"}, term, config.Output{Verbose: true, LogFormat: config.LogJSON}, "job", 1},
		{[]string{"-q", "--log-format=json", "job", "true"}, term, config.Output{Quiet: true, LogFormat: config.LogJSON}, "job", 1},
	}
	for _, tt := range tests {
		c, err := config.Parse(tt.args, env())
		if err != nil {
			t.Errorf("%q: %v", tt.args, err)
			continue
		}
		if c.Supervision != tt.want || c.Output != tt.output || c.Name != tt.name || len(c.Command) != tt.cmd {
			t.Errorf("%q: got %+v %+v name %q command %q, want %+v %+v name %q and %d args",
				tt.args, c.Supervision, c.Output, c.Name, c.Command, tt.want, tt.output, tt.name, tt.cmd)
		}
	}
}

func TestParseLockFlags(t *testing.T) {
	c, err := config.Parse([]string{"--min-hold", "55s", "--fence", "--min-replicas", "2", "job", "true"}, env())
	if err != nil {
		t.Fatal(err)
	}
	if c.MinHold != 55*time.Second || !c.Fence || c.MinReplicas != 2 {
		t.Errorf("got %+v, want MinHold 55s, Fence, MinReplicas 2", c.Lock)
	}
}

func TestParseSupervisionAndStatusErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--status"},
		{"--status", "job", "true"},
		{"--status", ""},
		{"--json", "job", "true"},
		{"--on-lost", "kill", "job", "true"},
		{"--kill-after", "-1s", "job", "true"},
		{"--min-hold", "-5s", "job", "true"},
		{"--min-hold", "5x", "job", "true"},
		{"-w", "5s", "-n", "job", "true"},
		{"-n", "--wait=1", "job", "true"},
		{"--list", "job"},
		{"--break"},
		{"--break", "job", "true"},
		{"--break", "--status", "job"},
		{"--list", "--break", "job"},
		{"--all", "job", "true"},
		{"--all", "--status", "job"},
		{"--json", "--break", "job"},
		{"--record-ttl", "0", "job", "true"},
		{"--log-format", "xml", "job", "true"},
		{"-q", "-v", "job", "true"},
	} {
		if _, err := config.Parse(args, env()); !errors.Is(err, config.ErrUsage) {
			t.Errorf("%q: err = %v, want ErrUsage", args, err)
		}
	}
}

// -v and --log-format have their WITH_LOCK_* variables, as every setting.
func TestLogSettingsFromEnvironment(t *testing.T) {
	c, err := config.Parse([]string{"job", "true"}, func(k string) string {
		return map[string]string{"WITH_LOCK_VERBOSE": "true", "WITH_LOCK_LOG_FORMAT": "json"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Verbose || c.LogFormat != config.LogJSON {
		t.Errorf("Verbose %v, LogFormat %q from the environment; want true, json", c.Verbose, c.LogFormat)
	}
}
