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

// TestRecheckOnAPromotedMaster: a server given to KeepAliveOptions.Recheck
// is read at once. One that holds the lock's token keeps it held; one that
// does not answer changes nothing while it is asked again; one that lacks
// the key — a promoted replica that had not received it — loses the lock
// there and then, long before the next renewal, naming the server.
func TestRecheckOnAPromotedMaster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	locker, rdb, _ := setup(t)
	l := mustAcquire(t, locker, "recheck", time.Minute) // the first renewal is 20s away
	servers := make(chan redis.UniversalClient)
	ka := l.KeepAlive(ctx, &withlock.KeepAliveOptions{Recheck: servers})
	defer ka.Stop()

	down := "127.0.0.1:" + strconv.Itoa(redistest.FreePort(t))
	unreachable := redis.NewClient(&redis.Options{Addr: down, MaxRetries: -1})
	defer unreachable.Close()
	empty := redistest.Start(t)
	for _, tc := range []struct {
		name string
		rdb  redis.UniversalClient
		lost bool
	}{
		{"the lock's own server holds it", rdb, false},
		{"a server that does not answer", unreachable, false},
		{"a server without the key", empty.Client(), true},
	} {
		sent := time.Now()
		servers <- tc.rdb
		select {
		case <-ka.Lost():
			if !tc.lost {
				t.Fatalf("%s: lost (%v)", tc.name, ka.Err())
			}
		case <-time.After(time.Second):
			if tc.lost {
				t.Fatalf("%s: not lost a second later", tc.name)
			}
		}
		if tc.lost {
			var lerr *withlock.LostError
			if !errors.Is(ka.Err(), withlock.ErrLockNotHeld) || !errors.As(ka.Err(), &lerr) || lerr.Promoted != empty.Addr() {
				t.Fatalf("%s: Err %v; want ErrLockNotHeld naming %s", tc.name, ka.Err(), empty.Addr())
			}
			if context.Cause(ka.Context()) != ka.Err() {
				t.Fatalf("%s: the context was not cancelled with the loss", tc.name)
			}
			t.Logf("lost %s after the promoted master was given", time.Since(sent).Round(time.Millisecond))
		}
	}
}
