package withlock

// A last-run record's JSON, written by hand: encoding/json builds its
// encoder for a type by reflection on first use, which cost a short CLI run
// a tenth of a millisecond, once per process, at its release.

import (
	"encoding/json"
	"strconv"
	"time"
)

// marshalRecord is json.Marshal(rec), byte for byte (admin_records_json_test.go
// holds it to that), or an error for a time JSON cannot hold.
func marshalRecord(rec *record) ([]byte, error) {
	b := make([]byte, 0, 256)
	b = append(b, `{"name":`...)
	b = appendJSONString(b, rec.Name)
	b = append(b, `,"holder":`...)
	b = appendJSONString(b, rec.Holder)
	var err error
	if b, err = appendJSONTime(append(b, `,"started":`...), rec.Started); err != nil {
		return nil, err
	}
	if b, err = appendJSONTime(append(b, `,"finished":`...), rec.Finished); err != nil {
		return nil, err
	}
	b = strconv.AppendInt(append(b, `,"exit_code":`...), int64(rec.ExitCode), 10)
	if rec.Lost {
		b = append(b, `,"lost":true`...)
	}
	if rec.Fence != 0 {
		b = strconv.AppendInt(append(b, `,"fence":`...), rec.Fence, 10)
	}
	if rec.TimedOut {
		b = append(b, `,"timed_out":true`...)
	}
	b = appendJSONString(append(b, `,"outcome":`...), rec.Outcome)
	if rec.CPUMs != 0 {
		b = strconv.AppendInt(append(b, `,"cpu_ms":`...), rec.CPUMs, 10)
	}
	if rec.MaxRSSKB != 0 {
		b = strconv.AppendInt(append(b, `,"max_rss_kb":`...), rec.MaxRSSKB, 10)
	}
	if rec.Output != "" {
		b = appendJSONString(append(b, `,"output":`...), rec.Output)
	}
	if rec.Tracking != "" {
		b = appendJSONString(append(b, `,"tracking":`...), rec.Tracking)
	}
	b = appendJSONString(append(b, `,"token_sha256":`...), rec.Tag)
	return append(b, '}'), nil
}

// appendJSONString appends s as encoding/json writes it. Names, holders
// and outcomes are plain ASCII in practice and are copied; anything that
// needs escaping (quotes, control characters, <>&, non-ASCII) is left to
// encoding/json, whose rules are many.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendJSONTime appends t as time.Time's MarshalJSON does: RFC 3339 with
// nanoseconds, quoted.
func appendJSONTime(b []byte, t time.Time) ([]byte, error) {
	q, err := t.MarshalJSON() // no reflection: a method of time.Time
	if err != nil {
		return nil, err
	}
	return append(b, q...), nil
}
