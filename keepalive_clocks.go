package withlock

// The two clocks a renewal watches. The server's: Redis expires keys by
// its wall clock, so a step of that clock moves every lock's expiry at
// once (a step forward expires them). The renew script returns the
// server's TIME with its answer, in the renewal's round trip, and
// KeepAlive compares how far it moved between two renewals with how far
// this host's monotonic clock did (KeepAliveOptions.OnServerClock). This
// host's: how late its timers fire (lateTimer, lateness below).

import (
	"strconv"
	"sync"
	"time"
)

// withServerTime is the renewal scripts' ARGV[3] (extend.lua and its kin): any value asks for TIME.
const withServerTime = "t"

// serverSample is one reading of the server's clock: server, its TIME, and
// local, this host's clock (monotonic) halfway through the round trip
// that read it, which took spread.
type serverSample struct {
	server time.Time
	local  time.Time
	spread time.Duration
}

// serverClock is the last serverSample of a Lock's renewals.
type serverClock struct {
	mu   sync.Mutex
	last serverSample
}

// note keeps the TIME in the renewal script's reply v, sent at sent and
// answered at done, and returns the reply without it.
func (c *serverClock) note(v any, sent, done time.Time) any {
	a, ok := v.([]any)
	if !ok || len(a) != 3 {
		return v
	}
	sec, err1 := strconv.ParseInt(str(a[1]), 10, 64)
	usec, err2 := strconv.ParseInt(str(a[2]), 10, 64)
	if err1 == nil && err2 == nil {
		took := done.Sub(sent)
		c.mu.Lock()
		c.last = serverSample{server: time.Unix(sec, usec*1000), local: sent.Add(took / 2), spread: took}
		c.mu.Unlock()
	}
	return a[0]
}

// str is a reply element as a string: TIME's parts come as bulk strings.
func str(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	}
	return ""
}

// sample returns the last reading, zero before the first.
func (c *serverClock) sample() serverSample {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// serverClockMoved compares the server's clock with this host's since the
// last reading KeepAlive looked at, and calls OnServerClock when the server's
// moved by more than it should: more than a second, or a tenth of the TTL
// when that is less, beyond what the two round trips leave unknown.
func (k *KeepAlive) serverClockMoved() {
	s := k.lock.clock.sample()
	prev := k.clockSeen
	if s.local.IsZero() || s.local.Equal(prev.local) {
		return
	}
	k.clockSeen = s
	if prev.local.IsZero() || k.onServerClock == nil {
		return
	}
	moved := s.server.Sub(prev.server) - s.local.Sub(prev.local)
	if abs(moved) > min(time.Second, k.lock.ttl/10)+(s.spread+prev.spread)/2 {
		k.onServerClock(moved)
	}
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// How late this process's timers fire: on a host loaded by the jobs
// themselves, the timer of the local deadline fires late, and so does
// everything that then stops the work; the margin grows to cover it.

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
