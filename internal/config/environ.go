package config

import "strings"

// Variables with-lock sets for the command: they describe its own lock.
const (
	EnvLockName  = "WITH_LOCK_NAME"
	EnvLockKey   = "WITH_LOCK_KEY"
	EnvLockToken = "WITH_LOCK_TOKEN"
	EnvLockFence = "WITH_LOCK_FENCE" // only with --fence
	EnvLockSlot  = "WITH_LOCK_SLOT"  // 1..N, only with --slots N > 1
)

// CommandEnviron returns env (as from os.Environ) as the command should
// inherit it, before with-lock adds its own lock's variables:
//   - without the variables that carry Redis secrets: the command must not
//     inherit a password it was never meant to see. WITH_LOCK_REDIS goes
//     only when its URLs hold a password;
//   - without WITH_LOCK_NAME, _KEY, _TOKEN, _FENCE and _SLOT, which belong to an
//     outer with-lock (or the caller's shell): a command under a lock
//     without --fence must not see another lock's fencing number.
func CommandEnviron(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		switch name {
		case EnvPassword, EnvRedisCLIAuth, EnvSentinelPassword,
			EnvLockName, EnvLockKey, EnvLockToken, EnvLockFence, EnvLockSlot:
			continue
		case EnvRedis:
			if hasPassword(strings.Fields(value)...) {
				continue
			}
		}
		out = append(out, kv)
	}
	return out
}
