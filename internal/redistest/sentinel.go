package redistest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelTimeout bounds waiting for sentinels to discover each other and
// for a failover.
const SentinelTimeout = 60 * time.Second

// MasterName is the name the sentinels of StartSentinels monitor.
const MasterName = "mymaster"

// Sentinels are a master, its replica and three sentinels with short
// timeouts: a master that stops answering is failed over within seconds.
type Sentinels struct {
	t         testing.TB
	Master    *Server
	Replica   *Server
	Sentinels []*Server
}

// Client returns a failover client that finds the master through the
// sentinels, closed with the test. o, if not nil, adds options (timeouts,
// retries); the master's name and the sentinels are the group's.
func (g *Sentinels) Client(o *redis.FailoverOptions) *redis.Client {
	var opt redis.FailoverOptions
	if o != nil {
		opt = *o
	}
	opt.MasterName, opt.SentinelAddrs, opt.DisableIdentity = MasterName, g.Addrs(), true
	rdb := redis.NewFailoverClient(&opt)
	g.t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// StartSentinels starts a master, one replica of it and three sentinels
// (quorum 2), and waits until the replica is in sync and every sentinel
// knows the replica and the two other sentinels, so a failover can be
// elected.
func StartSentinels(t testing.TB) *Sentinels {
	t.Helper()
	g := &Sentinels{t: t}
	// No delay before a full sync: the replica is in sync at once.
	g.Master = Start(t, "repl-diskless-sync-delay", "0")
	g.Replica = Start(t, "replicaof", "127.0.0.1 "+fmt.Sprint(g.Master.Port), "repl-diskless-sync-delay", "0")
	for range 3 {
		g.Sentinels = append(g.Sentinels, StartSentinel(t, g.Master.Port, 2, ""))
	}
	ctx, cancel := context.WithTimeout(context.Background(), SentinelTimeout)
	defer cancel()
	replica := g.Replica.Client()
	g.eventually(ctx, "replica in sync", func() bool {
		info, _ := replica.Info(ctx, "replication").Result()
		return strings.Contains(info, "master_link_status:up")
	})
	for _, s := range g.Sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr()})
		g.eventually(ctx, "sentinel "+s.Addr()+" knows its peers and the replica", func() bool {
			peers, _ := sc.Sentinels(ctx, MasterName).Result()
			replicas, _ := sc.Replicas(ctx, MasterName).Result()
			return len(peers) == 2 && len(replicas) == 1
		})
		_ = sc.Close()
	}
	return g
}

// StartSentinel starts one sentinel that monitors the master on
// masterPort as MasterName with the given quorum and short timeouts;
// conf is appended to its configuration file (e.g. "requirepass pw").
func StartSentinel(t testing.TB, masterPort, quorum int, conf string) *Server {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "sentinel.conf")
	text := fmt.Sprintf(`sentinel monitor %[1]s 127.0.0.1 %[2]d %[3]d
sentinel down-after-milliseconds %[1]s 1000
sentinel failover-timeout %[1]s 5000
sentinel parallel-syncs %[1]s 1
%[4]s
`, MasterName, masterPort, quorum, conf)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
	return launch(t, launchOptions{dir: dir, first: []string{path, "--sentinel"}})
}

// Addrs are the sentinels' addresses.
func (g *Sentinels) Addrs() []string {
	addrs := make([]string, len(g.Sentinels))
	for i, s := range g.Sentinels {
		addrs[i] = s.Addr()
	}
	return addrs
}

// MasterAddrs asks every sentinel for the master's address ("" for one
// that does not answer).
func (g *Sentinels) MasterAddrs(ctx context.Context) []string {
	addrs := make([]string, len(g.Sentinels))
	for i, s := range g.Sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr()})
		addr, err := sc.GetMasterAddrByName(ctx, MasterName).Result()
		_ = sc.Close()
		if err == nil && len(addr) == 2 {
			addrs[i] = addr[0] + ":" + addr[1]
		}
	}
	return addrs
}

// WaitMaster polls until every sentinel names addr as the master. Until
// then a client may still be sent to the old master by a sentinel that
// has not heard of the failover yet.
func (g *Sentinels) WaitMaster(addr string) {
	g.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), SentinelTimeout)
	defer cancel()
	g.eventually(ctx, "all sentinels name "+addr+" the master", func() bool {
		for _, a := range g.MasterAddrs(ctx) {
			if a != addr {
				return false
			}
		}
		return true
	})
}

func (g *Sentinels) eventually(ctx context.Context, what string, cond func() bool) {
	g.t.Helper()
	for !cond() {
		if ctx.Err() != nil {
			g.t.Fatalf("within %s: %s", SentinelTimeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
