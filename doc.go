// Package withlock is a distributed lock on Redis for jobs that must not run
// twice at once, and the library behind the with-lock command.
//
// A lock is one Redis key holding a token unique to its owner. It is taken
// with a single SET key token NX PX ttl, so it either exists with a TTL or
// not at all, and it is released or renewed only by Lua scripts that first
// compare the token, so an owner whose lock expired and was taken over never
// deletes or renews the new owner's lock.
//
// Renewal is one concept under two calls: Lock.Extend renews a lock once,
// and Lock.KeepAlive keeps renewing it until Stop or a loss.
//
// # Which entry point
//
// Make a Client with New on one Redis deployment (a server, Sentinel or
// Cluster), then:
//
//   - Do runs a function under the lock: it acquires, renews in the
//     background, cancels the function's context if the lock is lost, and
//     releases. Use it unless you need the steps apart.
//   - TryAcquire takes a free lock or fails at once with a
//     *NotObtainedError (ErrNotObtained): a job that should simply skip
//     this run when another one is running.
//   - Acquire waits until the lock is free or its context ends, woken by
//     the holder's release message rather than by polling.
//   - Lock.KeepAlive renews a lock taken by hand and tells you when it is
//     lost; Lock.Release gives it up.
//
// What they guarantee: while the key holds your token nobody else can take
// the lock, and a crashed owner's lock is free again within its TTL. What
// they cannot: a process paused longer than the TTL, or a failover to a
// replica that had not received the key (Redis replicates asynchronously;
// LockOptions.MinReplicas narrows this), may let two owners believe they
// hold the lock. KeepAlive reports the loss before the key can have expired,
// and Lock.Fence gives a number that resources can use to reject the
// stale owner's writes.
//
// NewQuorum takes each lock on a majority of independent masters (the
// Redlock algorithm), so it survives the loss of any minority of them,
// including a restart without persistence. Its caveats: it assumes bounded
// clock drift between the nodes and process pauses shorter than the TTL; it
// has no fencing numbers; waiting listens to the first node only; and every
// operation costs a round trip to each node.
//
// NewSemaphore admits up to N holders per name on one deployment: each
// holder is a plain lock on one of the name's N slots, with everything
// above, and every user of a name must use the same N (ErrSlotsMismatch).
//
// The Redis client should not retry commands on its own (go-redis:
// MaxRetries -1): a SET NX that timed out may have landed, and a blind retry
// would then find the key "held". TryAcquire recognises its own token in
// that case, but a retry can still stretch an acquisition past its context.
package withlock
