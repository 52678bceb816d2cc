package withlock

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
	"time"
)

// TestRecordJSONIsWhatEncodingJSONWrites holds the hand-written record
// encoder to encoding/json's output, byte for byte, so that records
// written before and after it read the same everywhere: the record's own
// fields as json.Marshal writes the struct, then Run.Extra's as it writes
// the map, before the token's digest.
func TestRecordJSONIsWhatEncodingJSONWrites(t *testing.T) {
	at := time.Date(2026, 12, 1, 13, 9, 44, 123456789, time.UTC)
	paris := time.FixedZone("CET", 3600)
	for _, rec := range []record{
		{Name: "nightly", Tag: "0123456789abcdef", Run: Run{Holder: "web1:4711", Started: at, Finished: at.Add(time.Second), Outcome: OutcomeOK}},
		{Name: "backup", Run: Run{Holder: "h:1", Started: at.In(paris), Finished: at.Add(90 * time.Minute).In(paris),
			ExitCode: 125, Lost: true, Fence: 42, Outcome: OutcomeLost,
			Extra: map[string]json.RawMessage{"timed_out": raw("true"), "max_rss_kb": raw("56789"), "cpu_ms": raw(" 1234 "), "tracking": raw(`"scope"`)}}},
		{Name: "", Run: Run{ExitCode: -1, Fence: -3, Extra: map[string]json.RawMessage{"cpu_ms": raw("-1"), "nested": raw(`{ "a" : [1, "<b>"] }`)}}}, // zero times, negatives
		{Name: "odd names", Run: Run{Extra: map[string]json.RawMessage{"qu\"o<te>": raw("null"), "héllo": raw(`"\u00e9"`)}}},
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
		if len(rec.Extra) > 0 {
			extra, err := json.Marshal(rec.Extra)
			if err != nil {
				t.Fatal(err)
			}
			tag := []byte(`,"token_sha256":`)
			i := bytes.LastIndex(want, tag)
			want = slices.Concat(want[:i], []byte(","), extra[1:len(extra)-1], want[i:])
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

func raw(s string) json.RawMessage { return json.RawMessage(s) }
