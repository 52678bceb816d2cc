package withlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/redistest"
)

// A long-lived Client sends the release script whole once, then by its
// digest; when the server has forgotten it (SCRIPT FLUSH, a restart, a
// failover) the release still works, sending it whole again.
func TestReleaseSendsScriptDigestAfterFirstRelease(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	c := waitClient(t, srv)
	ctx := context.Background()
	release := func(what string) map[string]int {
		t.Helper()
		l := mustAcquire(t, c, "job", time.Minute)
		resetStats(t, rdb)
		if err := l.Release(ctx); err != nil {
			t.Fatalf("%s Release: %v", what, err)
		}
		calls := commandCallsExceptSetup(t, rdb)
		if n, err := rdb.Exists(ctx, l.Key()).Result(); err != nil || n != 0 {
			t.Fatalf("after the %s Release the key exists (%d, %v)", what, n, err)
		}
		return calls
	}

	if calls := release("first"); calls["eval"] != 1 || calls["evalsha"] != 0 {
		t.Errorf("first Release sent %v, want one eval and no evalsha", calls)
	}
	if calls := release("second"); calls["evalsha"] != 1 || calls["eval"] != 0 {
		t.Errorf("second Release sent %v, want one evalsha and no eval", calls)
	}
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatalf("SCRIPT FLUSH: %v", err)
	}
	if calls := release("after SCRIPT FLUSH"); calls["evalsha"] != 1 || calls["eval"] != 1 {
		t.Errorf("Release after SCRIPT FLUSH sent %v, want an evalsha answered NOSCRIPT, then one eval", calls)
	}
}

// A user whose ACL refuses EVALSHA still releases: after one refused
// EVALSHA the Client sends the script whole for good.
func TestReleaseWithoutEvalshaPermissionSendsScriptWhole(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	if err := rdb.Do(ctx, "ACL", "SETUSER", "noshas", "reset", "on", ">pw", "~*", "&*", "+@all", "-evalsha").Err(); err != nil {
		t.Fatalf("ACL SETUSER: %v", err)
	}
	c := withlock.New(srv.ClientWith(&redis.Options{Username: "noshas", Password: "pw"}), nil)
	// A refused EVALSHA is not counted in its calls: each release shows
	// one EVAL.
	for i := range 3 {
		l := mustAcquire(t, c, "job", time.Minute)
		resetStats(t, rdb)
		if err := l.Release(ctx); err != nil {
			t.Fatalf("Release %d: %v", i+1, err)
		}
		calls := commandCallsExceptSetup(t, rdb)
		if calls["eval"] != 1 || calls["evalsha"] != 0 {
			t.Errorf("Release %d ran %v, want one eval", i+1, calls)
		}
	}
}
