package withlock

import (
	"errors"
	"testing"
)

// A quorum's Status and Break answer without the nodes yet to answer only
// when the answers in hand settle who holds the lock on a majority: one
// token on a majority of all nodes, or no token that the silent nodes
// could still make a majority. Otherwise they wait for the others.
func TestQuorumAdminAnswersOnlyWhenTheAnswersInHandSettleIt(t *testing.T) {
	const wait = "?" // a node yet to answer
	failed := errors.New("connection refused")
	for _, tc := range []struct {
		name  string
		nodes []string // a token, "" for no key, wait, or "!" for a failed node
		want  bool
	}{
		{"two of three hold one token", []string{"a", "a", wait}, true},
		{"two of three are free", []string{"", "", wait}, true},
		{"one holds, one is free: the third decides", []string{"a", "", wait}, false},
		{"two tokens: the third decides", []string{"a", "b", wait}, false},
		{"one answer of three", []string{"a", wait, wait}, false},
		{"one answer of three, free", []string{"", wait, wait}, false},
		{"two failed: no majority can answer", []string{"!", "!", wait}, true},
		{"one failed, one holds: the third decides", []string{"!", "a", wait}, false},
		{"one failed, one free: the third decides", []string{"!", "", wait}, false},
		{"all answered, no majority", []string{"a", "", ""}, true},
		{"three of five free: two silent cannot make a majority", []string{"", "", "", wait, wait}, true},
		{"one of three answers of five holds: two silent could add to it", []string{"a", "", "", wait, wait}, false},
		{"three of five hold one token", []string{"a", "a", "a", wait, wait}, true},
		{"two of four answers of five hold one token: the fifth decides", []string{"a", "a", "", "", wait}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			views := make([]nodeStatus, len(tc.nodes))
			pending := make([]bool, len(tc.nodes))
			for i, n := range tc.nodes {
				switch n {
				case wait:
					pending[i] = true
				case "!":
					views[i].err = failed
				default:
					views[i].token = n
				}
			}
			if got := settled(views, pending, len(tc.nodes)/2+1); got != tc.want {
				t.Errorf("settled(%q) = %v, want %v", tc.nodes, got, tc.want)
			}
		})
	}
}
