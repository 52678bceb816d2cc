package redistest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ClusterTimeout bounds creating a cluster and waiting for it to agree.
const ClusterTimeout = 60 * time.Second

// Cluster is a Redis Cluster of masters without replicas, made with
// redis-cli --cluster create.
type Cluster struct {
	t     tb
	Nodes []*Server
}

// StartCluster starts n cluster-enabled servers, joins them into one
// cluster with every slot assigned and waits until all nodes agree.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	return startCluster(t, "", n)
}

// StartClusterMain is StartCluster for a program that has no test (the
// bench, as StartMain), with extra config directives for every node; stop
// kills the nodes and removes their directories.
func StartClusterMain(n int, extra ...string) (c *Cluster, stop func(), err error) {
	stop, err = startForMain("redistest-cluster-", "start a cluster", func(m *mainTB, dir string) {
		c = startCluster(m, dir, n, extra...)
	})
	if err != nil {
		return nil, nil, err
	}
	return c, stop, nil
}

// startCluster is StartCluster for t, each node in a directory of its own
// under dir ("": temporary directories of t's).
func startCluster(t tb, dir string, n int, extra ...string) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	args := []string{"--cluster", "create"}
	for i := range n {
		nodeDir := ""
		if dir != "" {
			nodeDir = filepath.Join(dir, strconv.Itoa(i))
			if err := os.Mkdir(nodeDir, 0o700); err != nil {
				t.Fatalf("start a cluster: %v", err)
			}
		}
		s := launch(t, launchOptions{dir: nodeDir, extra: append([]string{
			"cluster-enabled", "yes", "cluster-config-file", "nodes.conf",
			"cluster-node-timeout", "2000",
		}, extra...)})
		c.Nodes = append(c.Nodes, s)
		args = append(args, s.Addr())
	}
	args = append(args, "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), ClusterTimeout)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "redis-cli", args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	c.waitAgreed(ctx)
	return c
}

// waitAgreed polls until every node reports cluster_state:ok and knows the
// owner of all three slot ranges, so that a client's first CLUSTER SLOTS is
// right wherever it lands.
func (c *Cluster) waitAgreed(ctx context.Context) {
	c.t.Helper()
	for _, s := range c.Nodes {
		rdb := s.Client()
		for {
			info, _ := rdb.ClusterInfo(ctx).Result()
			//lint:ignore SA1019 CLUSTER SLOTS is what go-redis's cluster client reads
			slots, _ := rdb.ClusterSlots(ctx).Result()
			if strings.Contains(info, "cluster_state:ok") && len(slots) == len(c.Nodes) {
				break
			}
			if ctx.Err() != nil {
				c.t.Fatalf("cluster node %s did not agree within %s:\n%s", s.Addr(), ClusterTimeout, info)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// Seeds are the addresses of all nodes.
func (c *Cluster) Seeds() []string {
	addrs := make([]string, len(c.Nodes))
	for i, s := range c.Nodes {
		addrs[i] = s.Addr()
	}
	return addrs
}

// Client returns a cluster client seeded with every node, closed with the
// test.
func (c *Cluster) Client() *redis.ClusterClient {
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Seeds(), DisableIdentity: true})
	c.t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// NodeFor returns the server that owns key's slot.
func (c *Cluster) NodeFor(key string) *Server {
	c.t.Helper()
	rdb := c.Nodes[0].Client()
	slot, err := rdb.ClusterKeySlot(context.Background(), key).Result()
	if err != nil {
		c.t.Fatalf("CLUSTER KEYSLOT %s: %v", key, err)
	}
	//lint:ignore SA1019 CLUSTER SLOTS is what go-redis's cluster client reads
	slots, err := rdb.ClusterSlots(context.Background()).Result()
	if err != nil {
		c.t.Fatalf("CLUSTER SLOTS: %v", err)
	}
	for _, r := range slots {
		if int64(r.Start) <= slot && slot <= int64(r.End) {
			for _, s := range c.Nodes {
				if s.Addr() == r.Nodes[0].Addr {
					return s
				}
			}
		}
	}
	c.t.Fatalf("no node owns slot %d of %s", slot, key)
	return nil
}

// clusterPort finds a loopback port p whose cluster bus port p+10000 is
// free as well, neither handed out before in this process (freePort). It
// comes from 20000-45000, so that the bus port stays below 65536 and away
// from the ephemeral range's usual start.
func clusterPort() (int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 1000 {
		p := 20000 + rand.N(25000)
		if p == 6379 || handedOut.ports[p] || handedOut.ports[p+10000] || !portFree(p) || !portFree(p+10000) {
			continue
		}
		handedOut.note(p, p+10000)
		return p, nil
	}
	return 0, fmt.Errorf("no free pair of ports p, p+10000 for a cluster node")
}

func portFree(p int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}
