package config_test

import (
	"errors"
	"testing"

	"github.com/with-lock/with-lock/internal/config"
)

// The output's sizes are KiB within their bounds; --output-on-failure
// knows whether it came from the command line, which alone holds back a
// terminal's output.
func TestCaptureSettings(t *testing.T) {
	tests := []struct {
		args               []string
		env                []string
		record, ping       int
		onFailure, asAFlag bool
		err                error
	}{
		{args: []string{"job", "true"}, ping: config.DefaultPingOutput},
		{args: []string{"--record-output", "64", "--ping-output", "0", "job", "true"}, record: 64},
		{args: []string{"--ping-output", "1024", "job", "true"}, ping: 1024},
		{args: []string{"--output-on-failure", "job", "true"}, ping: config.DefaultPingOutput, onFailure: true, asAFlag: true},
		{args: []string{"job", "true"}, env: []string{"WITH_LOCK_OUTPUT_ON_FAILURE", "1"}, ping: config.DefaultPingOutput, onFailure: true},
		{args: []string{"--record-output", "65", "job", "true"}, err: config.ErrUsage},
		{args: []string{"--record-output", "-1", "job", "true"}, err: config.ErrUsage},
		{args: []string{"--ping-output", "1025", "job", "true"}, err: config.ErrUsage},
	}
	for _, tt := range tests {
		c, ok := parsed(t, tt.args, env(tt.env...), tt.err)
		switch {
		case !ok:
		case c.RecordOutput != tt.record || c.PingOutput != tt.ping || c.OutputOnFailure != tt.onFailure || c.OutputOnFailureIsAFlag() != tt.asAFlag:
			t.Errorf("%q %q: got %+v, as a flag %v; want record %d, ping %d, on failure %v, as a flag %v",
				tt.args, tt.env, c.Capture, c.OutputOnFailureIsAFlag(), tt.record, tt.ping, tt.onFailure, tt.asAFlag)
		}
	}
}

// parsed is Parse(args, getenv) when it must succeed (want nil), and true;
// when it must fail with want, it checks that it did, and is false.
func parsed(t *testing.T, args []string, getenv func(string) string, want error) (*config.Config, bool) {
	t.Helper()
	c, err := config.Parse(args, getenv)
	switch {
	case want != nil:
		if !errors.Is(err, want) {
			t.Errorf("%q: err %v, want %v", args, err, want)
		}
		return nil, false
	case err != nil:
		t.Errorf("%q: %v", args, err)
		return nil, false
	}
	return c, true
}
