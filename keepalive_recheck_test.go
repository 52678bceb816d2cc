package withlock_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/redistest"
)

// TestRecheckOnAPromotedMaster: Recheck reads the lock on the server it is
// given, at once. A server that holds the lock's token keeps it held; one
// that does not answer changes nothing (the caller tries again); one that
// lacks the key — a promoted replica that had not received it — loses the
// lock there and then, with the server named in the LostError.
func TestRecheckOnAPromotedMaster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	locker, rdb, _ := setup(t)
	l := mustAcquire(t, locker, "recheck", time.Minute)
	ka := l.KeepAlive(ctx, nil)
	defer ka.Stop()

	down := "127.0.0.1:" + strconv.Itoa(redistest.FreePort(t))
	unreachable := redis.NewClient(&redis.Options{Addr: down, MaxRetries: -1})
	defer unreachable.Close()
	empty := redistest.Start(t)
	for _, tc := range []struct {
		name string
		rdb  redis.UniversalClient
		addr string
		lost bool
	}{
		{"the lock's own server holds it", rdb, "a", false},
		{"a server that does not answer", unreachable, down, false},
		{"a server without the key", empty.Client(), empty.Addr(), true},
	} {
		err := ka.Recheck(ctx, tc.rdb, tc.addr)
		select {
		case <-ka.Lost():
			if !tc.lost {
				t.Fatalf("%s: lost (%v)", tc.name, ka.Err())
			}
		default:
			if tc.lost {
				t.Fatalf("%s: not lost, Recheck returned %v", tc.name, err)
			}
		}
		if tc.lost {
			var lerr *withlock.LostError
			if !errors.Is(err, withlock.ErrLockNotHeld) || !errors.As(ka.Err(), &lerr) || lerr.Promoted != tc.addr {
				t.Fatalf("%s: Recheck returned %v, Err %v; want ErrLockNotHeld naming %s", tc.name, err, ka.Err(), tc.addr)
			}
			if context.Cause(ka.Context()) != ka.Err() {
				t.Fatalf("%s: the context was not cancelled with the loss", tc.name)
			}
		}
		if (err != nil) != (tc.name != "the lock's own server holds it") {
			t.Fatalf("%s: Recheck returned %v", tc.name, err)
		}
	}
}
