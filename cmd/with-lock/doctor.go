package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/config"
	"github.com/with-lock/with-lock/internal/keys"
	"github.com/with-lock/with-lock/internal/serverinfo"
)

// --doctor [NAME]: is the deployment the settings name fit to hold locks?
// Each server is asked what each of its faults would cost a lock
// (doctor_checks.go, doctor_acl.go), and the answers are one line per
// check, OK, WARNING or CRITICAL with what to do, under a first line in
// --check's form; the exit code is --check's, so that a deploy pipeline
// or a monitoring plugin can run it. None of this runs but under --doctor.

// doctorName is the name whose keys stand for a lock's when --doctor is
// given none: its key names under --prefix, for the ACL's key patterns.
const doctorName = "example"

// doctorLine is one check's verdict: a line of the report, an element of
// --json's "checks".
type doctorLine struct {
	Name   string `json:"name"`
	State  string `json:"state"` // OK, WARNING, CRITICAL, UNKNOWN
	Detail string `json:"detail"`
	Advice string `json:"advice,omitempty"` // what to do; "" when OK
	code   int
}

// doctorJSON is --doctor --json's one object.
type doctorJSON struct {
	Status     string       `json:"status"`
	Code       int          `json:"code"`
	Message    string       `json:"message"`
	Deployment string       `json:"deployment"` // single, sentinel, cluster, quorum
	Name       string       `json:"name,omitempty"`
	Key        string       `json:"key,omitempty"`
	Checks     []doctorLine `json:"checks"`
}

// finding is what one check found on one server.
type finding struct {
	code           int
	detail, advice string
}

func ok(format string, args ...any) finding {
	return finding{checkOK, fmt.Sprintf(format, args...), ""}
}

// doctorNode is one server the checks ask: the one Redis, the master
// Sentinel names, each master of a Cluster or of a quorum.
type doctorNode struct {
	label string // its address, as the report names it
	rdb   redis.UniversalClient
	rtt   time.Duration // the best of the PINGs
	err   error         // it did not answer PING: the other checks skip it

	info     map[string]string // INFO's fields; nil when INFO failed
	infoText string
	infoErr  error
}

// doctor is one --doctor run.
type doctor struct {
	r     *runner
	ctx   context.Context
	key   string // the lock key of NAME, or of doctorName when none was given
	nodes []*doctorNode
	// cluster is the Cluster's client, on a Cluster.
	cluster *redis.ClusterClient
}

func (r *runner) doctor() int {
	for _, w := range r.cfg.Warnings {
		r.log.warn("warning", fields{}, "warning: %s", w)
	}
	name := r.cfg.Name
	if name == "" {
		name = doctorName
	}
	// Each server gets its own round trips, one after the other: the
	// whole is bounded by a few --redis-timeout per server.
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(4+4*len(r.cfg.RedisURLs))*r.cfg.RedisTimeout)
	defer cancel()
	d := &doctor{r: r, ctx: ctx, key: keys.Lock(r.cfg.Prefix, name)}
	clients, err := r.cfg.RedisClients()
	if err != nil {
		return d.report([]doctorLine{line("configuration", finding{checkUnknown, r.inUserWords(err), "fix the connection settings (with-lock --print-config shows them)"})})
	}
	defer func() {
		for _, rdb := range clients {
			_ = rdb.Close()
		}
	}()
	return d.report(d.examine(clients))
}

// examine runs every check on the deployment of clients.
func (d *doctor) examine(clients []redis.UniversalClient) []doctorLine {
	nodes, err := d.findNodes(clients)
	if err != nil {
		return []doctorLine{line("reachable", finding{checkCritical, "the Cluster's nodes did not answer: " + d.r.inUserWords(err),
			"check that the --redis seeds are Cluster nodes that answer from this host"})}
	}
	d.nodes = nodes
	lines := []doctorLine{d.reachable()}
	var up []*doctorNode
	for _, n := range nodes {
		if n.err == nil {
			up = append(up, n)
		}
	}
	if len(up) == 0 {
		return lines
	}
	for _, c := range []struct {
		name  string
		check func(*doctorNode) finding
	}{
		{"server", d.server},
		{"eviction", d.eviction},
		{"persistence", d.persistence},
		{"replication", d.replication},
		{"lua", d.lua},
		{"acl", d.acl}, // doctor_acl.go
	} {
		found := make([]finding, len(up))
		for i, n := range up {
			found[i] = c.check(n)
		}
		lines = append(lines, line(c.name, d.combine(up, found)))
	}
	lines = append(lines, d.clocks(up)) // doctor_checks.go
	if d.r.cfg.Name != "" {
		lines = append(lines, line("cluster-slot", d.clusterSlot()))
	}
	return lines
}

// findNodes are the servers of the deployment: a Cluster's masters, as it
// says them; else one per client.
func (d *doctor) findNodes(clients []redis.UniversalClient) ([]*doctorNode, error) {
	if cc, isCluster := clients[0].(*redis.ClusterClient); isCluster {
		d.cluster = cc
		var mu sync.Mutex
		var nodes []*doctorNode
		err := cc.ForEachMaster(d.ctx, func(_ context.Context, rdb *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			nodes = append(nodes, &doctorNode{label: rdb.Options().Addr, rdb: rdb})
			return nil
		})
		if err != nil {
			return nil, err
		}
		// By address, so that two reports name them alike.
		slices.SortFunc(nodes, func(a, b *doctorNode) int { return strings.Compare(a.label, b.label) })
		return nodes, nil
	}
	var nodes []*doctorNode
	for _, rdb := range clients {
		label := ""
		if c, isClient := rdb.(*redis.Client); isClient {
			label = c.Options().Addr
		}
		if d.r.cfg.Topology() == config.Sentinel {
			label = "master " + d.r.cfg.SentinelMaster
		}
		nodes = append(nodes, &doctorNode{label: label, rdb: rdb})
	}
	return nodes, nil
}

// reachable PINGs each node three times (the best round trip is the
// network's, the others may include a connection's set-up) and reads its
// INFO for the checks that follow. A quorum with a majority answering
// still locks: a silent member is a WARNING there.
func (d *doctor) reachable() doctorLine {
	found := make([]finding, len(d.nodes))
	answered := 0
	for i, n := range d.nodes {
		for range 3 {
			t0 := time.Now()
			// A NOPERM is an answer too: the acl line says it.
			if n.err = n.rdb.Ping(d.ctx).Err(); n.err != nil && !redis.IsPermissionError(n.err) {
				break
			}
			n.err = nil
			if rtt := time.Since(t0); n.rtt == 0 || rtt < n.rtt {
				n.rtt = rtt
			}
		}
		if n.err != nil {
			said := d.r.inUserWords(n.err)
			if code := redisExit(n.err); code != exitNoPerm && code != exitConfig {
				said = "no answer: " + said // else the server answered, and refused
			}
			found[i] = finding{checkCritical, said, unreachableAdvice(n.err)}
			continue
		}
		answered++
		n.infoText, n.infoErr = n.rdb.Info(d.ctx).Result()
		if n.infoErr == nil {
			n.info = serverinfo.Fields(n.infoText)
		}
		found[i] = ok("answered PING in %s", roundTrip(n.rtt))
		// Renewals come every third of the TTL, and each must fit well
		// inside it with the scheduler's delays besides.
		if limit := d.r.cfg.TTL / 10; n.rtt > limit {
			found[i] = finding{checkWarning, fmt.Sprintf("answered PING in %s, more than a tenth of --ttl %s", roundTrip(n.rtt), d.r.cfg.TTL),
				"use a Redis nearer this host, or a longer --ttl"}
		}
	}
	if answered == len(d.nodes) && len(d.nodes) > 1 && !slices.ContainsFunc(found, func(f finding) bool { return f.code != checkOK }) {
		// One line for all: the slowest round trip is the one to judge.
		slowest := slices.MaxFunc(d.nodes, func(a, b *doctorNode) int { return int(a.rtt - b.rtt) })
		return line("reachable", ok("all %d answered PING, the slowest (%s) in %s", len(d.nodes), slowest.label, roundTrip(slowest.rtt)))
	}
	f := d.combine(d.nodes, found)
	if need := len(d.nodes)/2 + 1; d.r.cfg.Topology() == config.Quorum && answered < len(d.nodes) && answered >= need {
		f.code = checkWarning
		f.detail = fmt.Sprintf("%d of %d masters answered, a majority (%d): %s", answered, len(d.nodes), need, f.detail)
	}
	return line("reachable", f)
}

// unreachableAdvice is what to do about a server that did not answer PING.
func unreachableAdvice(err error) string {
	switch redisExit(err) {
	case exitNoPerm:
		return "check the user and password (--redis URL, --password-file)"
	case exitConfig:
		return "fix the connection settings as the message says (with-lock --print-config shows them)"
	}
	return "check that Redis runs at that address and that this host may reach it (firewall, --redis-timeout)"
}

// roundTrip says a round trip to a hundredth of a millisecond.
func roundTrip(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000)
}

// combine makes one check's findings on nodes into one: the worst state,
// the detail once when every node says the same, else each node's after
// its name, and the advice of the first of the worst. The finding of the
// one server of the deployment is as it is; of the one that answered of
// several, it is named.
func (d *doctor) combine(nodes []*doctorNode, found []finding) finding {
	if len(found) == 1 {
		if len(d.nodes) > 1 {
			found[0].detail = nodes[0].label + ": " + found[0].detail
		}
		return found[0]
	}
	worst := found[0]
	same := true
	for _, f := range found[1:] {
		if rank(f.code) > rank(worst.code) {
			worst = f
		}
		same = same && f.detail == found[0].detail
	}
	if same {
		return finding{worst.code, fmt.Sprintf("%s (all %d)", found[0].detail, len(found)), worst.advice}
	}
	parts := make([]string, len(found))
	for i, f := range found {
		parts[i] = nodes[i].label + ": " + f.detail
	}
	return finding{worst.code, strings.Join(parts, "; "), worst.advice}
}

// rank orders states by how bad they are: a CRITICAL beats a WARNING,
// which beats an UNKNOWN (a check that could not tell), which beats OK.
func rank(code int) int { return [...]int{0, 2, 3, 1}[code] }

func line(name string, f finding) doctorLine {
	return doctorLine{Name: name, State: checkStates[f.code], Detail: f.detail, Advice: f.advice, code: f.code}
}

// report prints the lines (or --json's object) and returns the exit code:
// the worst state's.
func (d *doctor) report(lines []doctorLine) int {
	code, worst := checkOK, []string{}
	for _, l := range lines {
		switch {
		case rank(l.code) > rank(code):
			code, worst = l.code, []string{l.Name}
		case l.code == code && code != checkOK:
			worst = append(worst, l.Name)
		}
	}
	held := "locks"
	if d.r.cfg.Name != "" {
		held = d.key
	}
	msg := fmt.Sprintf("%s can hold %s", d.where(), held)
	if code != checkOK {
		msg = fmt.Sprintf("%s: %s", d.where(), strings.Join(worst, ", "))
	}
	if d.r.cfg.JSON {
		out := doctorJSON{Status: checkStates[code], Code: code, Message: msg, Deployment: d.r.cfg.Topology().String(), Checks: lines}
		if d.r.cfg.Name != "" {
			out.Name, out.Key = d.r.cfg.Name, d.key
		}
		if err := printJSON(out); err != nil {
			fmt.Printf("WITH-LOCK UNKNOWN - %v\n", err)
			return checkUnknown
		}
		return code
	}
	var b strings.Builder
	fmt.Fprintf(&b, "WITH-LOCK %s - %s\n", checkStates[code], escapeBreaks(msg))
	for _, l := range lines {
		fmt.Fprintf(&b, "%-8s  %-12s  %s", l.State, l.Name, escapeBreaks(l.Detail))
		if l.Advice != "" {
			fmt.Fprintf(&b, " -> %s", escapeBreaks(l.Advice))
		}
		b.WriteByte('\n')
	}
	fmt.Print(b.String())
	return code
}

// where names the deployment checked, and the lock when one was named.
func (d *doctor) where() string {
	var s string
	switch n := len(d.r.cfg.RedisURLs); d.r.cfg.Topology() {
	case config.Sentinel:
		s = fmt.Sprintf("Sentinel master %s", d.r.cfg.SentinelMaster)
	case config.Cluster:
		s = "the Cluster"
	case config.Quorum:
		s = fmt.Sprintf("the quorum of %d masters", n)
	default:
		s = "the server"
		if len(d.nodes) == 1 {
			s += " at " + d.nodes[0].label
		}
	}
	return s
}
