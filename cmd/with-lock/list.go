package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/config"
	"github.com/with-lock/with-lock/internal/leftovers"
)

// list prints every lock held under the prefix (--all: and every name with
// a last-run record), as a table or one JSON object per line, and exits 0,
// also when there is none. On one Redis, Sentinel or a Cluster the names
// come from the index of names every acquisition writes to (admin_index.go), so a
// lock is listed from the moment it is taken and the time grows with the
// locks, not the keys; a key another program set under the prefix is in no
// index, which a terminal is told in one line after the table, with how to
// see such keys (--scan). On a quorum or with --scan the keys are
// scanned. With none, a terminal is told so and a pipe gets nothing.
func (r *connected) list() int {
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
		j := newListJSON(len(locks)) // list_json.go
		for _, st := range locks {
			out := newStatusJSON(st)
			out.Name = strings.TrimPrefix(st.Key, r.cfg.Prefix)
			if err := j.add(&out); err != nil {
				return r.log.failed(exitInternal, "encode as JSON: %v", err)
			}
		}
		if _, err := os.Stdout.Write(j.b); err != nil {
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
	rows := make(table, 0, len(locks)+1)
	rows = append(rows, [6]string{"NAME", "HOLDER", "HELD FOR", "EXPIRES IN", "FENCE", "LAST RUN"})
	for _, st := range locks {
		name := listName(strings.TrimPrefix(st.Key, r.cfg.Prefix))
		for _, h := range st.Holders { // a semaphore: a row per holder
			rows = append(rows, [6]string{fmt.Sprintf("%s (slot %d/%d)", name, h.Slot, st.Slots), h.ID,
				now.Sub(h.Since).Round(time.Second).String(), h.TTL.Round(time.Millisecond).String(), "-", "-"})
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
			fence = strconv.FormatInt(st.Fence, 10)
		}
		if st.LastRun != nil {
			last = describeRun(st.LastRun, now)
		}
		rows = append(rows, [6]string{name, holder, heldFor, ttl, fence, last})
	}
	if err := rows.write(os.Stdout); err != nil {
		return r.log.failed(exitInternal, "write the list: %v", err)
	}
	if tty {
		r.printIndexNote()
	}
	return 0
}

// listName is a name as --list's first column shows it: quoted, as Go
// quotes a string, when it has a space, a character that does not print,
// or starts with a quote, so that it reads as one cell and the columns
// after it stay in place. Such names are not refused: a name is any
// string, and one already in a crontab keeps its key and keeps working.
func listName(name string) string {
	if strings.HasPrefix(name, `"`) || strings.ContainsFunc(name, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) {
		return strconv.Quote(name)
	}
	return name
}

// table is --list's rows, header first, aligned as text/tabwriter aligns
// cells ending in a tab (minimum width 0, padding 2, padded with spaces):
// each column as wide as its widest cell, in runes, plus two spaces; the
// last column unpadded.
type table [][6]string

// write writes t in one write. A thousand rows through tabwriter and fmt
// were a fifth of --list's time, so it pads them itself; a cell with a
// character tabwriter gives a meaning ('\t', '\n', '\v', '\f', 0xff: a key
// that another program named) goes through tabwriter, as before.
func (t table) write(out io.Writer) error {
	var width [5]int
	size := 0
	for _, row := range t {
		for i, cell := range row {
			if strings.ContainsFunc(cell, tabwriterSpecial) {
				return t.writeTabwriter(out)
			}
			size += len(cell) + 2
			if n := utf8.RuneCountInString(cell); i < len(width) && n > width[i] {
				width[i] = n
			}
		}
	}
	b := make([]byte, 0, size+len(t)*(width[0]+width[1]+width[2]+width[3]+width[4]))
	for _, row := range t {
		for i, cell := range row[:5] {
			b = append(b, cell...)
			for range width[i] + 2 - utf8.RuneCountInString(cell) {
				b = append(b, ' ')
			}
		}
		b = append(b, row[5]...)
		b = append(b, '\n')
	}
	_, err := out.Write(b)
	return err
}

// tabwriterSpecial reports whether text/tabwriter gives r a meaning.
func tabwriterSpecial(r rune) bool {
	return r == '\t' || r == '\n' || r == '\v' || r == '\f' || r == utf8.RuneError
}

// writeTabwriter writes t through text/tabwriter, buffered: one write.
func (t table) writeTabwriter(out io.Writer) error {
	b := bufio.NewWriter(out)
	w := tabwriter.NewWriter(b, 0, 8, 2, ' ', 0)
	for _, row := range t {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", row[0], row[1], row[2], row[3], row[4], row[5])
	}
	return errors.Join(w.Flush(), b.Flush())
}

// printIndexNote says, where --list read the index of names, that keys
// other programs set under the prefix are not in it, and how to see them.
func (r *runner) printIndexNote() {
	if r.cfg.Scan || r.cfg.Topology() == config.Quorum {
		return // scanned: every key under the prefix was read
	}
	fmt.Printf("(keys other programs set under %s are not listed: with-lock --list --scan shows them)\n", r.cfg.Prefix)
}
