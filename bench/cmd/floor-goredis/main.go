// Command floor-goredis is bench/cmd/floor-guarded with go-redis in place
// of the raw socket: the same SET NX EX, guard, fork/exec and EVAL, through
// a go-redis client set up as with-lock sets up its own (no CLIENT SETINFO,
// no maintenance notifications, no retries). It is the least a guarded
// wrapper built on go-redis can cost: its start-up pays for go-redis's
// package graph (crypto/tls among it) and its connection handshake
// (HELLO), which with-lock pays too and the raw floors do not.
//
//	FLOOR_REDIS=127.0.0.1:6379 floor-goredis <name> <command...>
//
// Built with the runtime settings with-lock's main has (see there), so that
// they are not what the ratio measures.
//
//go:debug updatemaxprocs=0
//go:debug decoratemappings=0
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/with-lock/with-lock/bench/internal/floorguard"
	"github.com/with-lock/with-lock/bench/internal/rawlock"
)

const release = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`

func main() {
	floorguard.BeGuard()
	if len(os.Args) < 3 {
		os.Exit(64)
	}
	rdb := redis.NewClient(&redis.Options{
		Addr: rawlock.Addr(), MaxRetries: -1, PoolSize: 4, DisableIdentity: true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	ctx := context.Background()
	host, _ := os.Hostname()
	var b [16]byte
	_, _ = rand.Read(b[:])
	key, token := "lock:"+os.Args[1], host+":"+strconv.Itoa(os.Getpid())+":"+hex.EncodeToString(b[:])
	ok, err := rdb.SetNX(ctx, key, token, 30*time.Second).Result()
	switch {
	case err != nil:
		os.Exit(69)
	case !ok:
		os.Exit(75)
	}
	code := floorguard.Run(os.Args[2:])
	if rdb.Eval(ctx, release, []string{key}, token).Err() != nil {
		os.Exit(69)
	}
	os.Exit(code)
}
