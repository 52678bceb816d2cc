package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/luacode"
)

// lockTTL is the TTL every library sets; holds are far shorter, so no key
// expires during a run.
const lockTTL = 10 * time.Second

// unlockFunc releases one acquisition.
type unlockFunc func(context.Context) error

// locker is one library, set up once, taking locks by name.
type locker interface {
	// lock waits until the lock called name is ours (or ctx ends).
	lock(ctx context.Context, name string) (unlockFunc, error)
	close()
}

// lib is a contestant: how to open its locker, and where it competes.
type lib struct {
	name        string
	config      string // how it is configured, for BENCHMARKS.md
	open        func(addr string) (locker, error)
	uncontended bool // measured in the uncontended table
	contended   bool // measured in the contended table
}

func libs() []lib {
	return []lib{
		{name: "with-lock", config: "Client.Acquire / Lock.Release", open: openOurs, uncontended: true, contended: true},
		{name: "with-lock, a process per lock", config: "as above, but every acquisition opens a new go-redis client and Client and closes them after the release, as `with-lock -w` processes do", open: openFresh, contended: true},
		{name: "raw go-redis floor", config: "SET NX PX + EVAL of a compare-and-delete script, nothing else", open: openRaw, uncontended: true},
		{name: "raw go-redis floor, EVALSHA", config: "SET NX PX + the same script through redis.Script.Run: EVALSHA, EVAL only on NOSCRIPT", open: openRawSHA, uncontended: true},
		{name: "raw go-redis floor, with-lock's commands", config: "the EVALSHA floor sending exactly what with-lock sends: its 50-byte token, and its release script (lua/key_hand.lua and lua/release.lua, comment lines stripped) with its two arguments (token, the waiting mark); what is left between this row and with-lock's is with-lock's own code", open: openRawSame, uncontended: true},
		{name: "raw go-redis floor, with-lock's commands, held connections", config: "the row above, each goroutine sending on a connection of its own held out of go-redis's pool (Client.Conn): no pool Get and Put and no MSG_PEEK health check per command; what go-redis's pool costs a lone caller", open: openRawSameHeld, uncontended: true},
		{name: "bsm/redislock", config: "Obtain with LinearBackoff(10ms) / Release", open: openRedislock(10 * time.Millisecond), uncontended: true, contended: true},
		{name: "bsm/redislock, spin", config: "Obtain without retry, called again at once until it succeeds", open: openRedislock(0), contended: true},
		{name: "redsync", config: "Mutex.LockContext with default retry delays (50–250 ms) and unlimited tries / UnlockContext", open: openRedsync, uncontended: true, contended: true},
		{name: "rueidislock", config: "WithContext / cancel; KeyMajority 1 (one key, as the others), KeyValidity 10s, other options default", open: openRueidislock, uncontended: true, contended: true},
	}
}

func newGoRedis(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true})
}

// --- with-lock ---

type ours struct {
	rdb *redis.Client
	c   *withlock.Client
}

func openOurs(addr string) (locker, error) {
	rdb := newGoRedis(addr)
	return &ours{rdb: rdb, c: withlock.New(rdb, nil)}, nil
}

func (o *ours) lock(ctx context.Context, name string) (unlockFunc, error) {
	l, err := o.c.Acquire(ctx, name, lockTTL, nil)
	if err != nil {
		return nil, err
	}
	return l.Release, nil
}

func (o *ours) close() { _ = o.rdb.Close() }

// fresh takes every lock with a new go-redis client and Client, closed
// after the release: what separate `with-lock -w` processes do.
type fresh struct{ addr string }

func openFresh(addr string) (locker, error) { return &fresh{addr: addr}, nil }

func (f *fresh) lock(ctx context.Context, name string) (unlockFunc, error) {
	rdb := newGoRedis(f.addr)
	l, err := withlock.New(rdb, nil).Acquire(ctx, name, lockTTL, nil)
	if err != nil {
		_ = rdb.Close()
		return nil, err
	}
	return func(ctx context.Context) error {
		defer rdb.Close()
		return l.Release(ctx)
	}, nil
}

func (f *fresh) close() {}

// --- the floor: one SET NX PX and one EVAL through go-redis ---

const rawRelease = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`

// raw is the floor: SET NX PX and the release script by EVAL, or with sha
// by the script's digest, as redsync does.
type raw struct {
	rdb *redis.Client
	sha bool
}

var rawReleaseScript = redis.NewScript(rawRelease)

func openRaw(addr string) (locker, error)    { return &raw{rdb: newGoRedis(addr)}, nil }
func openRawSHA(addr string) (locker, error) { return &raw{rdb: newGoRedis(addr), sha: true}, nil }

func (r *raw) lock(ctx context.Context, name string) (unlockFunc, error) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	ok, err := r.rdb.SetNX(ctx, name, token, lockTTL).Result()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New("raw floor: lock busy (it does not wait)")
	}
	return func(ctx context.Context) error {
		if r.sha {
			return rawReleaseScript.Run(ctx, r.rdb, []string{name}, token).Err()
		}
		return r.rdb.Eval(ctx, rawRelease, []string{name}, token).Err()
	}, nil
}

func (r *raw) close() { _ = r.rdb.Close() }

// rawSame is the EVALSHA floor with with-lock's commands: a token of
// with-lock's shape and length, and with-lock's release script with the
// arguments its uncontended release sends.
type rawSame struct {
	rdb     *redis.Client
	release *redis.Script
	prefix  string // "<host>:<pid>:", as with-lock's tokens start

	// held, when not nil, is a connection per lock name held out of rdb's
	// pool: each goroutine of the bench takes its own name.
	mu   sync.Mutex
	held map[string]*redis.Conn
}

func openRawSameHeld(addr string) (locker, error) {
	l, err := openRawSame(addr)
	if err != nil {
		return nil, err
	}
	l.(*rawSame).held = map[string]*redis.Conn{}
	return l, nil
}

// setScripter is what rawSame sends its two commands through.
type setScripter interface {
	redis.Scripter
	SetNX(ctx context.Context, key string, value any, expiration time.Duration) *redis.BoolCmd
}

// conn is what the lock called name is taken and released on.
func (r *rawSame) conn(name string) setScripter {
	if r.held == nil {
		return r.rdb
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.held[name]
	if c == nil {
		c = r.rdb.Conn()
		r.held[name] = c
	}
	return c
}

func openRawSame(addr string) (locker, error) {
	// The release script as scripts.go makes it: the hand-over part,
	// then the release, each without its comment lines.
	var src string
	for _, f := range []string{"key_hand", "release"} {
		b, err := os.ReadFile("../lua/" + f + ".lua") // bench runs from bench/
		if err != nil {
			return nil, fmt.Errorf("with-lock's release script: %w", err)
		}
		src += luacode.Strip(string(b))
	}
	host, _ := os.Hostname()
	return &rawSame{rdb: newGoRedis(addr), release: redis.NewScript(src), prefix: fmt.Sprintf("%s:%d:", host, os.Getpid())}, nil
}

func (r *rawSame) lock(ctx context.Context, name string) (unlockFunc, error) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	token := r.prefix + strconv.FormatInt(time.Now().UnixMilli(), 36) + "." + hex.EncodeToString(b[:])
	key, mark := "lock:"+name, "{lock:"+name+"}:w"
	rdb := r.conn(name)
	ok, err := rdb.SetNX(ctx, key, token, lockTTL).Result()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New("raw floor: lock busy (it does not wait)")
	}
	return func(ctx context.Context) error {
		return r.release.Run(ctx, rdb, []string{key}, token, mark).Err()
	}, nil
}

func (r *rawSame) close() {
	for _, c := range r.held {
		_ = c.Close()
	}
	_ = r.rdb.Close()
}

// --- bsm/redislock ---

type bsm struct {
	rdb     *redis.Client
	c       *redislock.Client
	backoff time.Duration // 0: call Obtain again at once
}

func openRedislock(backoff time.Duration) func(string) (locker, error) {
	return func(addr string) (locker, error) {
		rdb := newGoRedis(addr)
		return &bsm{rdb: rdb, c: redislock.New(rdb), backoff: backoff}, nil
	}
}

func (b *bsm) lock(ctx context.Context, name string) (unlockFunc, error) {
	if b.backoff > 0 {
		l, err := b.c.Obtain(ctx, name, lockTTL, &redislock.Options{RetryStrategy: redislock.LinearBackoff(b.backoff)})
		if err != nil {
			return nil, err
		}
		return l.Release, nil
	}
	for {
		l, err := b.c.Obtain(ctx, name, lockTTL, nil)
		switch {
		case err == nil:
			return l.Release, nil
		case !errors.Is(err, redislock.ErrNotObtained):
			return nil, err
		case ctx.Err() != nil:
			return nil, ctx.Err()
		}
	}
}

func (b *bsm) close() { _ = b.rdb.Close() }

// --- redsync ---

type rsync struct {
	rdb *redis.Client
	rs  *redsync.Redsync
}

func openRedsync(addr string) (locker, error) {
	rdb := newGoRedis(addr)
	return &rsync{rdb: rdb, rs: redsync.New(redsyncgoredis.NewPool(rdb))}, nil
}

func (r *rsync) lock(ctx context.Context, name string) (unlockFunc, error) {
	m := r.rs.NewMutex(name, redsync.WithExpiry(lockTTL), redsync.WithTries(math.MaxInt32))
	if err := m.LockContext(ctx); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		_, err := m.UnlockContext(ctx)
		return err
	}, nil
}

func (r *rsync) close() { _ = r.rdb.Close() }

// --- rueidislock ---

type rueidis1 struct{ l rueidislock.Locker }

func openRueidislock(addr string) (locker, error) {
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption: rueidis.ClientOption{InitAddress: []string{addr}},
		KeyMajority:  1,
		KeyValidity:  lockTTL,
	})
	if err != nil {
		return nil, fmt.Errorf("rueidislock: %w", err)
	}
	return &rueidis1{l: l}, nil
}

func (r *rueidis1) lock(ctx context.Context, name string) (unlockFunc, error) {
	_, cancel, err := r.l.WithContext(ctx, name)
	if err != nil {
		return nil, err
	}
	return func(context.Context) error { cancel(); return nil }, nil
}

func (r *rueidis1) close() { r.l.Close() }
