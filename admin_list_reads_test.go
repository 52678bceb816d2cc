package withlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/redistest"
)

// listKeysOf builds the keys List reads of a lock in one string; they are
// the keys the lock's writers use, whatever the form of its key: with a
// hash tag, without, with a '}' and no tag (numbered side keys, no pause).
func TestListReadsTheKeysTheWritersUse(t *testing.T) {
	for _, key := range []string{"lock:a", "lock:{tag}a", "{lock:}x", "lock:a}b", "lock:{}a", "lock:{}a}", "lock:é-ü", "lock:"} {
		t.Run(key, func(t *testing.T) {
			want := []string{"earlier", key, fenceKey(key), recordKey(key), successKey(key), windowKey(key), leftKey(key)}
			if pk, ok := pauseKey(key); ok {
				want = append(want, pk)
			}
			if got := listKeysOf([]string{"earlier"}, key); !slices.Equal(got, want) {
				t.Errorf("listKeysOf(%q) = %q, want %q", key, got, want)
			}
		})
	}
}

// List reads more locks than one of its reads holds (listChunk) in one
// round trip, and gives each lock its own keys' values: its holder's time
// left, its fencing number, its last run, whichever read it fell in.
func TestListReadsMoreLocksThanOneReadHolds(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	c := New(srv.Client(), nil)
	const n = 2*listChunk + 3
	ttl := func(i int) time.Duration { return time.Duration(100+i) * time.Second }
	for i := range n {
		name := fmt.Sprintf("job-%04d", i)
		if i%10 == 0 { // free, with a last run that names it
			l, err := c.TryAcquire(ctx, name, time.Minute, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := errors.Join(l.ReleaseAndRecord(ctx, Run{ExitCode: i % 256}, time.Hour)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if _, err := c.TryAcquire(ctx, name, ttl(i), &LockOptions{Fence: i%3 == 0}); err != nil {
			t.Fatal(err)
		}
	}
	before := srv.Client().Info(ctx, "commandstats").Val()
	list, err := c.List(ctx, &ListOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != n {
		t.Fatalf("List has %d locks, want %d", len(list), n)
	}
	for i, st := range list {
		switch {
		case st.Key != fmt.Sprintf("lock:job-%04d", i):
			t.Fatalf("lock %d is %s", i, st.Key)
		case i%10 == 0 && (st.Held || st.LastRun == nil || st.LastRun.ExitCode != i%256):
			t.Errorf("%s: held %v, last run %+v; want free with exit %d", st.Key, st.Held, st.LastRun, i%256)
		case i%10 != 0 && (!st.Held || st.Holder.TTL > ttl(i) || st.Holder.TTL < ttl(i)-30*time.Second || st.LastRun != nil):
			t.Errorf("%s: held %v for %v more, last run %+v; want held for about %v, no last run", st.Key, st.Held, st.Holder.TTL, st.LastRun, ttl(i))
		case i%10 != 0 && (st.Fence > 0) != (i%3 == 0):
			t.Errorf("%s: fence %d, want one: %v", st.Key, st.Fence, i%3 == 0)
		}
	}
	// One MGET per listChunk locks, not one per lock.
	after := srv.Client().Info(ctx, "commandstats").Val()
	if got := calls(after, "mget") - calls(before, "mget"); got != (n+listChunk-1)/listChunk {
		t.Errorf("List sent %d MGETs for %d locks, want %d", got, n, (n+listChunk-1)/listChunk)
	}
}

// calls is a command's number of calls in INFO commandstats's text.
func calls(info, command string) int {
	_, rest, ok := strings.Cut(info, "cmdstat_"+command+":calls=")
	if !ok {
		return 0
	}
	n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
	return n
}
