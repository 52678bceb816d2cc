package main

import "fmt"

// A Redis that may evict a held lock (any maxmemory-policy but noeviction,
// with a maxmemory set): said on every run (a warning, hidden by -q), by
// --status and by --check (WARNING). The library finds it out
// (Client.EvictionPolicy, Status.EvictionPolicy); these are its words.

// evictionWords says what it means that the server keeping key has the
// evicting maxmemory-policy policy, and what to do.
func evictionWords(key, policy string) string {
	return fmt.Sprintf("Redis may evict %s under memory pressure (maxmemory-policy %s), "+
		"and a second run could then start beside the first: set maxmemory-policy noeviction", key, policy)
}

// warnEviction says, after the run's acquisition, when its first
// acquisition found the server may evict the lock.
func (r *connected) warnEviction() {
	if policy := r.locker.EvictionPolicy(); policy != "" {
		r.log.warn("warning", fields{}, "warning: %s", evictionWords(r.locker.Key(r.cfg.Name), policy))
	}
}
