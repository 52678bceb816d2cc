package main

import (
	"fmt"
	"slices"
	"strings"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/config"
)

// warnUnanswered says on stderr, in one line, which nodes of a quorum an
// answer of --status, --list or --break was decided without
// (Status.Unanswered): they had not answered when a majority had, or they
// failed. what is what the others' answer gave, such as "the status is".
func (r *runner) warnUnanswered(what string, sts ...*withlock.Status) {
	var nodes []int
	for _, st := range sts {
		nodes = append(nodes, st.Unanswered...)
	}
	slices.Sort(nodes)
	nodes = slices.Compact(nodes)
	if len(nodes) == 0 {
		return
	}
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = fmt.Sprint(n)
		if n <= len(r.cfg.RedisURLs) {
			names[i] += " (" + config.MaskURL(r.cfg.RedisURLs[n-1]) + ")"
		}
	}
	total := len(r.cfg.RedisURLs)
	r.log.warn("warning", fields{}, "warning: of %d nodes, %s %s did not answer; %s from the other %d, a majority",
		total, plural(len(nodes), "node", "nodes"), strings.Join(names, ", "), what, total-len(nodes))
}
