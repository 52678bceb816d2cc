package withlock_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
)

// A daily export runs once a day across servers: OncePer skips a day that
// already succeeded, and ReleaseAndRecord releases the lock and stores the
// run, whose Window marks the day done. Its one error says which part
// failed.
func ExampleLock_ReleaseAndRecord() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: exampleRedisAddr(), MaxRetries: -1})
	defer rdb.Close()
	locker := withlock.New(rdb, nil)

	for attempt := 1; attempt <= 2; attempt++ {
		lock, err := locker.TryAcquire(ctx, "daily-export", 30*time.Second, nil)
		if err != nil {
			fmt.Println("not run:", err)
			return
		}
		span, err := lock.OncePer(ctx, withlock.Window{Every: 24 * time.Hour})
		if errors.Is(err, withlock.ErrDone) {
			fmt.Println("attempt", attempt, "skipped: today's export is done") // the lock is released
			continue
		} else if err != nil {
			fmt.Println("not run:", err)
			return
		}

		// ... run the export ...

		run := withlock.Run{ExitCode: 0, Window: &span,
			Extra: map[string]json.RawMessage{"rows": json.RawMessage("1520")}}
		err = lock.ReleaseAndRecord(context.Background(), run, 7*24*time.Hour)
		switch {
		case errors.Is(err, withlock.ErrNotReleased):
			fmt.Println(err) // Redis did not answer: the key expires by itself at its TTL
		case errors.Is(err, withlock.ErrNotRecorded):
			fmt.Println(err) // released, but the record was not stored
		}
		fmt.Println("attempt", attempt, "exported")
	}
	st, err := locker.Status(ctx, "daily-export")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("last run:", st.LastRun.Outcome, string(st.LastRun.Extra["rows"]), "rows")
	// Output:
	// attempt 1 exported
	// attempt 2 skipped: today's export is done
	// last run: ok 1520 rows
}
