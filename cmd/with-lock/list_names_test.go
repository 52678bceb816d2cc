package main_test

import (
	"strings"
	"testing"
)

// A name with a space is one cell of --list's table: quoted, as Go quotes
// a string, so that the columns after it (HOLDER, HELD FOR, ...) stay in
// place; a plain name is shown bare. The name is not refused: it is a
// valid lock, and one already in a crontab keeps working.
func TestListQuotesANameWithSpaces(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for _, name := range []string{"nightly backup", "plain"} {
		if r := e.run(name, "true"); r.Code != 0 {
			t.Fatalf("%q: exit %d, stderr %q; want the name accepted", name, r.Code, r.Stderr)
		}
		holdLock(t, e.srv, name)
	}
	r := e.run("--list")
	t.Logf("--list:\n%s", r.Stdout)
	lines := strings.Split(strings.TrimSuffix(r.Stdout, "\n"), "\n")
	if r.Code != 0 || len(lines) != 3 {
		t.Fatalf("--list: exit %d, stdout %q, stderr %q; want a header and two rows", r.Code, r.Stdout, r.Stderr)
	}
	holderAt := strings.Index(lines[0], "HOLDER")
	for _, tc := range []struct{ name, cell string }{{"nightly backup", `"nightly backup"`}, {"plain", "plain"}} {
		var row string
		for _, l := range lines[1:] {
			if strings.HasPrefix(l, tc.cell+" ") {
				row = l
			}
		}
		if row == "" {
			t.Errorf("--list has no row starting with %s", tc.cell)
			continue
		}
		// The cell is the name alone, and the holder starts under HOLDER.
		if len(row) <= holderAt || strings.TrimSpace(row[len(tc.cell):holderAt]) != "" || row[holderAt] == ' ' || row[holderAt-1] != ' ' {
			t.Errorf("--list row %q: the columns after the name are out of place (HOLDER at %d)", row, holderAt)
		}
	}
}
