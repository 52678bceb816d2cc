// Package withlock is a distributed lock on Redis for jobs that must not run
// twice at once, and the library behind the with-lock command.
//
// A lock is one Redis key holding a token unique to its owner. It is taken
// with a single SET key token NX PX ttl, so it either exists with a TTL or
// not at all, and it is released or extended only by Lua scripts that first
// compare the token, so an owner whose lock expired and was taken over never
// deletes or prolongs the new owner's lock.
//
// The Redis client should not retry commands on its own (go-redis:
// MaxRetries -1): a SET NX that timed out may have landed, and a blind retry
// would then find the key "held". TryAcquire recognises its own token in
// that case, but a retry can still stretch an acquisition past its context.
package withlock
