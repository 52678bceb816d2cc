package main

import (
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestNewMasterIsReadFromTheSentinelsEvents: the promoted master's address
// is read from both announcements, for the configured master's name only.
func TestNewMasterIsReadFromTheSentinelsEvents(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		channel, payload, want string
	}{
		{"+selected-slave", "slave 10.0.0.2:6379 10.0.0.2 6379 @ mymaster 10.0.0.1 6379", "10.0.0.2:6379"},
		{"+promoted-slave", "slave 10.0.0.2:6379 10.0.0.2 6379 @ mymaster 10.0.0.1 6379", "10.0.0.2:6379"},
		{"+switch-master", "mymaster 10.0.0.1 6379 10.0.0.2 6379", "10.0.0.2:6379"},
		{"+switch-master", "mymaster ::1 6379 ::2 6380", "[::2]:6380"},
		{"+promoted-slave", "slave 10.0.0.2:6379 10.0.0.2 6379 @ other 10.0.0.1 6379", ""},
		{"+switch-master", "other 10.0.0.1 6379 10.0.0.2 6379", ""},
		{"+switch-master", "mymaster 10.0.0.1 6379", ""},
		{"+sdown", "master mymaster 10.0.0.1 6379", ""},
	} {
		got := newMaster(&redis.Message{Channel: tc.channel, Payload: tc.payload}, "mymaster")
		if got != tc.want {
			t.Errorf("%s %q: %q, want %q", tc.channel, tc.payload, got, tc.want)
		}
	}
}
