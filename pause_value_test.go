package withlock

import (
	"testing"
	"time"
)

// A pause's value in the lock key reads back as the pause it stores, a
// reason with the separator included, and no token or marker reads as a
// pause.
func TestPauseValueReadsBackAndIsNoToken(t *testing.T) {
	since := time.UnixMilli(1_764_000_000_000)
	for _, p := range []Pause{
		{By: "db1:alice", Since: since, Reason: "db migration"},
		{By: "db1:alice", Since: since, Until: since.Add(time.Hour), Reason: "a|b: c"},
		{By: "db1:", Since: since},
	} {
		got, ok := pauseOf(pauseValue(p))
		if !ok || got.By != p.By || !got.Since.Equal(p.Since) || !got.Until.Equal(p.Until) || got.Reason != p.Reason {
			t.Errorf("pauseOf(pauseValue(%+v)) = %+v, %v", p, got, ok)
		}
	}
	token, err := newToken(ownerPrefix(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{token, "#slots=3", "", "paused", "otherhost:4242:0123456789abcdef"} {
		if _, ok := pauseOf(v); ok {
			t.Errorf("pauseOf(%q) reads a pause", v)
		}
	}
}
