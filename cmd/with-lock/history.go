package main

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"
	"time"
)

// history prints the last runs of the lock called name that are still
// kept (--history-size of them, for --record-ttl), newest first: a table,
// or with --json one object per line as --status shows a last run. It
// exits 0, also when there is none.
func (r *runner) history() int {
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
	w := tabwriter.NewWriter(os.Stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(w, "FINISHED\tAGO\tHOLDER\tDURATION\tOUTCOME\tEXIT")
	for i := range runs {
		run := &runs[i]
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", run.Finished.Local().Format("2006-01-02 15:04:05 MST"),
			roughly(now.Sub(run.Finished)), run.Holder, roughly(run.Duration()), run.Outcome, ending(run))
	}
	if err := w.Flush(); err != nil {
		return r.log.failed(exitInternal, "write the history: %v", err)
	}
	return 0
}
