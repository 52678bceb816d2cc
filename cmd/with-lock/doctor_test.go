package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// --doctor against real servers set up to show each condition: each test
// asserts the condition's line, in the text and in --json, and the exit
// code, which is --check's (0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN).
// redistest's servers have no RDB and no AOF unless a test turns AOF on:
// their persistence line is a WARNING.

// doctorReport is --doctor --json's object.
type doctorReport struct {
	Status     string `json:"status"`
	Code       int    `json:"code"`
	Message    string `json:"message"`
	Deployment string `json:"deployment"`
	Name       string `json:"name"`
	Key        string `json:"key"`
	Checks     []struct {
		Name   string `json:"name"`
		State  string `json:"state"`
		Detail string `json:"detail"`
		Advice string `json:"advice"`
	} `json:"checks"`
}

// doctored is one --doctor, run as text and again with --json.
type doctored struct {
	code int
	text string
	rep  doctorReport
}

// runDoctor runs with-lock --doctor with args, as text and with --json:
// both must exit alike, the JSON's code and status must be the exit's.
func runDoctor(t *testing.T, env []string, args ...string) doctored {
	t.Helper()
	res := clitest.Run(t, env, append([]string{"--doctor"}, args...)...)
	js := clitest.Run(t, env, append([]string{"--doctor", "--json"}, args...)...)
	var d doctored
	d.code, d.text = res.Code, res.Stdout
	if err := json.Unmarshal([]byte(js.Stdout), &d.rep); err != nil {
		t.Fatalf("--doctor --json: %v: %q (stderr %q)", err, js.Stdout, js.Stderr)
	}
	states := []string{"OK", "WARNING", "CRITICAL", "UNKNOWN"}
	if js.Code != res.Code || d.rep.Code != res.Code || d.rep.Status != states[min(res.Code, 3)] {
		t.Fatalf("text exit %d, --json exit %d with code %d status %s: they must agree\n%s", res.Code, js.Code, d.rep.Code, d.rep.Status, res.Stdout)
	}
	if first := strings.SplitN(res.Stdout, "\n", 2)[0]; !strings.HasPrefix(first, "WITH-LOCK "+d.rep.Status+" - ") {
		t.Fatalf("first line %q, want WITH-LOCK %s - ...", first, d.rep.Status)
	}
	return d
}

// expect checks the line of the check called name: its state, text that
// its detail holds, and the exit code of the whole.
func (d doctored) expect(t *testing.T, name, state, detail string, code int) {
	t.Helper()
	if !regexp.MustCompile(`(?m)^` + state + ` +` + regexp.QuoteMeta(name) + ` +\S`).MatchString(d.text) {
		t.Errorf("no line %q for %s in\n%s", state, name, d.text)
	}
	found := false
	for _, c := range d.rep.Checks {
		if c.Name != name {
			continue
		}
		found = true
		if c.State != state || !strings.Contains(c.Detail, detail) {
			t.Errorf("--json check %s: %s %q, want %s with %q", name, c.State, c.Detail, state, detail)
		}
		if (c.State != "OK") != (c.Advice != "") {
			t.Errorf("--json check %s: %s with advice %q: a line that is not OK says what to do, an OK one nothing", name, c.State, c.Advice)
		}
	}
	if !found {
		t.Errorf("--json has no check %s: %+v", name, d.rep.Checks)
	}
	if d.code != code {
		t.Errorf("exit %d, want %d\n%s", d.code, code, d.text)
	}
}

// aof is the config of a server whose restart keeps the locks: its
// persistence line is OK.
var aof = []string{"appendonly", "yes"}

func TestDoctorJudgesTheEvictionPolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		config []string
		fill   func(*testing.T, *redistest.Server) // what the server went through before the doctor
		state  string
		detail string
		code   int
	}{
		{"noeviction with a maxmemory is OK", []string{"maxmemory", "100mb", "maxmemory-policy", "noeviction"}, nil,
			"OK", "maxmemory-policy noeviction: locks are never evicted", 0},
		{"no maxmemory is OK whatever the policy", []string{"maxmemory-policy", "allkeys-lru"}, nil,
			"OK", "maxmemory 0 (no limit)", 0},
		{"allkeys-lru with a maxmemory is WARNING", []string{"maxmemory", "100mb", "maxmemory-policy", "allkeys-lru"}, nil,
			"WARNING", "Redis may evict lock:nightly under memory pressure (maxmemory-policy allkeys-lru)", 1},
		{"an evicting policy that has evicted keys is CRITICAL", []string{"maxmemory", "4mb", "maxmemory-policy", "allkeys-lru"},
			func(t *testing.T, s *redistest.Server) {
				if err := s.Client().Set(context.Background(), "victim", "v", time.Hour).Err(); err != nil {
					t.Fatalf("SET: %v", err)
				}
				s.FillUntilEvicted("victim")
			},
			"CRITICAL", "maxmemory-policy allkeys-lru, and it has evicted", 2},
		{"noeviction with its maxmemory reached is CRITICAL", []string{"maxmemory", "4mb", "maxmemory-policy", "noeviction"},
			func(_ *testing.T, s *redistest.Server) { s.FillUntilOOM() },
			"CRITICAL", "maxmemory-policy noeviction, and full: Redis refuses writes", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t, append(tc.config, aof...)...)
			if tc.fill != nil {
				tc.fill(t, srv)
			}
			runDoctor(t, nil, "--redis", srv.URL(), "nightly").expect(t, "eviction", tc.state, tc.detail, tc.code)
		})
	}
}

func TestDoctorJudgesPersistence(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		config []string
		state  string
		detail string
		code   int
	}{
		{"AOF on is OK", aof, "OK", "AOF on, appendfsync everysec", 0},
		{"RDB snapshots alone are OK", []string{"save", "3600 1"}, "OK", "RDB snapshots (save 3600 1), AOF off", 0},
		{"neither is WARNING", nil, "WARNING", "no AOF and no RDB snapshots: a restart forgets the held locks", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t, tc.config...)
			runDoctor(t, nil, "--redis", srv.URL(), "nightly").expect(t, "persistence", tc.state, tc.detail, tc.code)
		})
	}
	t.Run("AOF off is UNKNOWN to a user who may not read the RDB schedule", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t)
		args := []any{"ACL", "SETUSER", "locker", "reset", "on", ">pw"}
		for _, rule := range strings.Fields(LeastPrivilegeACL) {
			args = append(args, rule)
		}
		if err := srv.Client().Do(context.Background(), args...).Err(); err != nil {
			t.Fatalf("ACL SETUSER: %v", err)
		}
		runDoctor(t, []string{"WITH_LOCK_PASSWORD=pw"}, "--redis", "redis://locker@"+srv.Addr()+"/0", "nightly").
			expect(t, "persistence", "UNKNOWN", "AOF off, and whether RDB snapshots are scheduled is unknown: CONFIG GET save: NOPERM", 3)
	})
}

func TestDoctorJudgesReplicasAndMinReplicas(t *testing.T) {
	t.Parallel()
	master := redistest.Start(t, append(aof, "repl-diskless-sync-delay", "0")...)
	replica := redistest.Start(t, append(aof, "replicaof", "127.0.0.1 "+strconv.Itoa(master.Port))...)
	waitInSync(t, replica)

	t.Run("a master with a replica is OK and says what --min-replicas would wait for", func(t *testing.T) {
		t.Parallel()
		runDoctor(t, nil, "--redis", master.URL(), "nightly").
			expect(t, "replication", "OK", "1 replica(s) (127.0.0.1:"+strconv.Itoa(replica.Port)+" online", 0)
		runDoctor(t, nil, "--redis", master.URL(), "nightly").
			expect(t, "replication", "OK", "--min-replicas 1 would wait for them, and WAIT counts 1 now", 0)
	})
	t.Run("--min-replicas above the replicas is CRITICAL", func(t *testing.T) {
		t.Parallel()
		runDoctor(t, nil, "--redis", master.URL(), "--min-replicas", "2", "nightly").
			expect(t, "replication", "CRITICAL", "--min-replicas 2 waits for 2, and WAIT counts 1 now: every run would exit 69", 2)
	})
	t.Run("a replica named as the server is CRITICAL", func(t *testing.T) {
		t.Parallel()
		runDoctor(t, nil, "--redis", replica.URL(), "nightly").
			expect(t, "replication", "CRITICAL", "a replica of 127.0.0.1:"+strconv.Itoa(master.Port)+": it refuses the lock's writes", 2)
	})
}

// waitInSync waits until replica's link to its master is up.
func waitInSync(t *testing.T, replica *redistest.Server) {
	t.Helper()
	rdb := replica.Client()
	for deadline := time.Now().Add(redistest.StartTimeout); ; time.Sleep(20 * time.Millisecond) {
		info, _ := rdb.Info(context.Background(), "replication").Result()
		if strings.Contains(info, "master_link_status:up") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica is not in sync after %s", redistest.StartTimeout)
		}
	}
}

func TestDoctorNamesTheCommandsTheACLUserMayNotSend(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, aof...)
	admin := srv.Client()
	for _, tc := range []struct {
		name   string
		user   string
		rules  string // the user's ACL
		state  string
		detail string
		code   int
	}{
		{"the least-privilege ACL is OK", "u-all", LeastPrivilegeACL,
			"OK", "user u-all may send every command with-lock sends, with the keys of lock:nightly (by redis.acl_check_cmd)", 0},
		{"without +pexpire, which every run needs, CRITICAL", "u-pexpire", strings.Replace(LeastPrivilegeACL, " +pexpire", "", 1),
			"CRITICAL", "PEXPIRE lock:nightly 30000 (every run: renewal)", 2},
		{"without +scan, which --list --scan needs, WARNING", "u-scan", strings.Replace(LeastPrivilegeACL, " +scan", "", 1),
			"WARNING", "SCAN 0 MATCH lock:* COUNT 1000 (--list --scan)", 1},
		// PING refused is still an answer: reachable stays OK (exit 1).
		{"without +ping, WARNING", "u-ping", strings.Replace(LeastPrivilegeACL, " +ping", "", 1),
			"WARNING", "PING (the client's health checks)", 1},
		// A user who may run ACL DRYRUN is asked by it.
		{"a user who may run ACL DRYRUN, without +scan, WARNING", "u-admin", "~* &* +@all -scan",
			"WARNING", "SCAN 0 MATCH lock:* COUNT 1000 (--list --scan) (by ACL DRYRUN)", 1},
		// The side keys' pattern missing: the release's script is refused.
		{"without the side keys' pattern, CRITICAL", "u-side", strings.Replace(LeastPrivilegeACL, " ~{lock:*", "", 1),
			"CRITICAL", "EVAL <script> 6 lock:nightly {lock:nightly}:fence", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := []any{"ACL", "SETUSER", tc.user, "reset", "on", ">pw"}
			for _, rule := range strings.Fields(tc.rules) {
				args = append(args, rule)
			}
			if err := admin.Do(context.Background(), args...).Err(); err != nil {
				t.Fatalf("ACL SETUSER: %v", err)
			}
			url := fmt.Sprintf("redis://%s@%s/0", tc.user, srv.Addr())
			d := runDoctor(t, []string{"WITH_LOCK_PASSWORD=pw"}, "--redis", url, "nightly")
			d.expect(t, "acl", tc.state, tc.detail, tc.code)
		})
	}
}

func TestDoctorSaysAServerWithoutLuaIsCritical(t *testing.T) {
	t.Parallel()
	// "--rename-command EVAL", "": redis-server reads its command line
	// as config text, an option's words as they are, its values quoted.
	srv := redistest.Start(t, append(aof, "rename-command EVAL", "")...)
	runDoctor(t, nil, "--redis", srv.URL(), "nightly").
		expect(t, "lua", "CRITICAL", "EVAL of a trivial script failed", 2)
}

func TestDoctorOnACluster(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t, 3)
	args := []string{"--cluster"}
	for _, s := range c.Seeds() {
		args = append(args, "--redis", "redis://"+s)
	}
	d := runDoctor(t, nil, append(args, "nightly")...)
	owner := c.NodeFor("lock:nightly").Addr()
	d.expect(t, "cluster-slot", "OK", "the 13 keys of nightly are all in slot 166, served by "+owner, 1)
	d.expect(t, "reachable", "OK", "answered PING", 1)
	d.expect(t, "persistence", "WARNING", "(all 3)", 1)
	if d.rep.Deployment != "cluster" || d.rep.Key != "lock:nightly" {
		t.Errorf("deployment %q, key %q", d.rep.Deployment, d.rep.Key)
	}
	// One of its nodes named as a server of its own.
	runDoctor(t, nil, "--redis", c.Nodes[0].URL(), "nightly").
		expect(t, "reachable", "CRITICAL", c.Nodes[0].Addr()+" is a Redis Cluster node (it answered HELLO with mode cluster): add --cluster", 2)
}

func TestDoctorThroughSentinel(t *testing.T) {
	t.Parallel()
	g := redistest.StartSentinels(t)
	args := []string{"--sentinel-master", redistest.MasterName}
	for _, a := range g.Addrs() {
		args = append(args, "--sentinel", a)
	}
	d := runDoctor(t, nil, append(args, "nightly")...)
	d.expect(t, "reachable", "OK", "answered PING", 1)
	d.expect(t, "replication", "OK", "1 replica(s) (127.0.0.1:"+strconv.Itoa(g.Replica.Port), 1)
	d.expect(t, "replication", "OK", "WAIT counts 1 now", 1)
	if !strings.Contains(d.rep.Message, "Sentinel master "+redistest.MasterName) {
		t.Errorf("message %q does not name the master", d.rep.Message)
	}
	// A sentinel named as the server.
	runDoctor(t, nil, "--redis", g.Sentinels[0].URL(), "nightly").
		expect(t, "server", "CRITICAL", "sentinel: a Sentinel, not the Redis that keeps the locks", 2)
}

func TestDoctorOnAQuorumOfThree(t *testing.T) {
	t.Parallel()
	var args []string
	var nodes []*redistest.Server
	for range 3 {
		s := redistest.Start(t, aof...)
		nodes = append(nodes, s)
		args = append(args, "--redis", s.URL())
	}
	runDoctor(t, nil, append(args, "nightly")...).expect(t, "persistence", "OK", "AOF on, appendfsync everysec: a restart keeps the locks (all 3)", 0)
	nodes[2].Kill()
	runDoctor(t, nil, append(args, "--redis-timeout", "1s", "nightly")...).
		expect(t, "reachable", "WARNING", "2 of 3 masters answered, a majority (2)", 1)
	nodes[1].Kill()
	runDoctor(t, nil, append(args, "--redis-timeout", "1s", "nightly")...).
		expect(t, "reachable", "CRITICAL", "nothing listens at "+nodes[1].Addr(), 2)
}

func TestDoctorSaysAnUnreachableServerIsCritical(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	srv.Kill()
	d := runDoctor(t, nil, "--redis", srv.URL())
	d.expect(t, "reachable", "CRITICAL", "nothing listens at "+srv.Addr(), 2)
	if len(d.rep.Checks) != 1 {
		t.Errorf("a server that does not answer has no other checks: %+v", d.rep.Checks)
	}
}

func TestDoctorWithoutANameChecksTheServerAlone(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, aof...)
	d := runDoctor(t, nil, "--redis", srv.URL())
	d.expect(t, "acl", "OK", "with the keys of lock:example", 0)
	for _, c := range d.rep.Checks {
		if c.Name == "cluster-slot" {
			t.Errorf("a cluster-slot line without a name: %+v", c)
		}
	}
	if d.rep.Name != "" || d.rep.Key != "" || !strings.HasSuffix(d.rep.Message, "can hold locks") {
		t.Errorf("name %q, key %q, message %q", d.rep.Name, d.rep.Key, d.rep.Message)
	}
}

func TestDoctorRefusesWhatItCannotDo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--doctor", "a", "b"}, "--doctor takes at most one lock name and no command"},
		{[]string{"--doctor", "a", "--json"}, `flags go before the name: --json is after "a"`},
		{[]string{"--doctor", "--status", "a"}, "go alone"},
	} {
		res := clitest.Run(t, nil, tc.args...)
		if res.Code != 64 || !strings.Contains(res.Stderr, tc.msg) || strings.Count(res.Stderr, "\n") != 1 {
			t.Errorf("with-lock %s: exit %d, stderr %q; want 64 and one line with %q", strings.Join(tc.args, " "), res.Code, res.Stderr, tc.msg)
		}
	}
}

// A server whose clock is seconds off this host's (stepped by a preloaded
// shim, redistest.StartSteppedClock) is WARNING, ahead or behind; one in
// step is OK.
func TestDoctorWarnsOfAServerClockSecondsOff(t *testing.T) {
	t.Parallel()
	srv, clock := redistest.StartSteppedClock(t, aof...) // AOF: the clock alone decides the exit code
	runDoctor(t, nil, "--redis", srv.URL(), "nightly").expect(t, "clock", "OK", "the server's clock is within", 0)
	clock.Step(5 * time.Second)
	runDoctor(t, nil, "--redis", srv.URL(), "nightly").expect(t, "clock", "WARNING", "the server's clock is 5s ahead of this host's", 1)
	clock.Step(-95 * time.Second)
	runDoctor(t, nil, "--redis", srv.URL(), "nightly").expect(t, "clock", "WARNING", "the server's clock is 1m30s behind this host's", 1)
}
