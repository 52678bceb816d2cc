package config_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/config"
)

// --stop-signal takes a signal that may mean "stop" by name, with or
// without SIG, in any case, or by number; --stop-timeout a duration, 0 by
// default: wait for the job.
func TestStoppingSettings(t *testing.T) {
	tests := []struct {
		args    []string
		sig     syscall.Signal
		timeout time.Duration
		err     error
	}{
		{args: []string{"job", "true"}, sig: syscall.SIGTERM},
		{args: []string{"--stop-signal", "INT", "--stop-timeout", "90s", "job", "true"}, sig: syscall.SIGINT, timeout: 90 * time.Second},
		{args: []string{"--stop-signal", "sigusr1", "job", "true"}, sig: syscall.SIGUSR1},
		{args: []string{"--stop-signal", "SIGQUIT", "job", "true"}, sig: syscall.SIGQUIT},
		{args: []string{"--stop-signal", "9", "job", "true"}, sig: syscall.SIGKILL},
		{args: []string{"--stop-signal", "STOP", "job", "true"}, err: config.ErrUsage},
		{args: []string{"--stop-signal", "CHLD", "job", "true"}, err: config.ErrUsage},
		{args: []string{"--stop-signal", "NOPE", "job", "true"}, err: config.ErrUsage},
		{args: []string{"--stop-signal", "0", "job", "true"}, err: config.ErrUsage},
		{args: []string{"--stop-timeout", "-1s", "job", "true"}, err: config.ErrUsage},
	}
	for _, tt := range tests {
		c, ok := parsed(t, tt.args, env(), tt.err) // capture_test.go
		switch {
		case !ok:
		case c.StopWith() != tt.sig || c.StopTimeout != tt.timeout:
			t.Errorf("%q: signal %v, timeout %s; want %v and %s", tt.args, c.StopWith(), c.StopTimeout, tt.sig, tt.timeout)
		}
	}
}
