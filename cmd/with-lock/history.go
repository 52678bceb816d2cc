package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"
)

// history prints the last runs of the lock called name that are still
// kept (--history-size of them, for --record-ttl), newest first: a table,
// each run's recorded output below its row, or with --json one object per
// line as --status shows a last run. It exits 0, also when there is none.
func (r *connected) history() int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*r.cfg.RedisTimeout)
	defer cancel()
	runs, err := r.locker.History(ctx, r.cfg.Name, 0)
	if err != nil {
		return r.redisFailed(err)
	}
	if r.cfg.JSON {
		for i := range runs {
			if err := printJSON(newRunJSON(&runs[i])); err != nil {
				return r.log.failed(exitInternal, "%v", err)
			}
		}
		return 0
	}
	if len(runs) == 0 {
		return 0
	}
	now := time.Now()
	// The table is aligned first, then each run's row is printed with
	// the end of its output (--record-output) below it.
	var table bytes.Buffer
	w := tabwriter.NewWriter(&table, 0, 8, 2, ' ', 0)
	fmt.Fprintln(w, "FINISHED\tAGO\tHOLDER\tDURATION\tOUTCOME\tEXIT")
	for i := range runs {
		run := &runs[i]
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", run.Finished.Local().Format("2006-01-02 15:04:05 MST"),
			roughly(now.Sub(run.Finished)), run.Holder, roughly(run.Finished.Sub(run.Started)), run.Outcome, ending(run))
	}
	_ = w.Flush() // into memory
	out := bufio.NewWriter(os.Stdout)
	rows := strings.SplitAfter(table.String(), "\n")
	out.WriteString(rows[0])
	for i := range runs {
		out.WriteString(rows[i+1])
		out.WriteString(indentedOutput(runs[i].Output, historyOutputLines))
	}
	if err := out.Flush(); err != nil {
		return r.log.failed(exitInternal, "write the history: %v", err)
	}
	return 0
}

// outputIndent starts each line of a run's output under its row.
const outputIndent = "  | "

// historyOutputLines is how many of each run's last lines of output --history
// shows, so that its table stays one to read; --status shows the last
// run's whole, and --json every run's.
const historyOutputLines = 10

// indentedOutput is the end of a run's output, as recorded, one line under
// another after outputIndent, its last most lines and how many came
// before: what a terminal would show of it,
// without the control characters (escape sequences, carriage returns)
// that would act on the reader's terminal instead.
func indentedOutput(output string, most int) string {
	if output == "" {
		return ""
	}
	var b strings.Builder
	lines := strings.Split(strings.TrimSuffix(output, "\n"), "\n")
	if len(lines) > most {
		fmt.Fprintf(&b, "%s… %d lines before\n", outputIndent, len(lines)-most)
		lines = lines[len(lines)-most:]
	}
	for _, line := range lines {
		b.WriteString(outputIndent)
		b.WriteString(strings.Map(printable, strings.TrimSuffix(line, "\r")))
		b.WriteByte('\n')
	}
	return b.String()
}

// printable is r, or U+FFFD for a control character other than a tab.
func printable(r rune) rune {
	if r != '\t' && unicode.IsControl(r) {
		return utf8.RuneError
	}
	return r
}
