package withlock

// The server's clock, read by the renewal: Redis expires keys by its wall
// clock, so a step of that clock moves every lock's expiry at once (a step
// forward expires them). The extend script returns the server's TIME with
// its answer, in the renewal's round trip, and KeepAlive compares how far
// it moved between two renewals with how far this host's monotonic clock
// did (KeepAliveOptions.OnServerClock).

import (
	"strconv"
	"sync"
	"time"
)

// withServerTime is the extend scripts' ARGV[3]: any value asks for TIME.
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

// note keeps the TIME in the extend script's reply v, sent at sent and
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
