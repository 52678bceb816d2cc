package main

// How messages word a holder, a wait that ran out and an age, and how
// --list lays out its table, checked without a server.

import (
	"bytes"
	"strings"
	"testing"
	"time"

	withlock "github.com/with-lock/with-lock"
)

// The busy line, for each state a held lock can be in, at a fixed time.
func TestBusyLineWording(t *testing.T) {
	t.Parallel()
	checkWording(t, "busyMessage", busyMessage, []wording{
		{"taken just now", "lock:x is held by vm:2497 since 14:02:07 (just now), expires in 29.994s"},
		{"held a while", "lock:x is held by vm:2497 since 13:50:07 (12m ago), expires in 24.5s"},
		{"since unknown", "lock:x is held by an unknown owner (a value with-lock did not write), expires in 1s"},
		{"no expiry", "lock:x is held by otherhost:4242 with no expiry: it will never free by itself (see --status; --break removes it)"},
		{"finished, min-hold", "lock:x is kept by --min-hold until 14:12:07 (10m0s from now): the last run, by vm:6854, has finished"},
	})
}

// What a wait that ran out says keeps the lock, for each state.
func TestWaitedForWording(t *testing.T) {
	t.Parallel()
	checkWording(t, "waitedFor", waitedFor, []wording{
		{"held a while", "held by vm:2497 since 13:50:07 (12m ago)"},
		{"no expiry", "held by otherhost:4242 with no expiry: it will never free by itself (see --status; --break removes it)"},
		{"finished, min-hold", "the last run, by vm:6854, has finished and --min-hold keeps the lock until 14:12:07 (10m0s from now)"},
	})
}

// wording is what a message should say for one of heldStates' states.
type wording struct{ state, want string }

// heldStates are the states a held lock can be in, as Status reports them
// at now: the busy line and a wait that ran out word the same states.
func heldStates(now time.Time) map[string]withlock.Status {
	return map[string]withlock.Status{
		"taken just now":     {Key: "lock:x", Held: true, Holder: withlock.Holder{ID: "vm:2497", TTL: 29994 * time.Millisecond, Since: now.Add(-300 * time.Millisecond)}},
		"held a while":       {Key: "lock:x", Held: true, Holder: withlock.Holder{ID: "vm:2497", TTL: 24500 * time.Millisecond, Since: now.Add(-12 * time.Minute)}},
		"since unknown":      {Key: "lock:x", Held: true, Holder: withlock.Holder{ID: "unknown", TTL: time.Second}},
		"no expiry":          {Key: "lock:x", Held: true, Holder: withlock.Holder{ID: "otherhost:4242", TTL: -1}},
		"finished, min-hold": {Key: "lock:x", Held: true, Holder: withlock.Holder{ID: "vm:6854", TTL: 9*time.Minute + 59994*time.Millisecond}, KeptByMinHold: true},
	}
}

// checkWording runs word, named fn, on each state in cases at a fixed time
// and checks what it says, one subtest a state.
func checkWording(t *testing.T, fn string, word func(*withlock.Status, time.Time) string, cases []wording) {
	t.Helper()
	now := time.Date(2026, 11, 30, 14, 2, 7, 400e6, time.Local)
	states := heldStates(now)
	for _, tc := range cases {
		st, ok := states[tc.state]
		if !ok {
			t.Fatalf("no state %q in heldStates", tc.state)
		}
		t.Run(tc.state, func(t *testing.T) {
			if got := word(&st, now); got != tc.want {
				t.Errorf("%s = %q\nwant %q", fn, got, tc.want)
			}
		})
	}
}

// --check says ages as the examples do: "3h12m", "4m10s", "26h".
func TestCheckSaysAgesInHoursMinutesSeconds(t *testing.T) {
	t.Parallel()
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

// --list pads its table itself, as text/tabwriter does: the same bytes for
// any cells, a name in any script, a holder wider than its header, and a
// cell with a character tabwriter gives a meaning (then tabwriter writes it).
func TestListTableIsAlignedAsTabwriterAlignsIt(t *testing.T) {
	t.Parallel()
	header := [6]string{"NAME", "HOLDER", "HELD FOR", "EXPIRES IN", "FENCE", "LAST RUN"}
	for name, rows := range map[string]table{
		"header only": {header},
		"plain": {header, {"job-1", "web-1:4242", "3s", "27.5s", "-", "-"},
			{"nightly-backup", "db-2.example.com:1", "1h2m3s", "never", "17", "db-2:9, finished 2026-12-02 07:00:00 UTC (1h ago) after 3s, exit 0"}},
		"other scripts": {header, {"ünïcödé", "hôte:1", "-", "-", "-", "-"}, {"名前", "x:2", "1s", "2s", "3", "-"}},
		"empty cells":   {header, {"", "", "", "", "", ""}, {"a", "", "b", "", "c", ""}},
		"a tab":         {header, {"a\tb", "h:1", "1s", "2s", "-", "-"}, {"c", "h:2", "1s", "2s", "-", "-"}},
		"a newline":     {header, {"a\nb", "h:1", "1s", "2s", "-", "-"}},
		"not UTF-8":     {header, {"a\xffb\xfe", "h:1", "1s", "2s", "-", "-"}},
	} {
		t.Run(name, func(t *testing.T) {
			var got, want bytes.Buffer
			if err := rows.write(&got); err != nil {
				t.Fatal(err)
			}
			if err := rows.writeTabwriter(&want); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("table:\n%s\ntabwriter:\n%s", got.String(), want.String())
			}
			if n := strings.Count(got.String(), "\n"); n < len(rows) {
				t.Errorf("%d lines for %d rows", n, len(rows))
			}
		})
	}
}
