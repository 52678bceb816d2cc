package main

import "testing"

// A run whose command ran has one outcome however many things happened to
// it: lost first (it may have overlapped another owner's run), then
// timed-out (--max-run stopped it), then ok for exit 0, else failed.
func TestOneOutcomePerRunLostThenTimedOutThenExitCode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		res  result
		want string
	}{
		{result{code: 0}, outcomeOK},
		{result{code: 3}, outcomeFailed},
		{result{code: 124, timedOut: true}, outcomeTimedOut},
		{result{code: 0, lost: true}, outcomeLost},
		{result{code: 125, lost: true, timedOut: true}, outcomeLost}, // lost while --max-run stopped it
	} {
		if got := endedAs(tc.res); got != tc.want {
			t.Errorf("code %d, lost %t, timed out %t: outcome %q, want %q", tc.res.code, tc.res.lost, tc.res.timedOut, got, tc.want)
		}
	}
}
