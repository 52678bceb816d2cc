package main

import (
	"testing"
	"time"

	withlock "github.com/with-lock/with-lock"
)

// The busy line, for each state a held lock can be in, at a fixed time.
func TestBusyLineWording(t *testing.T) {
	now := time.Date(2026, 11, 30, 14, 2, 7, 400e6, time.Local)
	for _, tc := range []struct {
		name string
		st   withlock.Status
		want string
	}{
		{"taken just now", withlock.Status{Key: "lock:x", Held: true, Holder: withlock.Holder{ID: "vm:2497", TTL: 29994 * time.Millisecond, Since: now.Add(-300 * time.Millisecond)}},
			"lock:x is held by vm:2497 since 14:02:07 (just now), expires in 29.994s"},
		{"held a while", withlock.Status{Key: "lock:x", Held: true, Holder: withlock.Holder{ID: "vm:2497", TTL: 24500 * time.Millisecond, Since: now.Add(-12 * time.Minute)}},
			"lock:x is held by vm:2497 since 13:50:07 (12m ago), expires in 24.5s"},
		{"since unknown", withlock.Status{Key: "lock:x", Held: true, Holder: withlock.Holder{ID: "unknown", TTL: time.Second}},
			"lock:x is held by an unknown owner (a value with-lock did not write), expires in 1s"},
		{"no expiry", withlock.Status{Key: "lock:x", Held: true, Holder: withlock.Holder{ID: "otherhost:4242", TTL: -1}},
			"lock:x is held by otherhost:4242 with no expiry: it will never free by itself (see --status; --break removes it)"},
		{"finished, min-hold", withlock.Status{Key: "lock:x", Held: true, Holder: withlock.Holder{ID: "vm:6854", TTL: 9*time.Minute + 59994*time.Millisecond}, KeptByMinHold: true},
			"lock:x is kept by --min-hold until 14:12:07 (10m0s from now): the last run, by vm:6854, has finished"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := busyMessage(&tc.st, now); got != tc.want {
				t.Errorf("busyMessage = %q\nwant          %q", got, tc.want)
			}
		})
	}
}

// What a wait that ran out says keeps the lock, for each state.
func TestWaitedForWording(t *testing.T) {
	now := time.Date(2026, 11, 30, 14, 2, 7, 400e6, time.Local)
	for _, tc := range []struct {
		name string
		st   withlock.Status
		want string
	}{
		{"held a while", withlock.Status{Key: "lock:x", Held: true, Holder: withlock.Holder{ID: "vm:2497", TTL: 24500 * time.Millisecond, Since: now.Add(-12 * time.Minute)}},
			"held by vm:2497 since 13:50:07 (12m ago)"},
		{"no expiry", withlock.Status{Key: "lock:x", Held: true, Holder: withlock.Holder{ID: "otherhost:4242", TTL: -1}},
			"held by otherhost:4242 with no expiry: it will never free by itself (see --status; --break removes it)"},
		{"finished, min-hold", withlock.Status{Key: "lock:x", Held: true, Holder: withlock.Holder{ID: "vm:6854", TTL: 9*time.Minute + 59994*time.Millisecond}, KeptByMinHold: true},
			"the last run, by vm:6854, has finished and --min-hold keeps the lock until 14:12:07 (10m0s from now)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := waitedFor(&tc.st, now); got != tc.want {
				t.Errorf("waitedFor = %q\nwant        %q", got, tc.want)
			}
		})
	}
}
