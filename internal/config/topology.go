package config

// The deployment the connection settings name, decided here once: the
// checks of Parse, RedisClients and the CLI's choice of lock client all
// ask Topology rather than each reading --sentinel, --cluster and the
// number of --redis URLs again.

// Topology is a kind of Redis deployment.
type Topology int

const (
	Single   Topology = iota // one Redis server (or a primary with replicas)
	Sentinel                 // a master found through --sentinel
	Cluster                  // a Redis Cluster, reached through its --redis seeds
	Quorum                   // several independent --redis masters, locked by majority
)

// String names the topology as the docs do.
func (t Topology) String() string {
	switch t {
	case Sentinel:
		return "sentinel"
	case Cluster:
		return "cluster"
	case Quorum:
		return "quorum"
	default:
		return "single"
	}
}

// Topology returns the deployment the connection settings name. Parse has
// refused the contradictory combinations (--cluster with --sentinel,
// --sentinel with several --redis URLs), so the first that applies wins.
func (c *Connection) Topology() Topology {
	switch {
	case len(c.Sentinels) > 0:
		return Sentinel
	case c.Cluster:
		return Cluster
	case len(c.RedisURLs) > 1:
		return Quorum
	default:
		return Single
	}
}
