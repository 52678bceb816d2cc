package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/config"
)

// Under Sentinel, a held lock is read on the new master the moment the
// sentinels promote one, not at the next renewal: replication is
// asynchronous, so a replica promoted right after the lock was taken may
// lack its key, and another host can then take the lock at once, while
// this job would run on until its next renewal — up to a third of the TTL.
// The sentinels announce a failover on their pub/sub: +selected-slave when
// the leader has chosen the replica it promotes (which can receive nothing
// more from the master that failed: a key it lacks then is lost),
// +promoted-slave when it first names the new master, +switch-master once
// the failover ends. A subscription to each configured sentinel, made after
// the command started, hears each from the first sentinel that tells it;
// the lock is read on the chosen replica at the first, before any client
// is sent to it, and the job stopped if the key is not there.

// failoverEvents are the sentinels' announcements of a new master.
var failoverEvents = []string{"+selected-slave", "+promoted-slave", "+switch-master"}

// watchFailover starts watching the sentinels for a failover of the lock's
// master, and returns the channel on which it brings a client of each new
// master they name (KeepAliveOptions.Recheck), and the function that stops
// watching and closes those clients, to be called once the KeepAlive
// stopped. Without Sentinel, or with --on-lost reacquire (whose next
// renewal takes a lock back), it does nothing.
func (r *connected) watchFailover() (<-chan redis.UniversalClient, func()) {
	if r.cfg.Topology() != config.Sentinel || r.cfg.OnLost == config.OnLostReacquire {
		return nil, func() {}
	}
	masters := make(chan redis.UniversalClient)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.watchSentinels(ctx, masters)
	}()
	return masters, func() { cancel(); <-done }
}

// watchSentinels subscribes to each sentinel and brings a client of every
// new master they name on masters, until ctx is done; then it closes them.
func (r *connected) watchSentinels(ctx context.Context, masters chan<- redis.UniversalClient) {
	sentinels, err := r.cfg.SentinelClients()
	if err != nil {
		return // the lock's own client was built from the same settings
	}
	promoted := make(chan string, len(sentinels)*len(failoverEvents))
	for _, sc := range sentinels {
		defer sc.Close()
		go func() {
			ps := sc.Subscribe(ctx, failoverEvents...)
			defer ps.Close()
			for {
				select {
				case <-ctx.Done():
					return
				case msg, ok := <-ps.Channel():
					if !ok {
						return
					}
					if addr := newMaster(msg, r.cfg.SentinelMaster); addr != "" {
						select {
						case promoted <- addr:
						case <-ctx.Done():
							return
						}
					}
				}
			}
		}()
	}
	seen := map[string]bool{}
	for {
		var addr string
		select {
		case <-ctx.Done():
			return
		case addr = <-promoted:
		}
		if seen[addr] {
			continue // told by another sentinel, or by both events
		}
		seen[addr] = true
		rdb, err := r.cfg.MasterClient(addr)
		if err != nil {
			continue
		}
		defer rdb.Close()
		r.log.info("failover", fields{}, "the sentinels promoted %s; reading %s there", addr, r.locker.Key(r.cfg.Name))
		select {
		case masters <- rdb:
		case <-ctx.Done():
			return
		}
	}
}

// newMaster is the address of the master that msg, a sentinel's event,
// says was promoted for the master named name, or "":
//
//	+selected-slave  slave <ip>:<port> <ip> <port> @ <name> <old-ip> <old-port>
//	+promoted-slave  (the same)
//	+switch-master   <name> <old-ip> <old-port> <new-ip> <new-port>
func newMaster(msg *redis.Message, name string) string {
	f := strings.Fields(msg.Payload)
	switch {
	case (msg.Channel == "+selected-slave" || msg.Channel == "+promoted-slave") && len(f) >= 6 && f[0] == "slave" && f[5] == name:
		return net.JoinHostPort(f[2], f[3])
	case msg.Channel == "+switch-master" && len(f) == 5 && f[0] == name:
		return net.JoinHostPort(f[3], f[4])
	}
	return ""
}

// acquireWaiting is the acquisition of a run with -w (ctx ends with it).
// Under Sentinel, a master that cannot be reached is no reason to give up
// a wait: the old master refuses connections while the sentinels fail it
// over, which they finish in seconds, so the acquisition is tried again,
// on the master the sentinels then name, until -w runs out.
func (r *connected) acquireWaiting(ctx context.Context) (*withlock.Lock, error) {
	for said := false; ; said = true {
		lock, err := r.locker.Acquire(ctx, r.cfg.Name, r.cfg.TTL, r.lockOptions())
		if err == nil || r.cfg.Topology() != config.Sentinel || ctx.Err() != nil ||
			redisExit(err) != exitUnavailable || errors.Is(err, withlock.ErrNotReplicated) || errors.Is(err, withlock.ErrNotObtained) {
			return lock, err
		}
		if !said {
			r.log.info("waiting", fields{}, "%s; asking the sentinels for the master again (a failover?) until -w runs out", r.inUserWords(err))
		}
		t := time.NewTimer(failoverRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
	}
}

// failoverRetry is the pause between tries of a waiting acquisition whose
// master could not be reached.
const failoverRetry = 100 * time.Millisecond

// hint is exit.go's hint for this run. Under Sentinel the master's address
// came from the sentinels, not from --redis: a master that does not answer
// is named as their answer for --sentinel-master, and sentinels that do
// not answer as the configured ones.
func (r *runner) hint(code int, err error) string {
	h := hint(code, err)
	if h != askReachable || r.cfg.Topology() != config.Sentinel {
		return h
	}
	var op *net.OpError
	if !strings.Contains(err.Error(), "all sentinels") && errors.As(err, &op) && op.Addr != nil {
		return fmt.Sprintf(" (the sentinels name %s as the master of %q: is it up and reachable, or are they failing it over?)",
			op.Addr, r.cfg.SentinelMaster)
	}
	return fmt.Sprintf(" (are the sentinels %s up and reachable, and do they know a master %q?)",
		strings.Join(r.cfg.Sentinels, ", "), r.cfg.SentinelMaster)
}
