package withlock

import (
	"testing"
	"time"
)

// TestSlackFollowsTheTimersLateness: the local deadline comes earlier by
// three times the worst recent lateness of the renewal timer, which fades
// by an eighth per renewal, capped at the margin again and at a quarter of
// what the margin leaves of the TTL, so renewals keep their room.
func TestSlackFollowsTheTimersLateness(t *testing.T) {
	t.Parallel()
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, tc := range []struct {
		name         string
		ttl, margin  time.Duration
		late         []time.Duration
		want         time.Duration
		wantDeadline time.Duration // from the last success
	}{
		{"an idle host", time.Second, ms(200), []time.Duration{0, 0}, 0, ms(800)},
		{"late by 20ms", time.Second, ms(200), []time.Duration{ms(20)}, ms(60), ms(740)},
		{"a spike fades by an eighth per renewal", time.Second, ms(200), []time.Duration{ms(40), 0, 0}, 3 * (ms(40) * 7 / 8 * 7 / 8), ms(800) - 3*(ms(40)*7/8*7/8)},
		{"capped at the margin again", 30 * time.Second, ms(3100), []time.Duration{5 * time.Second}, ms(3100), 30*time.Second - ms(6200)},
		{"capped at a quarter of what the margin leaves", time.Second, ms(600), []time.Duration{time.Second}, ms(100), ms(300)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := &KeepAlive{lock: &Lock{ttl: tc.ttl}, margin: tc.margin}
			for _, d := range tc.late {
				k.sched.observe(d)
			}
			base := time.Now()
			if got := k.slack(); got != tc.want {
				t.Errorf("slack %s, want %s", got, tc.want)
			}
			if got := k.deadlineFrom(base).Sub(base); got != tc.wantDeadline {
				t.Errorf("deadline %s after the last success, want %s", got, tc.wantDeadline)
			}
		})
	}
}
