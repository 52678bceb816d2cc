package main

import (
	"time"

	"github.com/redis/go-redis/v9"
)

// What the scale runs read of a redis-server between two moments: its
// commands by name (INFO commandstats, the commands scripts run
// included), its CPU time and its memory.

// serverStats is one reading of a server's counters.
type serverStats struct {
	calls map[string]int64 // calls per command, "info" left out
	usec  map[string]int64 // µs in each command, as calls (a script's include its commands')
	cpu   time.Duration    // used_cpu_user + used_cpu_sys
	reads int64            // total_reads_processed: reads from client sockets
}

// readStats reads rdb's commandstats, CPU time and socket reads.
func readStats(rdb *redis.Client) serverStats {
	calls, usec := commandCalls(rdb)
	return serverStats{calls: calls, usec: usec, cpu: serverCPU(rdb), reads: infoInt(rdb, "stats", "total_reads_processed")}
}

// since is s less an earlier reading: the calls, CPU time and reads in
// between (the reads less the INFO calls of readStats).
func (s serverStats) since(before serverStats) serverStats {
	d := serverStats{calls: map[string]int64{}, usec: map[string]int64{}, cpu: s.cpu - before.cpu, reads: s.reads - before.reads - 3}
	for cmd, n := range s.calls {
		if n -= before.calls[cmd]; n > 0 {
			d.calls[cmd] = n
			d.usec[cmd] = s.usec[cmd] - before.usec[cmd]
		}
	}
	return d
}

// total is the number of commands in s.
func (s serverStats) total() int64 {
	var n int64
	for _, k := range s.calls {
		n += k
	}
	return n
}

// commandCalls reads INFO commandstats: calls and µs per command, without
// INFO, which is how the bench reads them.
func commandCalls(rdb *redis.Client) (calls, usec map[string]int64) {
	calls, usec = map[string]int64{}, map[string]int64{}
	for cmd, st := range commandStats(rdb) {
		if cmd != "info" {
			calls[cmd], usec[cmd] = st.calls, st.usec
		}
	}
	return calls, usec
}

// memory is what a server holds in bytes: in all (used_memory), and for
// its normal clients' connections (mem_clients_normal: buffers and state).
func memory(rdb *redis.Client) (used, clients int64) {
	return infoInt(rdb, "memory", "used_memory"), infoInt(rdb, "memory", "mem_clients_normal")
}
