package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/with-lock/with-lock/internal/config"
	"github.com/with-lock/with-lock/internal/keys"
)

// --doctor's ACL check: is every command with-lock sends, with the name's
// own keys and channels, permitted for the user it connects as? Nothing is
// run: ACL DRYRUN asks the server where the user may (Redis 7+, Valkey),
// else a script asks redis.acl_check_cmd (Redis 7+, Valkey), which any
// user with +eval may call for itself. The list follows
// docs/production-redis.md's least-privilege ACL.

// aclProbe is one command as with-lock sends it.
type aclProbe struct {
	args     []any
	need     string // what needs it, said when it is refused
	critical bool   // this configuration's runs fail without it
}

// aclCheckScript asks whether the user may run the command in ARGV. The
// command comes as ARGV, never as source.
const aclCheckScript = "return redis.acl_check_cmd(unpack(ARGV))"

// aclProbes are the commands with-lock sends for the name's lock key,
// under the settings given: a feature the settings use is critical.
func (d *doctor) aclProbes() []aclProbe {
	c, k := d.r.cfg, d.key
	every := "every run"
	probes := []aclProbe{
		{[]any{"SET", k, "token", "NX", "PX", "30000"}, every + ": the acquisition", true},
		// A release's script has the lock key and its side keys as KEYS:
		// a user whose key patterns miss the side keys may not run it.
		{[]any{"EVAL", "return 1", "6", k, keys.Fence(k), keys.Record(k), keys.History(k), keys.Success(k), keys.Left(k)}, every + ": release, renewal", true},
		{[]any{"GET", k}, every + ": inside the scripts", true},
		{[]any{"PTTL", k}, every + ": inside the scripts", true},
		{[]any{"PEXPIRE", k, "30000"}, every + ": renewal", true},
		{[]any{"DEL", k}, every + ": release", true},
		{[]any{"PUBLISH", k, "released"}, every + ": release, to wake waiters", true},
		{[]any{"SET", keys.Record(k), "record", "PX", "1000"}, "the last-run record, for --status, --check, --history", false},
		{[]any{"SET", keys.Fence(k), "1"}, "--fence", c.Fence},
		{[]any{"TIME"}, "--fence and --once-per, the server's clock", c.Fence || c.OncePer > 0},
		{[]any{"TYPE", k}, "naming another program's key in an error", false},
		{[]any{"SUBSCRIBE", k}, "--wait, woken by the release", c.Wait > 0},
		{[]any{"UNSUBSCRIBE", k}, "--wait, woken by the release", c.Wait > 0},
		// HELLO and AUTH made the connection the doctor asks on.
		{[]any{"PING"}, "the client's health checks", false},
		{[]any{"WAIT", "1", "0"}, "--min-replicas", c.MinReplicas > 0},
		{[]any{"INFO", "memory"}, "the warning of a server that may evict a lock", false},
		{[]any{"SCAN", "0", "MATCH", c.Prefix + "*", "COUNT", "1000"}, "--list --scan", false},
		{[]any{"LPUSH", keys.History(k), "record"}, "--history, kept by each release", false},
		{[]any{"LTRIM", keys.History(k), "0", "9"}, "--history, kept by each release", false},
		{[]any{"LRANGE", keys.History(k), "0", "-1"}, "--history", false},
		{[]any{"HSET", keys.Index(c.Prefix), k, ""}, "--list's index of names", false},
		{[]any{"HKEYS", keys.Index(c.Prefix)}, "--list's index of names", false},
		{[]any{"HGET", keys.Index(c.Prefix), k}, "--list's index of names", false},
		{[]any{"HDEL", keys.Index(c.Prefix), k}, "--list's index of names", false},
	}
	if keys.HasLine(k) {
		line, alive, ch := keys.Line(k), keys.Alive(k, "id"), keys.Channel(k, "id")
		fair := "--wait's fair line"
		probes = append(probes,
			aclProbe{[]any{"RPUSH", line, "id"}, fair, false},
			aclProbe{[]any{"LPOP", line}, fair, false},
			aclProbe{[]any{"LREM", line, "0", "id"}, fair, false},
			aclProbe{[]any{"LPOS", line, "id"}, fair, false},
			aclProbe{[]any{"EXISTS", alive}, fair, false},
			aclProbe{[]any{"SPUBLISH", ch, "served"}, fair, false},
			aclProbe{[]any{"SSUBSCRIBE", ch}, fair, false},
			aclProbe{[]any{"MGET", keys.Slot(k, 1), keys.Slot(k, 2)}, "--slots", c.Slots > 1},
		)
	}
	if c.Topology() == config.Cluster {
		probes = append(probes, aclProbe{[]any{"CLUSTER", "SLOTS"}, "finding the Cluster's nodes", true})
	}
	return probes
}

// acl asks, for each probe, whether the user may send it.
func (d *doctor) acl(n *doctorNode) finding {
	user := "default"
	if c, isClient := n.rdb.(*redis.Client); isClient && c.Options().Username != "" {
		user = c.Options().Username
	}
	probes := d.aclProbes()
	how := "ACL DRYRUN"
	allowed, err := aclDryRun(d.ctx, n.rdb, user, probes)
	if err != nil {
		how = "redis.acl_check_cmd"
		allowed, err = aclScriptCheck(d.ctx, n.rdb, probes)
	}
	if err != nil {
		if redisExit(err) == exitNoPerm {
			return finding{checkCritical, fmt.Sprintf("user %s may not run EVAL, nor ACL DRYRUN to tell the rest: %v", user, err),
				"give the user docs/production-redis.md's least-privilege ACL"}
		}
		return finding{checkUnknown, fmt.Sprintf("cannot tell the permissions of user %s: neither ACL DRYRUN nor redis.acl_check_cmd answered (Redis 7 has both): %v", user, err),
			"compare the user's ACL with docs/production-redis.md's least-privilege ACL"}
	}
	code := checkOK
	var refused, needs []string
	for i, p := range probes {
		if allowed[i] {
			continue
		}
		word := "+" + strings.ToLower(p.args[0].(string))
		if p.critical {
			code = checkCritical
		} else {
			code = max(code, checkWarning)
		}
		refused = append(refused, fmt.Sprintf("%s (%s)", strings.Join(argWords(p.args), " "), p.need))
		if !slices.Contains(needs, word) {
			needs = append(needs, word)
		}
	}
	if code == checkOK {
		return ok("user %s may send every command with-lock sends, with the keys of %s (by %s)", user, d.key, how)
	}
	return finding{code, fmt.Sprintf("user %s may not send: %s (by %s)", user, strings.Join(refused, "; "), how),
		fmt.Sprintf("add %s and the key patterns of docs/production-redis.md's least-privilege ACL", strings.Join(needs, " "))}
}

// argWords are a probe's arguments as the report shows them: the script's
// source left out.
func argWords(args []any) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		s := fmt.Sprint(a)
		if i == 1 && args[0] == "EVAL" {
			s = "<script>"
		}
		out = append(out, s)
	}
	return out
}

// aclDryRun asks ACL DRYRUN user <command> for each probe, in one round
// trip: "OK" is permitted, any other text says why not. An error of the
// first (NOPERM for ACL DRYRUN itself, an unknown subcommand) is the
// error: the caller asks otherwise; of a later one, a command the server
// does not have (EVAL renamed away), which is not permitted either.
func aclDryRun(ctx context.Context, rdb redis.UniversalClient, user string, probes []aclProbe) ([]bool, error) {
	cmds := make([]*redis.Cmd, len(probes))
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, pr := range probes {
			cmds[i] = p.Do(ctx, append([]any{"ACL", "DRYRUN", user}, pr.args...)...)
		}
		return nil
	})
	allowed := make([]bool, len(probes))
	for i, cmd := range cmds {
		v, err := cmd.Text()
		if err != nil && i == 0 {
			return nil, fmt.Errorf("ACL DRYRUN %s: %w", strings.Join(argWords(probes[i].args), " "), err)
		}
		allowed[i] = err == nil && v == "OK" // a later error: a command the server lacks
	}
	return allowed, nil
}

// aclScriptCheck asks redis.acl_check_cmd for each probe, in one round
// trip: true is permitted, false (nil) is not.
func aclScriptCheck(ctx context.Context, rdb redis.UniversalClient, probes []aclProbe) ([]bool, error) {
	cmds := make([]*redis.Cmd, len(probes))
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, pr := range probes {
			cmds[i] = p.Eval(ctx, aclCheckScript, nil, pr.args...)
		}
		return nil
	})
	allowed := make([]bool, len(probes))
	for i, cmd := range cmds {
		v, err := cmd.Int()
		switch {
		case errors.Is(err, redis.Nil):
			allowed[i] = false
		case err != nil && i == 0:
			return nil, fmt.Errorf("redis.acl_check_cmd(%s): %w", strings.Join(argWords(probes[i].args), " "), err)
		case err != nil: // a command the server lacks
			allowed[i] = false
		default:
			allowed[i] = v == 1
		}
	}
	return allowed, nil
}
