package main_test

import (
	"context"
	"strings"
	"testing"
)

// The busy line says what keeps the lock: a holder that finished and only
// --min-hold keeping the key (as --status says), a key with no expiry that
// will never free by itself, or a holder and since when; never "for 0s",
// "expires in 0s", "(0s ago)" or "lock lock:x".
func TestBusyLineSaysWhatKeepsTheLock(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		lock  string
		take  func(t *testing.T) (holder string, done func())
		wants func(holder string) []string
	}{
		{
			name: "min-hold after the run finished",
			lock: "kept",
			take: func(t *testing.T) (string, func()) {
				if r := e.run("--min-hold", "10m", "kept", "true"); r.Code != 0 {
					t.Fatalf("the first run: exit %d, stderr %q", r.Code, r.Stderr)
				}
				return holderOf(e.get("lock:kept")), func() {}
			},
			wants: func(holder string) []string {
				return []string{"lock:kept is kept by --min-hold until ",
					"from now): the last run, by " + holder + ", has finished; command not run"}
			},
		},
		{
			name: "a foreign key with no expiry",
			lock: "forever",
			take: func(t *testing.T) (string, func()) {
				if err := e.rdb.Set(ctx, "lock:forever", foreign, 0).Err(); err != nil {
					t.Fatal(err)
				}
				return "otherhost:4242", func() {}
			},
			wants: func(holder string) []string {
				return []string{"lock:forever is held by " + holder + " with no expiry: it will never free by itself"}
			},
		},
		{
			name: "a value with-lock did not write, with no expiry",
			lock: "other",
			take: func(t *testing.T) (string, func()) {
				if err := e.rdb.Set(ctx, "lock:other", "x", 0).Err(); err != nil {
					t.Fatal(err)
				}
				return "", func() {}
			},
			wants: func(string) []string {
				return []string{"lock:other is held by an unknown owner (a value with-lock did not write) with no expiry"}
			},
		},
		{
			name: "a running holder",
			lock: "running",
			take: func(t *testing.T) (string, func()) {
				j := e.startJob(0, "running")
				return holderOf(j.token), func() { j.finish() }
			},
			wants: func(holder string) []string {
				return []string{"lock:running is held by " + holder + " since ", ", expires in "}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			holder, done := tc.take(t)
			defer done()
			r := e.run(tc.lock, "true")
			if r.Code != 75 {
				t.Errorf("exit %d, want 75", r.Code)
			}
			for _, w := range tc.wants(holder) {
				oneLine(t, r, w)
			}
			for _, bad := range []string{"lock lock:", " for 0s", "expires in 0s", "(0s ago)"} {
				if strings.Contains(r.Stderr, bad) {
					t.Errorf("stderr %q says %q", r.Stderr, bad)
				}
			}
		})
	}
}

// A wait that runs out on a lock kept by --min-hold after its run finished
// says so, not that the finished run still holds it.
func TestGaveUpWaitingSaysMinHoldKeepsTheLock(t *testing.T) {
	e := setup(t)
	if r := e.run("--min-hold", "10m", "kept", "true"); r.Code != 0 {
		t.Fatalf("the first run: exit %d, stderr %q", r.Code, r.Stderr)
	}
	holder := holderOf(e.get("lock:kept"))
	r := e.run("-w", "300ms", "kept", "true")
	if r.Code != 75 {
		t.Errorf("exit %d, want 75", r.Code)
	}
	oneLine(t, r, "gave up waiting for lock:kept after ")
	oneLine(t, r, ": the last run, by "+holder+", has finished and --min-hold keeps the lock until ")
}
