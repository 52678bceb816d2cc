package main

import (
	"encoding/json"
	"strconv"

	withlock "github.com/with-lock/with-lock"
)

// recordFields are the command's own fields of a run's record, which the
// library keeps as Run.Extra: what the job cost, what followed its
// processes, and whether --max-run stopped it. Their names are those the
// record has always had, so versions before Run.Extra read them too.
type recordFields struct {
	CPUMs    int64  `json:"cpu_ms,omitempty"`     // CPU time of the job's processes, user and system, in ms
	MaxRSSKB int64  `json:"max_rss_kb,omitempty"` // the largest resident set of any of them, in KiB
	TimedOut bool   `json:"timed_out,omitempty"`  // --max-run stopped the job
	Tracking string `json:"tracking,omitempty"`   // scope, cgroup, subreaper, reaper, process group
}

// extra is f as Run.Extra, written by hand as the library writes the
// record, without encoding/json's reflection on a run's way out.
func (f recordFields) extra() map[string]json.RawMessage {
	m := make(map[string]json.RawMessage, 4)
	if f.CPUMs != 0 {
		m["cpu_ms"] = strconv.AppendInt(nil, f.CPUMs, 10)
	}
	if f.MaxRSSKB != 0 {
		m["max_rss_kb"] = strconv.AppendInt(nil, f.MaxRSSKB, 10)
	}
	if f.TimedOut {
		m["timed_out"] = json.RawMessage("true")
	}
	if f.Tracking != "" {
		m["tracking"], _ = json.Marshal(f.Tracking) // a string always marshals
	}
	return m
}

// fieldsOf reads the command's fields of a stored run; a field that is
// missing or not of its type reads as zero.
func fieldsOf(run *withlock.Run) recordFields {
	var f recordFields
	for name, v := range run.Extra {
		switch name {
		case "cpu_ms":
			_ = json.Unmarshal(v, &f.CPUMs)
		case "max_rss_kb":
			_ = json.Unmarshal(v, &f.MaxRSSKB)
		case "timed_out":
			_ = json.Unmarshal(v, &f.TimedOut)
		case "tracking":
			_ = json.Unmarshal(v, &f.Tracking)
		}
	}
	return f
}
