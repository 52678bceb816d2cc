package main

import (
	"strings"
	"testing"
	"time"
)

// The clock's judgement at its edges, which a real server shows only by
// chance: a skew just under the bound, and one that a slow round trip may
// hide (a server stepped seconds off: TestDoctorWarnsOfAServerClockSecondsOff).

func TestDoctorWarnsOfAClockMoreThanASecondOff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		off, half time.Duration
		code      int
		detail    string
	}{
		{20 * time.Millisecond, time.Millisecond, checkOK, "within 21 ms of this host's (warned past 1s)"},
		{-900 * time.Millisecond, time.Millisecond, checkOK, "within 901 ms"},
		// A slow round trip may hide the skew: only what is off beyond
		// its half is warned of.
		{1200 * time.Millisecond, 300 * time.Millisecond, checkOK, "within 1500 ms"},
		{3 * time.Second, time.Millisecond, checkWarning, "the server's clock is 3s ahead of this host's"},
		{-90 * time.Second, time.Millisecond, checkWarning, "the server's clock is 1m30s behind this host's"},
	} {
		f := clockFinding(tc.off, tc.half)
		if f.code != tc.code || !strings.Contains(f.detail, tc.detail) || (f.code == checkOK) != (f.advice == "") {
			t.Errorf("off %s ±%s: %s %q (advice %q), want %s with %q", tc.off, tc.half, checkStates[f.code], f.detail, f.advice, checkStates[tc.code], tc.detail)
		}
	}
}

func TestDoctorCombinesTheServersFindingsIntoTheWorst(t *testing.T) {
	t.Parallel()
	nodes := []*doctorNode{{label: "a:1"}, {label: "b:2"}, {label: "c:3"}}
	for _, tc := range []struct {
		found  []finding
		code   int
		detail string
		advice string
	}{
		{[]finding{ok("x"), ok("x"), ok("x")}, checkOK, "x (all 3)", ""},
		{[]finding{ok("x"), {checkUnknown, "u", "look"}, {checkWarning, "w", "fix"}}, checkWarning, "a:1: x; b:2: u; c:3: w", "fix"},
		{[]finding{{checkCritical, "c", "now"}, {checkUnknown, "u", "look"}, ok("x")}, checkCritical, "a:1: c; b:2: u; c:3: x", "now"},
		{[]finding{ok("x"), {checkUnknown, "u", "look"}, ok("x")}, checkUnknown, "b:2: u", "look"},
	} {
		f := (&doctor{nodes: nodes}).combine(nodes, tc.found)
		if f.code != tc.code || !strings.Contains(f.detail, tc.detail) || f.advice != tc.advice {
			t.Errorf("%v: %s %q %q, want %s %q %q", tc.found, checkStates[f.code], f.detail, f.advice, checkStates[tc.code], tc.detail, tc.advice)
		}
	}
	// The one server that answered of several is named; the one server of
	// the deployment is not.
	if f := (&doctor{nodes: nodes}).combine(nodes[1:2], []finding{ok("x")}); f.detail != "b:2: x" {
		t.Errorf("the one that answered of 3: %q, want it named", f.detail)
	}
	if f := (&doctor{nodes: nodes[:1]}).combine(nodes[:1], []finding{ok("x")}); f.detail != "x" {
		t.Errorf("the one server: %q, want it as it is", f.detail)
	}
}
