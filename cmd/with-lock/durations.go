package main

import (
	"fmt"
	"slices"
	"time"

	withlock "github.com/with-lock/with-lock"
)

// How long a name's successes usually take, from its history: what
// --status shows, what --check --duration-outlier judges the last success
// against, and what the metrics export for an alert to do the same.
//
// The rule is the median and a factor: a success is an outlier when it
// took under 1/outlierFactor or over outlierFactor times the median of the
// successes before it. The median, unlike the min–max range, is not moved
// by one odd run: a job that once did nothing in 50ms would otherwise
// widen the range down to 50ms for as long as the history keeps that run,
// and hide the next one. The range is still what the message shows, as
// what a person checks the verdict against.

// outlierFactor is how many times shorter or longer than the median of the
// successes before it a success must be for --duration-outlier. A job that
// did nothing usually took a tenth of its time or less; a factor of 3 leaves
// room for the spread of a job whose data grows and shrinks, and a job with a
// known, wider spread has --min-duration and --max-duration.
const outlierFactor = 3

// outlierMinRuns is how many successes before the judged one
// --duration-outlier needs: below that the median is one or two runs,
// which may themselves be odd, and a verdict would be a false alarm.
const outlierMinRuns = 5

// durationRange summarises how long some successes took.
type durationRange struct {
	n                int // how many successes; the durations are 0 when none
	min, median, max time.Duration
}

// successRange is the range of the successes among runs, those that
// finished before before only (the zero time: all of them), leaving out
// skip (the run being judged, if it is in runs).
func successRange(runs []withlock.Run, before time.Time, skip *withlock.Run) durationRange {
	var took []time.Duration
	for i := range runs {
		run := &runs[i]
		if !succeeded(run) || (!before.IsZero() && !run.Finished.Before(before)) || sameRun(run, skip) {
			continue
		}
		took = append(took, run.Finished.Sub(run.Started))
	}
	if len(took) == 0 {
		return durationRange{}
	}
	slices.Sort(took)
	n := len(took)
	median := took[n/2]
	if n%2 == 0 {
		median = (took[n/2-1] + took[n/2]) / 2
	}
	return durationRange{n: n, min: took[0], median: median, max: took[n-1]}
}

// sameRun reports whether a and b are the record of the same run: a host
// and pid runs one run at a time.
func sameRun(a, b *withlock.Run) bool {
	return a != nil && b != nil && a.Holder == b.Holder && a.Started.Equal(b.Started) && a.Finished.Equal(b.Finished)
}

// outlier says whether a success that took d is one against r: "under"
// or "over", or "" when it is not, or r holds too few successes to say.
func (r durationRange) outlier(d time.Duration) string {
	switch {
	case r.n < outlierMinRuns:
		return ""
	case d*outlierFactor < r.median:
		return "under"
	case d > r.median*outlierFactor:
		return "over"
	}
	return ""
}

// String is the range in words: "1.012s–1.08s, median 1.04s", or the one
// duration when the successes took the same.
func (r durationRange) String() string {
	if roughly(r.min) == roughly(r.max) {
		return roughly(r.min).String()
	}
	return fmt.Sprintf("%s–%s, median %s", roughly(r.min), roughly(r.max), roughly(r.median))
}

// successes is "1 success" or "9 successes".
func successes(n int) string {
	return fmt.Sprintf("%d %s", n, plural(n, "success", "successes"))
}

// durationsJSON is a durationRange in JSON: --status's success_durations,
// --check's prior_successes.
type durationsJSON struct {
	Successes int   `json:"successes"`
	MinMs     int64 `json:"min_ms"`
	MedianMs  int64 `json:"median_ms"`
	MaxMs     int64 `json:"max_ms"`
}

// newDurationsJSON is r as JSON, nil when it holds no success.
func newDurationsJSON(r durationRange) *durationsJSON {
	if r.n == 0 {
		return nil
	}
	return &durationsJSON{r.n, r.min.Milliseconds(), r.median.Milliseconds(), r.max.Milliseconds()}
}
