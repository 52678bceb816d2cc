package main_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	withlock "github.com/with-lock/with-lock"
	"github.com/with-lock/with-lock/internal/clitest"
	"github.com/with-lock/with-lock/internal/redistest"
)

// LeastPrivilegeACL is the ACL documented in docs/production-redis.md for with-lock's
// Redis user: the commands it sends (directly or from its Lua scripts),
// its keys and its release channels, nothing else. SUBSCRIBE/UNSUBSCRIBE
// serve waiting, TIME fencing (the number is the server's clock), TYPE the
// message about a key another program uses, WAIT --min-replicas; HELLO,
// AUTH and PING are what go-redis sends on connecting. INFO (its memory
// section, with a run's SET and in --status's script) tells whether the
// server may evict a lock; SCAN lets --list find the locks;
// the last-run record is a SET of {lock:<name>}:last. RPUSH, LPOP, LREM,
// LPOS, EXISTS, SPUBLISH and SSUBSCRIBE keep the fair line; MGET reads a
// semaphore's slots. LPUSH and LTRIM keep a name's history in the release's
// script, LRANGE reads it for --history, --status, --check's duration
// judgement and the metrics' duration gauges. HSET writes a name into the index
// of the prefix's names with each acquisition, HKEYS reads it for --list,
// HGET and HDEL prune it (in a script).
const LeastPrivilegeACL = "resetkeys ~lock:* ~{lock:* resetchannels &lock:* &{lock:* -@all " +
	"+set +get +pttl +eval +pexpire +del +publish +subscribe +unsubscribe +time +type +wait +hello +auth +ping " +
	"+info +scan +rpush +lpop +lrem +lpos +exists +spublish +ssubscribe +mget +lpush +ltrim +lrange +hset +hkeys +hget +hdel"

// The original contract's checks (contract_test.go) pass for a Redis ACL
// user that has exactly the documented permissions.
func TestLeastPrivilegeACL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	admin := srv.Client()
	setUser := func(name, rules string) {
		args := []any{"ACL", "SETUSER", name, "reset", "on", ">pw-" + name}
		for _, r := range strings.Fields(rules) {
			args = append(args, r)
		}
		if err := admin.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("ACL SETUSER %s: %v", name, err)
		}
	}
	// The production guide documents this exact list: a permission added here must be
	// added there too.
	if guide, err := os.ReadFile("../../docs/production-redis.md"); err != nil || !strings.Contains(string(guide), ">CHANGE-ME "+LeastPrivilegeACL+"\n") {
		t.Errorf("docs/production-redis.md does not show the tested ACL %q (%v)", LeastPrivilegeACL, err)
	}
	setUser("locker", LeastPrivilegeACL)
	url := fmt.Sprintf("redis://locker@%s/0", srv.Addr())
	env := []string{"WITH_LOCK_PASSWORD=pw-locker"}
	run := func(t *testing.T, args ...string) clitest.Result {
		t.Helper()
		return clitest.Run(t, env, append([]string{"--redis", url}, args...)...)
	}

	t.Run("the binary exists and is executable", func(t *testing.T) {
		st, err := os.Stat(clitest.Binary(t))
		if err != nil || st.Mode().Perm()&0o111 == 0 {
			t.Fatalf("stat %s: %v, mode %v", clitest.Binary(t), err, st.Mode())
		}
	})

	t.Run("the command runs and the lock is gone after", func(t *testing.T) {
		cmd, ran := marker(t)
		res := run(t, append([]string{"acl-2"}, cmd...)...)
		if res.Code != 0 || !ran() || res.Stderr != "" {
			t.Fatalf("exit %d (ran %v), stderr %q", res.Code, ran(), res.Stderr)
		}
		if n := admin.Exists(ctx, "lock:acl-2").Val(); n != 0 {
			t.Fatal("lock:acl-2 is still there")
		}
	})

	t.Run("the command's exit code passes through", func(t *testing.T) {
		if res := run(t, "acl-3", "sh", "-c", "exit 7"); res.Code != 7 {
			t.Fatalf("exit %d, stderr %q; want 7", res.Code, res.Stderr)
		}
	})

	t.Run("during the run the key exists with TTL up to 30s and a unique token", func(t *testing.T) {
		var tokens []string
		for range 2 {
			j := startJob(t, env, 3, "--redis", url, "acl-4")
			token := j.token
			if v := admin.Get(ctx, "lock:acl-4").Val(); v != token || token == "" {
				t.Fatalf("key holds %q, the command's token is %q", v, token)
			}
			if ttl := admin.TTL(ctx, "lock:acl-4").Val(); ttl <= 0 || ttl > 30*time.Second {
				t.Fatalf("TTL %v, want in (0, 30s]", ttl)
			}
			tokens = append(tokens, token)
			if r := j.finish(); r.Code != 3 {
				t.Fatalf("exit %d, stderr %q", r.Code, r.Stderr)
			}
		}
		if tokens[0] == tokens[1] {
			t.Fatalf("two runs had the same token %q", tokens[0])
		}
	})

	t.Run("a busy lock is refused at once without running the command", func(t *testing.T) {
		admin.Set(ctx, "lock:acl-5", "elsewhere:1:abc", time.Minute)
		cmd, ran := marker(t)
		res := run(t, append([]string{"acl-5"}, cmd...)...)
		if res.Code != 75 || ran() || !strings.Contains(res.Stderr, "elsewhere:1") {
			t.Fatalf("exit %d (ran %v), stderr %q; want 75 naming the holder", res.Code, ran(), res.Stderr)
		}
		if res.Duration > 10*time.Second {
			t.Fatalf("refusal took %s", res.Duration)
		}
	})

	t.Run("a lock taken over during the run survives our release", func(t *testing.T) {
		j := startJob(t, env, 3, "--redis", url, "acl-6")
		admin.Set(ctx, "lock:acl-6", "thief:2:def", time.Minute)
		r := j.finish()
		if r.Code != 3 || !strings.Contains(r.Stderr, "no longer ours") {
			t.Fatalf("exit %d, stderr %q", r.Code, r.Stderr)
		}
		if v := admin.Get(ctx, "lock:acl-6").Val(); v != "thief:2:def" {
			t.Fatalf("the new owner's key became %q", v)
		}
	})

	t.Run("acquire is one SET NX EX and release one EVAL, on the wire", func(t *testing.T) {
		mon := srv.Monitor()
		if res := run(t, "acl-7", "true"); res.Code != 0 {
			t.Fatalf("exit %d, stderr %q", res.Code, res.Stderr)
		}
		var got []string // what the client sent on the key, not what scripts ran
		for _, c := range mon.Commands() {
			// The HSET ahead of the SET writes the name into the index of
			// names (contract_test.go): the key as a field, not as a key.
			if c.Client != "lua" && slices.Contains(c.Args, "lock:acl-7") && c.Args[0] != "hset" {
				got = append(got, strings.ToLower(c.String()))
			}
		}
		if len(got) == 0 {
			t.Fatal("MONITOR saw no command on lock:acl-7")
		}
		first, last := got[0], got[len(got)-1]
		if !strings.Contains(first, `"set" "lock:acl-7"`) || !strings.Contains(first, `"nx"`) ||
			!strings.Contains(first, `"ex" "30"`) {
			t.Fatalf("first command on the key: %s", first)
		}
		var evals int
		for _, l := range got {
			if strings.Contains(l, `"eval"`) {
				evals++
			}
		}
		if !strings.Contains(last, `"eval"`) || evals != 1 {
			t.Fatalf("commands on the key:\n%s", strings.Join(got, "\n"))
		}
	})

	t.Run("waiting, fencing and min-replicas are allowed too", func(t *testing.T) {
		// Waiting: busy for a moment, then free.
		admin.Set(ctx, "lock:acl-wait", "elsewhere:1:abc", 300*time.Millisecond)
		if res := run(t, "-w", "20s", "acl-wait", "true"); res.Code != 0 {
			t.Fatalf("-w: exit %d, stderr %q", res.Code, res.Stderr)
		}
		// WAIT is permitted: with no replica it reports 0 acknowledgements
		// (69), where a missing permission would be NOPERM (77).
		res := run(t, "--redis-timeout", "1s", "--min-replicas", "1", "acl-replicas", "true")
		if res.Code != 69 || !strings.Contains(res.Stderr, "0 of the 1 replicas") {
			t.Fatalf("--min-replicas: exit %d, stderr %q; want 69", res.Code, res.Stderr)
		}
		// Fencing (TIME, then SET of {lock:name}:fence) through the library.
		c := withlock.New(srv.ClientWith(&redis.Options{Username: "locker", Password: "pw-locker"}), nil)
		var last int64
		for range 2 {
			l, err := c.TryAcquire(ctx, "acl-fence", 10*time.Second, &withlock.LockOptions{Fence: true})
			if err != nil || l.Fence() <= last {
				t.Fatalf("fenced acquire: %v, fence %v; want one above %d", err, l, last)
			}
			last = l.Fence()
			if err := l.Extend(ctx, 10*time.Second); err != nil {
				t.Fatal(err)
			}
			if _, err := l.TTL(ctx); err != nil {
				t.Fatal(err)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
		// Keys another program uses are described (TYPE), not refused.
		admin.LPush(ctx, "lock:acl-list", "a")
		admin.Set(ctx, "{lock:acl-fz}:fence", "abc", 0)
		for name, want := range map[string]string{"acl-list": "holds a list", "acl-fz": `holds "abc"`} {
			_, err := c.TryAcquire(ctx, name, 10*time.Second, &withlock.LockOptions{Fence: true})
			if !errors.Is(err, withlock.ErrWrongType) || !strings.Contains(err.Error(), want) {
				t.Errorf("fenced acquire of %s: %v; want ErrWrongType saying %q", name, err, want)
			}
		}
	})

	t.Run("--list, --break, --status, --history and the last-run record are allowed too", func(t *testing.T) {
		if res := run(t, "acl-rec", "true"); res.Code != 0 || res.Stderr != "" {
			t.Fatalf("run: exit %d, stderr %q", res.Code, res.Stderr)
		}
		if res := run(t, "acl-rec", "sh", "-c", "exit 5"); res.Code != 5 || res.Stderr != "" {
			t.Fatalf("run: exit %d, stderr %q", res.Code, res.Stderr)
		}
		offset := midWindow(time.Hour)
		for i := range 2 { // the second finds the window done
			cmd, ran := marker(t)
			if res := run(t, append([]string{"--once-per", "1h", "--once-per-offset", offset, "acl-once"}, cmd...)...); res.Code != 0 || res.Stderr != "" || ran() != (i == 0) {
				t.Fatalf("--once-per run %d: exit %d (ran %v), stderr %q", i, res.Code, ran(), res.Stderr)
			}
		}
		if res := run(t, "--history", "acl-rec"); res.Code != 0 || !hasLine(res.Stdout, "failed", "exit 5") || !hasLine(res.Stdout, "ok", "exit 0") {
			t.Fatalf("--history: exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
		}
		if n := admin.Exists(ctx, "{lock:acl-rec}:last").Val(); n != 1 {
			t.Fatal("no last-run record")
		}
		if res := run(t, "--status", "acl-rec"); res.Code != 1 || !strings.Contains(res.Stdout, "exit 5") || !strings.Contains(res.Stdout, "last success: ") {
			t.Fatalf("--status: exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
		}
		if res := run(t, "--list", "--all"); res.Code != 0 || !hasLine(res.Stdout, "acl-rec", "exit 5") {
			t.Fatalf("--list (the index): exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
		}
		// Another program's lock is not in the index; a scan finds it.
		admin.Set(ctx, "lock:acl-list", "elsewhere:1:abc", time.Minute)
		if res := run(t, "--list", "--all", "--scan"); res.Code != 0 || !hasLine(res.Stdout, "acl-list", "elsewhere:1") ||
			!hasLine(res.Stdout, "acl-rec", "exit 5") {
			t.Fatalf("--list --scan: exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
		}
		if res := run(t, "--break", "acl-list"); res.Code != 0 || !strings.Contains(res.Stdout, "elsewhere:1") {
			t.Fatalf("--break: exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
		}
	})

	t.Run("--slots: holders, a waiter in line, --status and --break are allowed too", func(t *testing.T) {
		a := startJob(t, env, 0, "--redis", url, "--slots", "2", "acl-slots")
		b := startJob(t, env, 0, "--redis", url, "--slots", "2", "acl-slots")
		// The third waits in the line until a slot is handed to it.
		out := filepath.Join(t.TempDir(), "slot")
		waiter := clitest.Start(t, env, "--redis", url, "--slots", "2", "-w", "20s", "acl-slots",
			"sh", "-c", `printf %s "$WITH_LOCK_SLOT" > "$1"`, "sh", out)
		clitest.Eventually(t, 10*time.Second, "the waiter queued", func() bool {
			return admin.LLen(ctx, "{lock:acl-slots}:q").Val() == 1
		})
		if res := run(t, "--status", "acl-slots"); res.Code != 0 || !strings.Contains(res.Stdout, "2 of 2 slots held") {
			t.Fatalf("--status: exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
		}
		if r := a.finish(); r.Code != 0 || r.Stderr != "" {
			t.Fatalf("first holder: exit %d, stderr %q", r.Code, r.Stderr)
		}
		if r := waiter.Wait(clitest.RunTimeout); r.Code != 0 || r.Stderr != "" || readFile(t, out) != "1" {
			t.Fatalf("waiter: exit %d, stderr %q; want it to run in the freed slot 1", r.Code, r.Stderr)
		}
		if res := run(t, "--break", "acl-slots"); res.Code != 0 || !strings.Contains(res.Stdout, "slot 2 by ") {
			t.Fatalf("--break: exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
		}
		b.finish()
	})

	t.Run("a user with less is refused", func(t *testing.T) {
		for _, tc := range []struct {
			name, rules string
			code        int
			flags       []string
		}{
			{"no SET", strings.Replace(LeastPrivilegeACL, "+set ", "", 1), 77, nil},
			{"other keys", strings.Replace(LeastPrivilegeACL, "~lock:* ~{lock:*", "~other:*", 1), 77, nil},
			{"no EVAL", strings.Replace(LeastPrivilegeACL, "+eval ", "", 1), 0, nil},
			// A command refused inside a script is a permission error
			// too, though Redis does not reply NOPERM.
			{"no MGET for --slots", strings.Replace(LeastPrivilegeACL, " +mget", "", 1), 77, []string{"--slots", "2"}},
		} {
			user := "weak" + strconv.Itoa(tc.code) + strings.ReplaceAll(tc.name, " ", "")
			setUser(user, tc.rules)
			u := fmt.Sprintf("redis://%s@%s/0", user, srv.Addr())
			args := append(append([]string{"--redis", u}, tc.flags...), "acl-weak", "true")
			res := clitest.Run(t, []string{"WITH_LOCK_PASSWORD=pw-" + user}, args...)
			if res.Code != tc.code || res.Stderr == "" {
				t.Errorf("%s: exit %d, stderr %q; want %d and a complaint", tc.name, res.Code, res.Stderr, tc.code)
			}
			if tc.code == 77 && strings.Count(res.Stderr, "\n") != 1 {
				t.Errorf("%s: stderr %q; want one line", tc.name, res.Stderr)
			}
			admin.Del(ctx, "lock:acl-weak")
		}
	})
}
