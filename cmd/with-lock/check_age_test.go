package main

import (
	"testing"
	"time"
)

// --check says ages as the examples do: "3h12m", "4m10s", "26h".
func TestCheckSaysAgesInHoursMinutesSeconds(t *testing.T) {
	for d, want := range map[time.Duration]string{
		3*time.Hour + 12*time.Minute + 20*time.Second: "3h12m",
		3*time.Hour + 10*time.Minute:                  "3h10m",
		26 * time.Hour:                                "26h",
		4*time.Minute + 10*time.Second:                "4m10s",
		40 * time.Minute:                              "40m",
		12*time.Second + 400*time.Millisecond:         "12s",
		250 * time.Millisecond:                        "250ms",
		-time.Second:                                  "0s",
	} {
		if got := age(d); got != want {
			t.Errorf("age(%s) = %q, want %q", d, got, want)
		}
	}
}
