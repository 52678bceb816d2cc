package main

import (
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/config"
)

// Exit codes of with-lock itself, from sysexits.h where one fits. The
// command's own code passes through unchanged, so every one of these is
// accompanied by a line on stderr.
const (
	exitUsage       = 64  // EX_USAGE: bad command line
	exitUnavailable = 69  // EX_UNAVAILABLE: Redis unreachable, timed out, loading
	exitInternal    = 70  // EX_SOFTWARE: a bug or an impossible state
	exitNoPerm      = 77  // EX_NOPERM: Redis refused our credentials
	exitConfig      = 78  // EX_CONFIG: a configuration that cannot work
	exitLockLost    = 125 // the lock was lost while the command ran
)

// redisExit maps an error from talking to Redis to an exit code.
func redisExit(err error) int {
	if errors.Is(err, config.ErrConfig) || config.IsTLSConfigError(err) {
		return exitConfig
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		for _, prefix := range []string{"NOAUTH", "WRONGPASS", "NOPERM"} {
			if strings.HasPrefix(rerr.Error(), prefix) {
				return exitNoPerm
			}
		}
	}
	// Refused, reset, timed out, LOADING, READONLY, a failover in
	// progress: Redis cannot serve us now, and cron will try again.
	return exitUnavailable
}

// hint says what to do about a failure to acquire, after its cause.
func hint(code int, err error) string {
	switch {
	case errors.Is(err, withlock.ErrNotReplicated):
		return "" // Redis answered: its replicas did not
	case code == exitUnavailable:
		return " (is Redis up and reachable at the --redis / WITH_LOCK_REDIS address?)"
	case code == exitNoPerm:
		return " (check the user and password: URL, --password-file, WITH_LOCK_PASSWORD)"
	}
	return ""
}
