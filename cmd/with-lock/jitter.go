package main

import (
	"math/rand/v2"
	"syscall"
	"time"
)

// jitter waits, with --jitter, a random time up to it before the run's
// first try, as systemd's RandomizedDelaySec delays a timer: a fleet whose
// cron fires in the same second then reaches Redis spread over that time,
// instead of every host opening its connection (and TLS handshake) and
// sending its SET at once. Nothing has been sent to Redis yet; a signal
// meanwhile ends the run with 128+N, the command not run. It returns the
// exit code and false when the run is to end.
func (r *connected) jitter() (int, bool) {
	if r.cfg.Jitter <= 0 {
		return 0, true
	}
	d := rand.N(r.cfg.Jitter)
	r.log.info("jitter", fields{DurationMs: ms(d)}, "waiting %s before the first try (--jitter %s)", round(d), short(r.cfg.Jitter))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return 0, true
	case sig := <-r.sigs:
		code := 128 + int(sig.(syscall.Signal))
		r.log.error("interrupted", fields{Signal: signalName(sig), Code: &code}, "%v during --jitter, before trying %s; command not run", sig, r.locker.Key(r.cfg.Name))
		return code, false
	}
}
