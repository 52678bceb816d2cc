package withlock

// A last-run record's JSON, written by hand: encoding/json builds its
// encoder for a type by reflection on first use, which cost a short CLI run
// a tenth of a millisecond, once per process, at its release.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// marshalRecord is json.Marshal(rec), byte for byte, with rec.Extra's
// fields after the record's own, in the order of their names, before the
// token's digest (wire_test.go holds it to that); or an
// error for a time JSON cannot hold or an extra field that is not JSON.
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
	b = appendJSONString(append(b, `,"outcome":`...), string(rec.Outcome))
	if rec.Output != "" {
		b = appendJSONString(append(b, `,"output":`...), rec.Output)
	}
	if len(rec.Extra) > 0 {
		names := make([]string, 0, len(rec.Extra))
		for name := range rec.Extra {
			names = append(names, name)
		}
		slices.Sort(names) // as encoding/json writes a map
		for _, name := range names {
			var v bytes.Buffer
			if err := json.Compact(&v, rec.Extra[name]); err != nil {
				return nil, fmt.Errorf("extra field %q: %w", name, err)
			}
			out := bytes.NewBuffer(append(appendJSONString(append(b, ','), name), ':'))
			json.HTMLEscape(out, v.Bytes()) // as json.Marshal writes a RawMessage
			b = out.Bytes()
		}
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
