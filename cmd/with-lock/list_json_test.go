package main

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// --list --json writes a plain lock by hand and any other through
// encoding/json: the output is the Encoder's, byte for byte, for a plain
// lock and for every field of statusJSON set in turn (a field added to
// statusJSON that the hand-written path does not know fails here).
func TestListJSONIsWhatEncodingJSONWrites(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 12, 2, 7, 19, 17, 689_000_000, time.UTC)
	plain := statusJSON{Name: "job-1", Key: "lock:job-1", Held: true, Holder: "web-1:4242", Host: "web-1", PID: 4242,
		TTLMs: 29_500, Since: &since}
	cases := map[string]statusJSON{
		"plain":            plain,
		"free":             {Name: "idle", Key: "lock:idle"},
		"no expiry":        {Name: "x", Key: "lock:x", Held: true, Holder: "unknown", TTLMs: -1},
		"local time":       func() statusJSON { s := plain; l := since.In(time.FixedZone("", 5*3600+1800)); s.Since = &l; return s }(),
		"a quote":          func() statusJSON { s := plain; s.Name = `a"b`; return s }(),
		"HTML":             func() statusJSON { s := plain; s.Holder = "<a&b>:1"; return s }(),
		"not ASCII":        func() statusJSON { s := plain; s.Name = "ünï\u2028"; return s }(),
		"a control":        func() statusJSON { s := plain; s.Key = "lock:\x01\t"; return s }(),
		"not UTF-8":        func() statusJSON { s := plain; s.Name = "a\xffb"; return s }(),
		"year out of JSON": func() statusJSON { s := plain; y := since.AddDate(9000, 0, 0); s.Since = &y; return s }(),
	}
	v := reflect.ValueOf(&plain).Elem()
	for i := range v.NumField() {
		s := plain
		f := reflect.ValueOf(&s).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("set")
		case reflect.Bool:
			f.SetBool(!f.Bool())
		case reflect.Int, reflect.Int64:
			f.SetInt(f.Int() + 7)
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		default:
			t.Fatalf("statusJSON.%s: a %s, which this test cannot set", v.Type().Field(i).Name, f.Kind())
		}
		cases["with "+v.Type().Field(i).Name] = s
	}
	for name, out := range cases {
		t.Run(name, func(t *testing.T) {
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			j := newListJSON(2)
			for range 2 {
				wantErr, err := enc.Encode(out), j.add(&out)
				if (err != nil) != (wantErr != nil) {
					t.Fatalf("--list --json: error %v; encoding/json: %v", err, wantErr)
				}
			}
			if string(j.b) != want.String() {
				t.Errorf("--list --json wrote\n%s\nencoding/json writes\n%s", j.b, want.String())
			}
		})
	}
	if b, ok := appendPlainJSON(nil, &plain); !ok || len(b) == 0 {
		t.Errorf("a plain lock is not written by hand: %q", b)
	}
}
