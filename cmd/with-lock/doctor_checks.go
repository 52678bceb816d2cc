package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/with-lock/with-lock/internal/config"
	"github.com/with-lock/with-lock/internal/keys"
	"github.com/with-lock/with-lock/internal/serverinfo"
)

// The checks of --doctor on one server each (the ACL's: doctor_acl.go),
// and of a name's Cluster slot. Each reads what it can without a
// permission beyond the least-privilege ACL's (INFO, EVAL, TIME, WAIT);
// CONFIG GET, where the user may, adds what INFO does not say.

// clockSkewWarn is how far the server's clock may be from this host's
// before --doctor warns. The lock itself needs no agreement of clocks
// (TTLs are the server's own durations), but --once-per's windows follow
// the server's clock while cron fires by the host's, and records, --status
// and --check's ages are the hosts' times: a second is where a job fired
// on a window's edge lands in the window before (docs/long-jobs.md), and
// NTP keeps clocks within milliseconds, so a second apart means one of
// the two clocks is not synchronised.
const clockSkewWarn = time.Second

// infoMissing is the finding of a check that needs INFO, which the server
// refused.
func infoMissing(n *doctorNode) finding {
	return finding{checkUnknown, "INFO refused: " + n.infoErr.Error(), "allow the user +info (docs/production-redis.md's ACL has it)"}
}

// server names the server and its version, from INFO server: Valkey says
// valkey_version (and a redis_version of the Redis it forked from) and
// server_name:valkey.
func (d *doctor) server(n *doctorNode) finding {
	if n.info == nil {
		return infoMissing(n)
	}
	f := n.info
	name, version := "Redis", f["redis_version"]
	if v := f["valkey_version"]; v != "" || f["server_name"] == "valkey" {
		name = "Valkey"
		if v != "" {
			version = v
		}
	}
	mode := f["redis_mode"]
	if mode == "" {
		mode = f["server_mode"] // Valkey's word
	}
	detail := fmt.Sprintf("%s %s, %s", name, version, mode)
	major, _ := strconv.Atoi(strings.SplitN(version, ".", 2)[0])
	switch {
	case mode == "sentinel":
		return finding{checkCritical, detail + ": a Sentinel, not the Redis that keeps the locks",
			"give the sentinels with --sentinel and the master's name with --sentinel-master"}
	case mode == "cluster" && d.r.cfg.Topology() != config.Cluster:
		return finding{checkCritical, detail + ": a Cluster node, named without --cluster", "add --cluster"}
	case name == "Redis" && major < 7:
		return finding{checkWarning, detail + ": with-lock is tested on Redis 7 and 8 and Valkey 8", "upgrade to Redis 7 or later"}
	}
	return ok("%s", detail)
}

// eviction judges maxmemory and maxmemory-policy as every run does
// (serverinfo.EvictingPolicy, evictionWords), and says what a run does
// not: that the server has evicted keys already, or is full.
func (d *doctor) eviction(n *doctorNode) finding {
	if n.info == nil {
		return infoMissing(n)
	}
	f := n.info
	limit := fmt.Sprintf("maxmemory %s (used %s)", f["maxmemory_human"], f["used_memory_human"])
	policy := serverinfo.EvictingPolicy(n.infoText)
	evicted, _ := strconv.ParseInt(f["evicted_keys"], 10, 64)
	maxmemory, _ := strconv.ParseFloat(f["maxmemory"], 64)
	used, _ := strconv.ParseFloat(f["used_memory"], 64)
	const fix = "CONFIG SET maxmemory-policy noeviction, and the same in redis.conf; if this Redis is a cache, give the locks one of their own"
	switch {
	case policy != "" && evicted > 0:
		return finding{checkCritical, fmt.Sprintf("%s, maxmemory-policy %s, and it has evicted %d keys since it started: a lock may be one of the next", limit, policy, evicted), fix}
	case policy != "":
		return finding{checkWarning, limit + ": " + evictionWords(d.lockWords(), policy), fix}
	case maxmemory > 0 && used >= maxmemory:
		return finding{checkCritical, limit + ", maxmemory-policy noeviction, and full: Redis refuses writes, and no run can take its lock (exit 69)",
			"raise maxmemory, or free memory"}
	case maxmemory > 0 && used >= 0.9*maxmemory:
		return finding{checkWarning, limit + ", maxmemory-policy noeviction, over 90% full: once full, no run can take its lock (exit 69)",
			"raise maxmemory, or free memory"}
	case maxmemory == 0:
		return ok("maxmemory 0 (no limit), maxmemory-policy %s: nothing is evicted", f["maxmemory_policy"])
	}
	return ok("%s, maxmemory-policy noeviction: locks are never evicted", limit)
}

// lockWords names the lock in a message: its key, or the lock keys.
func (d *doctor) lockWords() string {
	if d.r.cfg.Name != "" {
		return d.key
	}
	return "lock keys"
}

// persistence judges what a restart keeps: with no AOF and no RDB
// snapshots it forgets the held locks (a second run may start beside the
// first), the fence counter, the last runs and --once-per's markers. INFO
// says whether AOF is on; only CONFIG GET says whether RDB snapshots are
// scheduled.
func (d *doctor) persistence(n *doctorNode) finding {
	if n.info == nil {
		return infoMissing(n)
	}
	f := n.info
	if f["aof_enabled"] == "1" {
		fsync := ""
		if v, err := configGet(d, n, "appendfsync"); err == nil {
			fsync = ", appendfsync " + v
		}
		if f["aof_last_write_status"] == "err" {
			return finding{checkWarning, "AOF on" + fsync + ", but its last write failed", "see the server's log (disk full?)"}
		}
		return ok("AOF on%s: a restart keeps the locks", fsync)
	}
	save, err := configGet(d, n, "save")
	switch {
	case err != nil:
		return finding{checkUnknown, "AOF off, and whether RDB snapshots are scheduled is unknown: CONFIG GET save: " + err.Error(),
			"check save and appendonly in redis.conf (a user with +config|get lets --doctor read them)"}
	case save == "":
		return finding{checkWarning, "no AOF and no RDB snapshots: a restart forgets the held locks (a second run may start beside the first), the fence counter, the last runs and --once-per's marks",
			"CONFIG SET appendonly yes, and the same in redis.conf; else restart it no sooner than one --ttl after it stopped"}
	case f["rdb_last_bgsave_status"] == "err":
		return finding{checkWarning, "RDB snapshots (save " + save + "), AOF off, and the last snapshot failed", "see the server's log (disk full?)"}
	}
	return ok("RDB snapshots (save %s), AOF off: a restart forgets what changed since the last snapshot", save)
}

// configGet is one CONFIG GET parameter's value; an error where the user
// may not run it.
func configGet(d *doctor, n *doctorNode, param string) (string, error) {
	v, err := n.rdb.ConfigGet(d.ctx, param).Result()
	if err != nil {
		return "", err
	}
	value, found := v[param]
	if !found {
		return "", fmt.Errorf("no parameter %s", param)
	}
	return value, nil
}

// replication judges the server's role and replicas: a replica refuses the
// lock's writes; a master whose min-replicas-to-write is not met refuses
// them too; --min-replicas N waits for N acknowledgements (WAIT, up to
// half --redis-timeout), which a WAIT sent now counts as a run's would.
func (d *doctor) replication(n *doctorNode) finding {
	if n.info == nil {
		return infoMissing(n)
	}
	f := n.info
	if role := f["role"]; role != "master" {
		return finding{checkCritical, fmt.Sprintf("a replica of %s:%s: it refuses the lock's writes (READONLY)", f["master_host"], f["master_port"]),
			"point --redis at the master, or find it through --sentinel"}
	}
	count, _ := strconv.Atoi(f["connected_slaves"])
	var replicas []string
	for i := range count {
		r := replicaFields(f[fmt.Sprintf("slave%d", i)])
		replicas = append(replicas, fmt.Sprintf("%s:%s %s, lag %ss", r["ip"], r["port"], r["state"], r["lag"]))
	}
	detail := "no replicas"
	if count > 0 {
		detail = fmt.Sprintf("%d replica(s) (%s)", count, strings.Join(replicas, "; "))
	}
	want := d.r.cfg.MinReplicas
	acked, werr := -1, error(nil)
	if ask := max(want, count); ask > 0 {
		// As --min-replicas waits: WAIT 0 0 would count only the replicas
		// that acknowledged already, and they do so once a second.
		acked, werr = n.rdb.Do(d.ctx, "WAIT", ask, (d.r.cfg.RedisTimeout / 2).Milliseconds()).Int()
		if werr != nil {
			acked = -1
		}
	}
	if v, err := configGet(d, n, "min-replicas-to-write"); err == nil {
		detail += ", min-replicas-to-write " + v
		minWrite, _ := strconv.Atoi(v)
		good, _ := strconv.Atoi(f["min_slaves_good_slaves"])
		if minWrite > 0 && good < minWrite {
			return finding{checkCritical, fmt.Sprintf("%s, of which %d are good: the master refuses writes (NOREPLICAS), and no run can take its lock", detail, good),
				"bring the replicas back, or lower min-replicas-to-write"}
		}
	}
	switch {
	case want > 0 && werr != nil:
		return finding{checkCritical, fmt.Sprintf("%s; --min-replicas %d needs WAIT: %v", detail, want, werr), "allow the user +wait"}
	case want > 0 && acked < want:
		return finding{checkCritical, fmt.Sprintf("%s; --min-replicas %d waits for %d, and WAIT counts %d now: every run would exit 69", detail, want, want, acked),
			fmt.Sprintf("add replicas, or lower --min-replicas to %d", acked)}
	case want > 0:
		return ok("%s; --min-replicas %d waits for %d, and WAIT counts %d now", detail, want, want, acked)
	case count == 0 && d.r.cfg.Topology() == config.Sentinel:
		return finding{checkWarning, detail + ": Sentinel has no replica to fail over to", "add a replica"}
	case count > 0 && acked >= count:
		return ok("%s, asynchronous: a failover may lose a lock just taken; --min-replicas %d would wait for them, and WAIT counts %d now", detail, count, acked)
	case count > 0 && werr == nil:
		return finding{checkWarning, fmt.Sprintf("%s, but WAIT counts %d acknowledging within %s: a failover may promote one that lacks the newest locks", detail, acked, d.r.cfg.RedisTimeout/2),
			"see the replicas' links (INFO replication on each)"}
	case werr != nil:
		return ok("%s; WAIT: %v", detail, werr)
	}
	return ok("%s", detail)
}

// replicaFields reads one "slaveN:ip=...,port=...,state=online,lag=0"
// value of INFO replication.
func replicaFields(v string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(v, ",") {
		if k, val, found := strings.Cut(kv, "="); found {
			out[k] = val
		}
	}
	return out
}

// lua runs a trivial script: with-lock's release, renewals, fenced
// acquisitions and reads are Lua scripts, so a server without scripting
// (Garnet without --lua, Valkey 9 without its Lua module, EVAL renamed
// away) can hold no lock of with-lock's. The script cache is said from
// INFO memory: every script is sent whole with EVAL, so an emptied cache
// costs nothing.
func (d *doctor) lua(n *doctorNode) finding {
	v, err := n.rdb.Eval(d.ctx, "return 1", nil).Int()
	if err != nil || v != 1 {
		if err == nil {
			err = fmt.Errorf("it returned %d, not 1", v)
		}
		return finding{checkCritical, "EVAL of a trivial script failed: " + err.Error() + ": every release, renewal and fenced acquisition is a script",
			"enable Lua scripting (Valkey 9: its Lua module; Garnet: --lua), or allow the user +eval"}
	}
	cache := ""
	if n.info != nil && n.info["number_of_cached_scripts"] != "" {
		cache = fmt.Sprintf("; script cache: %s script(s), %s", n.info["number_of_cached_scripts"], n.info["used_memory_scripts_human"])
	}
	return ok("EVAL runs scripts%s", cache)
}

// clocks is the clock line: each server's clock against this host's, the
// farthest said once when none is off.
func (d *doctor) clocks(up []*doctorNode) doctorLine {
	found := make([]finding, len(up))
	far := time.Duration(-1)
	for i, n := range up {
		t0 := time.Now()
		server, err := n.rdb.Time(d.ctx).Result()
		t1 := time.Now()
		if err != nil {
			found[i] = finding{checkUnknown, "TIME refused: " + err.Error(), "allow the user +time (--fence and --once-per read the server's clock too)"}
			far = -2 // not all measured
			continue
		}
		// Measured at the middle of the round trip; half of it bounds
		// the error.
		half := t1.Sub(t0) / 2
		off := server.Sub(t0.Add(half))
		found[i] = clockFinding(off, half)
		if far != -2 && found[i].code == checkOK {
			far = max(far, off.Abs()+half)
		}
	}
	if len(up) > 1 && far >= 0 && !slices.ContainsFunc(found, func(f finding) bool { return f.code != checkOK }) {
		return line("clock", ok("the servers' clocks are within %s of this host's (warned past %s)", millis(far), clockSkewWarn))
	}
	return line("clock", d.combine(up, found))
}

// clockFinding judges the server's clock off from this host's by off,
// measured within half.
func clockFinding(off, half time.Duration) finding {
	ahead := "ahead of"
	if off < 0 {
		off, ahead = -off, "behind"
	}
	if off > clockSkewWarn+half {
		return finding{checkWarning, fmt.Sprintf("the server's clock is %s %s this host's: --once-per's windows follow the server's, cron and the records this host's", age(off), ahead),
			"synchronise both clocks (NTP, chrony)"}
	}
	return ok("the server's clock is within %s of this host's (warned past %s)", millis(off+half), clockSkewWarn)
}

// clusterSlot checks that every key of the name is in one Cluster slot, as
// with-lock's scripts need (internal/keys puts them there), and names the
// slot and, on a Cluster, the master that serves it.
func (d *doctor) clusterSlot() finding {
	names := d.nameKeys()
	slot := hashSlot(d.key)
	for _, k := range names {
		if s := hashSlot(k); s != slot {
			return finding{checkCritical, fmt.Sprintf("%s is in slot %d but %s in slot %d: one script cannot touch both on a Cluster", d.key, slot, k, s),
				"choose a name without '}', or one with a hash tag ({...})"}
		}
	}
	detail := fmt.Sprintf("the %d keys of %s are all in slot %d", len(names), d.r.cfg.Name, slot)
	if d.r.cfg.Topology() != config.Cluster {
		return ok("%s (not a Cluster: said for a move to one)", detail)
	}
	master, err := d.cluster.MasterForKey(d.ctx, d.key)
	if err != nil {
		return finding{checkCritical, detail + ", which no master serves: " + d.r.inUserWords(err), "check the Cluster's state (CLUSTER INFO)"}
	}
	return ok("%s, served by %s", detail, master.Options().Addr)
}

// nameKeys are the keys of the name's lock: the lock key, its side keys,
// and its fair line's and pause's (a key with '}' but no hash tag has no
// line base, and so none of those).
func (d *doctor) nameKeys() []string {
	k := d.key
	out := []string{k, keys.Fence(k), keys.Record(k), keys.History(k), keys.Success(k), keys.Window(k),
		keys.Broken(k), keys.Replaced(k), keys.Left(k)}
	if keys.HasLine(k) {
		pause, _ := keys.Pause(k)
		out = append(out, keys.Line(k), keys.Mark(k), pause, keys.Slot(k, 1))
	}
	return out
}

// hashSlot is key's Redis Cluster slot: of its hash tag when it has one
// (the first '{' and the next '}' with something between), else of the
// whole key.
func hashSlot(key string) uint16 {
	if keys.HashTagged(key) {
		open := strings.IndexByte(key, '{')
		end := strings.IndexByte(key[open+1:], '}')
		key = key[open+1 : open+1+end]
	}
	return keys.ClusterSlot(key)
}

// millis says d in whole milliseconds.
func millis(d time.Duration) string {
	return fmt.Sprintf("%d ms", d.Round(time.Millisecond).Milliseconds())
}
