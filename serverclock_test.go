package withlock

import (
	"testing"
	"time"
)

// KeepAlive tells of the server's clock only when it moved unlike this
// host's by more than a second (or a tenth of the TTL) beyond what the
// round trips leave unknown, and says which way.
func TestServerClockMovedTellsOnlyASteps(t *testing.T) {
	t.Parallel()
	base := time.Unix(1_796_000_000, 0)
	local := time.Now()
	for _, tc := range []struct {
		name   string
		ttl    time.Duration
		server time.Duration // how far the server's clock moved while this host's moved 10s
		spread time.Duration // each round trip's
		want   time.Duration // 0: not told
	}{
		{"in step", 30 * time.Second, 10 * time.Second, time.Millisecond, 0},
		{"a rate NTP slews at", 30 * time.Second, 10*time.Second + 5*time.Millisecond, time.Millisecond, 0},
		{"an hour ahead", 30 * time.Second, time.Hour + 10*time.Second, time.Millisecond, time.Hour},
		{"five seconds back", 30 * time.Second, 5 * time.Second, time.Millisecond, -5 * time.Second},
		{"half a second ahead on a 30s TTL", 30 * time.Second, 10*time.Second + 500*time.Millisecond, time.Millisecond, 0},
		{"half a second ahead on a 3s TTL", 3 * time.Second, 10*time.Second + 500*time.Millisecond, time.Millisecond, 500 * time.Millisecond},
		{"slow round trips hide it", 3 * time.Second, 10*time.Second + 500*time.Millisecond, 400 * time.Millisecond, 0},
	} {
		var told []time.Duration
		l := &Lock{ttl: tc.ttl}
		k := &KeepAlive{lock: l, onServerClock: func(d time.Duration) { told = append(told, d) }}
		for i, s := range []serverSample{
			{server: base, local: local, spread: tc.spread},
			{server: base.Add(tc.server), local: local.Add(10 * time.Second), spread: tc.spread},
		} {
			l.clock.last = s
			k.serverClockMoved()
			k.serverClockMoved() // the same reading again: nothing new
			if i == 0 && len(told) > 0 {
				t.Errorf("%s: told %v at the first reading", tc.name, told)
			}
		}
		switch {
		case tc.want == 0 && len(told) > 0:
			t.Errorf("%s: told %v, want nothing", tc.name, told)
		case tc.want != 0 && (len(told) != 1 || told[0] != tc.want):
			t.Errorf("%s: told %v, want [%s]", tc.name, told, tc.want)
		}
	}
}

// The extend script's reply carries TIME beside the answer, which note
// keeps and takes off.
func TestNoteTakesTheServersTimeOffTheReply(t *testing.T) {
	t.Parallel()
	var c serverClock
	sent := time.Now()
	if v := c.note([]any{int64(1), "1796000000", "250000"}, sent, sent.Add(4*time.Millisecond)); v != int64(1) {
		t.Errorf("reply %v, want 1", v)
	}
	s := c.sample()
	if !s.server.Equal(time.Unix(1_796_000_000, 250_000_000)) || !s.local.Equal(sent.Add(2*time.Millisecond)) || s.spread != 4*time.Millisecond {
		t.Errorf("sample %+v", s)
	}
	if v := c.note(int64(0), sent, sent); v != int64(0) {
		t.Errorf("a reply without TIME came back as %v", v)
	}
}
