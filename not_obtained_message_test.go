package withlock_test

import (
	"testing"
	"time"

	withlock "github.com/with-lock/with-lock"
)

// A NotObtainedError reads as a sentence about the key: never "lock
// lock:x", "for 0s" or "expires in 0s" when the time held or left is
// nothing or unknown.
func TestNotObtainedErrorReadsWell(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name string
		err  withlock.NotObtainedError
		want string
	}{
		{"held a while", withlock.NotObtainedError{Key: "lock:x", Holder: withlock.Holder{ID: "web2:4711", TTL: 24500 * time.Millisecond, Since: now.Add(-192 * time.Second)}},
			"lock:x is held by web2:4711 for 3m12s (expires in 24.5s)"},
		{"taken just now", withlock.NotObtainedError{Key: "lock:x", Holder: withlock.Holder{ID: "web2:4711", TTL: 30 * time.Second, Since: now}},
			"lock:x is held by web2:4711, taken just now (expires in 30s)"},
		{"expiry unknown", withlock.NotObtainedError{Key: "lock:x", Holder: withlock.Holder{ID: "unknown"}},
			"lock:x is held by unknown"},
		{"semaphore", withlock.NotObtainedError{Key: "lock:b", Holder: withlock.Holder{ID: "db1:7352", TTL: 29 * time.Second, Since: now}, Slots: 2},
			"all 2 slots of lock:b are held; the first to free is db1:7352's, taken just now (expires in 29s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.err.Error()
			if got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
		})
	}
}
