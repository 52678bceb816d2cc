package withlock

import (
	"encoding/json"
	"testing"
	"time"
)

// TestRecordJSONIsWhatEncodingJSONWrites holds the hand-written record
// encoder to encoding/json's output, byte for byte, so that records
// written before and after it read the same everywhere.
func TestRecordJSONIsWhatEncodingJSONWrites(t *testing.T) {
	at := time.Date(2026, 12, 1, 13, 9, 44, 123456789, time.UTC)
	paris := time.FixedZone("CET", 3600)
	for _, rec := range []record{
		{Name: "nightly", Tag: "0123456789abcdef", Run: Run{Holder: "web1:4711", Started: at, Finished: at.Add(time.Second), Outcome: OutcomeOK}},
		{Name: "backup", Run: Run{Holder: "h:1", Started: at.In(paris), Finished: at.Add(90 * time.Minute).In(paris),
			ExitCode: 125, Lost: true, Fence: 42, TimedOut: true, Outcome: OutcomeLost, CPUMs: 1234, MaxRSSKB: 56789, Tracking: "scope"}},
		{Name: "", Run: Run{ExitCode: -1, Fence: -3, CPUMs: -1, MaxRSSKB: -2}}, // zero times, negatives
		{Name: `quo"te\back<a>&b`, Run: Run{Holder: "tab\there\nnl\x00\x1f\x7f", Outcome: "caller's own"}},
		{Name: "a<b", Run: Run{Holder: "x>y", Outcome: "p&q"}}, // each alone: escaped as HTML
		{Name: "del\x7f", Run: Run{Holder: "back\\slash", Outcome: "\x01"}},
		{Name: "héllo, 世界 \u2028\u2029", Run: Run{Holder: "bad utf-8 \xff\xfe", Started: at.Truncate(time.Second)}},
		{Name: "out", Run: Run{Outcome: OutcomeFailed, Output: "line 1\n\tline 2 <b>\r\n\x00\xff\xfe bin\x1b[0m\n"}},
		{Name: "plain", Run: Run{Output: "plain ascii"}},
	} {
		want, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		got, err := marshalRecord(&rec)
		if err != nil {
			t.Fatalf("%q: %v", rec.Name, err)
		}
		if string(got) != string(want) {
			t.Errorf("record %q:\n got %s\nwant %s", rec.Name, got, want)
		}
	}
}

// TestRecordJSONRefusesATimeJSONCannotHold: as encoding/json does.
func TestRecordJSONRefusesATimeJSONCannotHold(t *testing.T) {
	rec := record{Name: "x", Run: Run{Started: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}}
	if _, err := json.Marshal(rec); err == nil {
		t.Fatal("encoding/json took year 10000; the test's premise is wrong")
	}
	if b, err := marshalRecord(&rec); err == nil {
		t.Errorf("marshalRecord wrote %s for year 10000, want an error", b)
	}
}
