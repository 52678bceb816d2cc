package main

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// listJSON is --list --json's output, one object and a newline per lock, as
// encoding/json's Encoder writes them. The plain lock of a fleet (held or
// not, no record, pause, semaphore or leftovers, and strings that need no
// escaping) is written by hand: reflection over a thousand objects was
// most of what --json cost beyond the table. Any other goes through the
// Encoder. TestListJSONIsWhatEncodingJSONWrites holds the two to one output.
type listJSON struct {
	b   []byte
	enc *json.Encoder
	buf bytes.Buffer // the Encoder's output, for one object
}

func newListJSON(locks int) *listJSON {
	j := &listJSON{b: make([]byte, 0, 192*locks)}
	j.enc = json.NewEncoder(&j.buf)
	return j
}

// add appends out.
func (j *listJSON) add(out *statusJSON) error {
	if b, ok := appendPlainJSON(j.b, out); ok {
		j.b = b
		return nil
	}
	j.buf.Reset()
	if err := j.enc.Encode(out); err != nil {
		return err
	}
	j.b = append(j.b, j.buf.Bytes()...)
	return nil
}

// appendPlainJSON appends out as the Encoder writes it, where out is a plain
// lock; false, and b as it was, for any other.
func appendPlainJSON(b []byte, out *statusJSON) ([]byte, bool) {
	if out.Finished || out.LastRun != nil || out.Slots != 0 || len(out.Holders) > 0 || out.LastSuccess != nil ||
		out.Done != nil || out.Leftovers != nil || out.EvictionPolicy != "" || out.Paused != nil || out.SuccessDurations != nil ||
		!plainJSON(out.Name) || !plainJSON(out.Key) || !plainJSON(out.Holder) || !plainJSON(out.Host) {
		return b, false
	}
	start := len(b)
	b = append(b, '{')
	if out.Name != "" {
		b = append(append(append(b, `"name":"`...), out.Name...), `",`...)
	}
	b = append(append(append(b, `"key":"`...), out.Key...), `","held":`...)
	b = strconv.AppendBool(b, out.Held)
	if out.Holder != "" {
		b = append(append(append(b, `,"holder":"`...), out.Holder...), '"')
	}
	if out.Host != "" {
		b = append(append(append(b, `,"host":"`...), out.Host...), '"')
	}
	if out.PID != 0 {
		b = strconv.AppendInt(append(b, `,"pid":`...), int64(out.PID), 10)
	}
	b = strconv.AppendInt(append(b, `,"ttl_ms":`...), out.TTLMs, 10)
	if out.Fence != 0 {
		b = strconv.AppendInt(append(b, `,"fence":`...), out.Fence, 10)
	}
	if out.Since != nil {
		var err error
		// time.Time's MarshalJSON: RFC 3339 with nanoseconds, quoted.
		if b, err = out.Since.AppendText(append(b, `,"since":"`...)); err != nil {
			return b[:start], false
		}
		b = append(b, '"')
	}
	return append(b, "}\n"...), true
}

// plainJSON reports whether the Encoder writes s as it is, between quotes:
// printable ASCII without '"', '\\' and the '<', '>', '&' it escapes for HTML.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}
