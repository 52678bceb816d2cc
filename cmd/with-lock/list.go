package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/config"
	"github.com/with-lock/with-lock/internal/leftovers"
)

// list prints every lock held under the prefix (--all: and every name with
// a last-run record), as a table or one JSON object per line, and exits 0,
// also when there is none. On one Redis or Sentinel the names come from
// the index of names every acquisition writes to (admin_index.go), so a
// lock is listed from the moment it is taken and the time grows with the
// locks, not the keys; a key another program set under the prefix is in no
// index, which a terminal is told in one line after the table, with how to
// see such keys (--scan). On a Cluster, a quorum or with --scan the keys are
// scanned. With none, a terminal is told so and a pipe gets nothing.
func (r *runner) list() int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*r.cfg.RedisTimeout)
	defer cancel()
	locks, err := r.locker.List(ctx, &withlock.ListOptions{All: r.cfg.All, Scan: r.cfg.Scan})
	if err != nil {
		return r.redisFailed(err)
	}
	r.warnUnanswered("the list is", locks...) // unanswered.go
	if r.cfg.JSON {
		// One write for the whole list, not one per lock: a thousand
		// writes were a good part of --list --json's time.
		w := bufio.NewWriter(os.Stdout)
		enc := json.NewEncoder(w) // one object and a newline each, as printJSON
		for _, st := range locks {
			out := newStatusJSON(st)
			out.Name = strings.TrimPrefix(st.Key, r.cfg.Prefix)
			if err := enc.Encode(out); err != nil {
				return r.log.failed(exitInternal, "encode as JSON: %v", err)
			}
		}
		if err := w.Flush(); err != nil {
			return r.log.failed(exitInternal, "write the list: %v", err)
		}
		return 0
	}
	// A person at a terminal is told; a script reading a pipe gets only
	// the rows (and --json stays one object per lock).
	tty := isTerminal(os.Stdout)
	if len(locks) == 0 {
		if tty {
			what := "no locks held"
			if r.cfg.All {
				what = "no locks held and no last runs"
			}
			fmt.Printf("%s under %s\n", what, r.cfg.Prefix)
			r.printIndexNote()
		}
		return 0
	}
	now := time.Now()
	// tabwriter writes each cell and its padding apart: buffered, the table
	// is one write, not one per cell.
	out := bufio.NewWriter(os.Stdout)
	w := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tHOLDER\tHELD FOR\tEXPIRES IN\tFENCE\tLAST RUN")
	for _, st := range locks {
		name := strings.TrimPrefix(st.Key, r.cfg.Prefix)
		for _, h := range st.Holders { // a semaphore: a row per holder
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", fmt.Sprintf("%s (slot %d/%d)", name, h.Slot, st.Slots), h.ID,
				now.Sub(h.Since).Round(time.Second), h.TTL.Round(time.Millisecond), "-", "-")
		}
		if len(st.Holders) > 0 {
			continue
		}
		holder, heldFor, ttl, fence, last := "-", "-", "-", "-", "-"
		if st.Held && !st.Holder.Since.IsZero() {
			heldFor = now.Sub(st.Holder.Since).Round(time.Second).String()
		}
		switch {
		case st.KeptByMinHold:
			holder = st.Holder.ID + " (finished, --min-hold)"
		case leftovers.Of(st) != nil:
			left := leftovers.Of(st)
			holder = fmt.Sprintf("%s (command exited %d; %d %s left)", st.Holder.ID, left.ExitCode,
				left.Processes, plural(left.Processes, "process", "processes"))
		case st.Held:
			holder = st.Holder.ID
		case st.Paused != nil:
			holder = "(paused by " + st.Paused.By + ")"
		}
		if st.Held && st.Paused != nil {
			holder += " (paused at its release)"
		}
		switch {
		case st.Holder.TTL < 0:
			ttl = "never"
		case st.Held:
			ttl = st.Holder.TTL.Round(time.Millisecond).String()
		}
		if st.Fence > 0 {
			fence = fmt.Sprint(st.Fence)
		}
		if st.LastRun != nil {
			last = describeRun(st.LastRun, now)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", name, holder, heldFor, ttl, fence, last)
	}
	if err := errors.Join(w.Flush(), out.Flush()); err != nil {
		return r.log.failed(exitInternal, "write the list: %v", err)
	}
	if tty {
		r.printIndexNote()
	}
	return 0
}

// printIndexNote says, where --list read the index of names, that keys
// other programs set under the prefix are not in it, and how to see them.
func (r *runner) printIndexNote() {
	if r.cfg.Scan || r.cfg.Topology() == config.Cluster || r.cfg.Topology() == config.Quorum {
		return // scanned: every key under the prefix was read
	}
	fmt.Printf("(keys other programs set under %s are not listed: with-lock --list --scan shows them)\n", r.cfg.Prefix)
}
