package main

import (
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/config"
	"github.com/with-lock/with-lock/internal/supervise"
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
	exitTimedOut    = 124 // --max-run stopped the job, as timeout(1) exits
	exitLockLost    = 125 // the lock was lost while the command ran
)

// redisExit maps an error from talking to Redis to an exit code.
func redisExit(err error) int {
	switch {
	case errors.Is(err, config.ErrConfig), config.IsTLSConfigError(err),
		errors.Is(err, withlock.ErrWrongType), errors.Is(err, withlock.ErrSlotsMismatch), isNoSuchDatabase(err):
		// Retrying will not help: the configuration or the data is wrong.
		return exitConfig
	case redis.IsAuthError(err), redis.IsPermissionError(err), isScriptNoPerm(err):
		return exitNoPerm
	case errors.Is(err, errors.ErrUnsupported):
		// A combination the settings allow but the lock does not (a
		// --slots name with '}' and no hash tag): the command line must
		// change.
		return exitUsage
	}
	// Refused, reset, timed out, LOADING, READONLY, a failover in
	// progress: Redis cannot serve us now, and cron will try again.
	return exitUnavailable
}

// isNoSuchDatabase reports whether Redis refused the SELECT of the URL's
// database: the server has fewer databases (its databases setting). go-redis
// has no predicate for this reply, so it is matched by its text, which
// Redis has kept since 2.x. HasErrorPrefix drops the leading "ERR ".
func isNoSuchDatabase(err error) bool {
	return redis.HasErrorPrefix(err, "DB index is out of range")
}

// isScriptNoPerm reports whether the server refused a command run by one
// of our Lua scripts because the ACL user may not run it. It says so in an
// ERR reply, not NOPERM, so go-redis's IsPermissionError does not match,
// and the text is all there is: Redis 6.0 to 7.0 write "The user executing
// the script can't run this command or subcommand"; Redis 7.2 and later
// and Valkey write "ACL failure in script: User <u> has no permissions to
// run the '<cmd>' command" (TestLeastPrivilegeACL runs on each server of
// make test-servers).
func isScriptNoPerm(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "The user executing the script can't run this command") ||
		strings.Contains(msg, "ACL failure in script")
}

// hint says what to do about a failure to acquire, after its cause. Only a
// failure to reach Redis asks whether it is up: when Redis answered, the
// hint is about what it said.
func hint(code int, err error) string {
	var rerr redis.Error
	switch {
	case errors.Is(err, withlock.ErrNotReplicated):
		return "" // Redis answered: its replicas did not
	case errors.Is(err, errors.ErrUnsupported):
		return " (see with-lock --help)"
	case isNoSuchDatabase(err):
		return " (the Redis URL names a database that server does not have: see its databases setting)"
	case isScriptNoPerm(err):
		return " (the Redis user lacks a command with-lock needs: see the least-privilege ACL in docs/production-redis.md)"
	case code == exitNoPerm:
		return " (check the user and password: URL, --password-file, WITH_LOCK_PASSWORD)"
	case code != exitUnavailable:
		return ""
	case len(outermost(err, isUnresolved, nil)) > 0:
		return " (check the host name in --redis / WITH_LOCK_REDIS)"
	case redis.IsLoadingError(err):
		return " (Redis is loading its data set; try again when it is done)"
	case redis.IsReadOnlyError(err):
		return " (that server is a read-only replica: point --redis / WITH_LOCK_REDIS at the master, or use --sentinel to find it)"
	case redis.IsMasterDownError(err), redis.IsClusterDownError(err), redis.IsTryAgainError(err):
		return " (Redis is failing over or resharding; try again)"
	case redis.IsOOMError(err):
		return " (Redis is out of memory: see its maxmemory setting)"
	case redis.IsNoReplicasError(err):
		return " (Redis refuses writes while too few replicas are connected: see its min-replicas-to-write)"
	case redis.IsMaxClientsError(err):
		return " (Redis has too many clients: see its maxclients setting)"
	case errors.As(err, &rerr):
		return "" // Redis answered; its reply says what went wrong
	}
	return askReachable
}

// askReachable is hint's question when Redis did not answer at all.
const askReachable = " (is Redis up and reachable at the --redis / WITH_LOCK_REDIS address?)"

// startFailed reports a command that could not be started and returns
// the exit code a shell would give: 126 or 127.
func (r *runner) startFailed(err error) int {
	var serr *supervise.StartError
	if errors.As(err, &serr) {
		if serr.Code == supervise.ExitNotFound && config.IsFlag(r.cfg.Command[0]) {
			// "with-lock x -q true": -q was meant for with-lock.
			return r.log.failed(serr.Code, "%v (flags go before the lock name)", serr)
		}
		return r.log.failed(serr.Code, "%v", serr)
	}
	if errors.Is(err, supervise.ErrNoLimits) || errors.Is(err, supervise.ErrNoScope) {
		// What was asked of the surroundings they do not give: the
		// command is not run unlimited or untracked instead.
		return r.log.failed(exitConfig, "%v; command not run", err)
	}
	return r.log.failed(exitInternal, "%v", err)
}
