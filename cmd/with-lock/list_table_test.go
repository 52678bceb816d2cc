package main

import (
	"bytes"
	"strings"
	"testing"
)

// --list pads its table itself, as text/tabwriter did: the same bytes for
// any cells, a name in any script, a holder wider than its header, and a
// cell with a character tabwriter gives a meaning (then tabwriter writes it).
func TestListTableIsAlignedAsTabwriterAlignsIt(t *testing.T) {
	header := [6]string{"NAME", "HOLDER", "HELD FOR", "EXPIRES IN", "FENCE", "LAST RUN"}
	for name, rows := range map[string]table{
		"header only": {header},
		"plain": {header, {"job-1", "web-1:4242", "3s", "27.5s", "-", "-"},
			{"nightly-backup", "db-2.example.com:1", "1h2m3s", "never", "17", "db-2:9, finished 2026-12-02 07:00:00 UTC (1h ago) after 3s, exit 0"}},
		"other scripts": {header, {"ünïcödé", "hôte:1", "-", "-", "-", "-"}, {"名前", "x:2", "1s", "2s", "3", "-"}},
		"empty cells":   {header, {"", "", "", "", "", ""}, {"a", "", "b", "", "c", ""}},
		"a tab":         {header, {"a\tb", "h:1", "1s", "2s", "-", "-"}, {"c", "h:2", "1s", "2s", "-", "-"}},
		"a newline":     {header, {"a\nb", "h:1", "1s", "2s", "-", "-"}},
		"not UTF-8":     {header, {"a\xffb\xfe", "h:1", "1s", "2s", "-", "-"}},
	} {
		t.Run(name, func(t *testing.T) {
			var got, want bytes.Buffer
			if err := rows.write(&got); err != nil {
				t.Fatal(err)
			}
			if err := rows.writeTabwriter(&want); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("table:\n%s\ntabwriter:\n%s", got.String(), want.String())
			}
			if n := strings.Count(got.String(), "\n"); n < len(rows) {
				t.Errorf("%d lines for %d rows", n, len(rows))
			}
		})
	}
}
