package withlock

// How late this process's timers fire: on a host loaded by the jobs
// themselves, the timer of the local deadline fires late, and so does
// everything that then stops the work; the margin grows to cover it.

import (
	"sync"
	"time"
)

// lateFactor is how many scheduling delays lie between the local deadline
// and the work's end: the deadline's timer fires late, the caller that
// stops the work wakes late, and the work, signalled, runs late to its end.
const lateFactor = 3

// lateTimer is the renewal timer; it also tells how late it fired.
type lateTimer struct {
	*time.Timer
	due time.Time
}

func newLateTimer(at time.Time) *lateTimer {
	return &lateTimer{Timer: time.NewTimer(time.Until(at)), due: at}
}

// resetAt sets the timer to fire at at.
func (t *lateTimer) resetAt(at time.Time) {
	t.due = at
	t.Reset(time.Until(at))
}

// late is, once C delivered, how long after its due time.
func (t *lateTimer) late() time.Duration { return max(time.Since(t.due), 0) }

// lateness keeps a decaying maximum of the renewal timer's lateness: a
// spike counts at once and fades by an eighth per renewal.
type lateness struct {
	mu    sync.Mutex
	worst time.Duration
}

func (l *lateness) observe(d time.Duration) {
	l.mu.Lock()
	l.worst = max(d, l.worst-l.worst/8)
	l.mu.Unlock()
}

func (l *lateness) get() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.worst
}

// slack is what the local deadline comes earlier than the margin alone
// says: lateFactor times the lateness this process's timers show, at most
// the margin again and a quarter of what the margin leaves of the TTL, so
// that renewals keep their room.
func (k *KeepAlive) slack() time.Duration {
	return min(lateFactor*k.sched.get(), k.margin, (k.lock.ttl-k.margin)/4)
}

// deadlineFrom is the local deadline of a lock whose last successful
// acquiring or renewing command was sent at base.
func (k *KeepAlive) deadlineFrom(base time.Time) time.Time {
	return base.Add(k.lock.ttl - k.margin - k.slack())
}

// observeLateness notes how late the renewal timer t fired and returns the
// local deadline from base with the slack that makes, which is set when it
// comes earlier than the current one. Failed renewals are retried often,
// so a lock in danger learns the host's load before its deadline.
func (k *KeepAlive) observeLateness(t *lateTimer, base time.Time) time.Time {
	k.sched.observe(t.late())
	at := k.deadlineFrom(base)
	k.mu.Lock()
	defer k.mu.Unlock()
	if at.Before(k.deadline) {
		k.deadline = at
	}
	return k.deadline
}
