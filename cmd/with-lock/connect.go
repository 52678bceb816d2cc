package main

import (
	"os"

	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/config"
)

// newLocker prints the configuration's warnings once and returns the lock
// client for the configured deployment (one Redis, Sentinel, Cluster or a
// quorum of masters) and a function that closes its connections. Its
// errors are bad configuration: exit 78.
func newLocker(cfg *config.Config) (*withlock.Client, func(), error) {
	log := newLogger(cfg, os.Stderr)
	for _, w := range cfg.Warnings {
		log.warn("warning", fields{}, "warning: %s", w) // -q hides them: they are not errors
	}
	clients, err := cfg.RedisClients()
	if err != nil {
		return nil, nil, err
	}
	closeAll := func() {
		for _, rdb := range clients {
			_ = rdb.Close()
		}
	}
	opts := &withlock.Options{Prefix: cfg.Prefix, History: cfg.HistorySize}
	if cfg.HistorySize == 0 {
		opts.History = -1 // --history-size 0 keeps none; the library's 0 is its default
	}
	var locker *withlock.Client
	switch {
	case cfg.Topology() == config.Quorum:
		locker, err = withlock.NewQuorum(clients, opts)
	case cfg.Slots > 1:
		locker, err = withlock.NewSemaphore(clients[0], cfg.Slots, opts)
	default:
		locker = withlock.New(clients[0], opts)
	}
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	return locker, closeAll, nil
}

// connected is an invocation with its Client: what every step of a run
// from the acquire on, and every action that reads or changes a lock,
// talks to Redis through. connect makes it, so no step holds a Client
// that is not there yet.
type connected struct {
	*runner
	locker *withlock.Client
}

// connect is the step that gives the invocation its Client (newLocker),
// and a function that closes its connections.
func (r *runner) connect() (*connected, func(), error) {
	locker, closeAll, err := newLocker(r.cfg)
	if err != nil {
		return nil, nil, err
	}
	return &connected{runner: r, locker: locker}, closeAll, nil
}
