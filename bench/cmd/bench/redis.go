package main

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// commandsProcessed reads INFO stats total_commands_processed, which counts
// the commands run inside Lua scripts too. The INFO itself counts one.
func commandsProcessed(rdb *redis.Client) int64 {
	return infoInt(rdb, "stats", "total_commands_processed")
}

// serverCPU reads INFO cpu: the server's used_cpu_user plus used_cpu_sys.
func serverCPU(rdb *redis.Client) time.Duration {
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		return 0
	}
	var sum float64
	for _, line := range strings.Split(info, "\r\n") {
		for _, f := range []string{"used_cpu_user:", "used_cpu_sys:"} {
			if v, ok := strings.CutPrefix(line, f); ok {
				x, _ := strconv.ParseFloat(v, 64)
				sum += x
			}
		}
	}
	return time.Duration(sum * float64(time.Second))
}

// scriptTime reads INFO commandstats: how many EVAL and EVALSHA calls the
// server ran and the µs it spent in them, the commands the scripts ran
// included. Redis times each command on its own, so this is the release
// script's cost apart from reading, parsing and replying.
func scriptTime(rdb *redis.Client) (calls, usec int64) {
	stats := commandStats(rdb)
	for _, cmd := range []string{"eval", "evalsha"} {
		calls += stats[cmd].calls
		usec += stats[cmd].usec
	}
	return calls, usec
}

// commandStat is one command's line of INFO commandstats.
type commandStat struct{ calls, usec int64 }

// commandStats reads INFO commandstats: each command's calls and the µs
// redis-server spent in them, by lower-case name; none on an error.
func commandStats(rdb *redis.Client) map[string]commandStat {
	stats := map[string]commandStat{}
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		return stats
	}
	for _, line := range strings.Split(info, "\r\n") {
		rest, ok := strings.CutPrefix(line, "cmdstat_")
		if !ok {
			continue
		}
		cmd, fields, _ := strings.Cut(rest, ":")
		var st commandStat
		for _, field := range strings.Split(fields, ",") {
			k, v, _ := strings.Cut(field, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "calls":
				st.calls = n
			case "usec":
				st.usec = n
			}
		}
		stats[cmd] = st
	}
	return stats
}

// infoInt reads one integer field of an INFO section, or 0.
func infoInt(rdb *redis.Client, section, field string) int64 {
	info, err := rdb.Info(context.Background(), section).Result()
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

func redisVersion(rdb *redis.Client) string {
	info, _ := rdb.Info(context.Background(), "server").Result()
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "redis_version:"); ok {
			return v
		}
	}
	return "unknown"
}
