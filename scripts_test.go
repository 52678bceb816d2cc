package withlock

import (
	"context"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/keys"
	"github.com/with-lock/with-lock/internal/redistest"
)

// Every script is read on first use (script): this reads them all, so
// that a script missing from lua/ fails here rather than in a run, and
// every file in lua/ is read by one of them.
func TestEveryScriptIsEmbedded(t *testing.T) {
	t.Parallel()
	scripts := everyScript()
	for name, script := range scripts {
		if s := script(); !strings.Contains(s, "redis.call") && !strings.Contains(s, "redis.pcall") {
			t.Errorf("lua/%s.lua: %q is not a script that calls Redis", name, s)
		}
	}
	for _, finish := range []func() string{finishScript, slotsFinishScript} {
		if !strings.Contains(finish(), scripts["record"]()) {
			t.Error("a finish script does not carry the record's writes")
		}
	}
	files, err := fs.Glob(luaFiles, "lua/*.lua")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if scripts[strings.TrimSuffix(strings.TrimPrefix(f, "lua/"), ".lua")] == nil {
			t.Errorf("%s is embedded but no script variable reads it", f)
		}
	}
}

// everyScript is every script variable by the name of its file in lua/.
func everyScript() map[string]func() string {
	return map[string]func() string{
		"release": releaseScript, "extend": extendScript, "pttl": pttlScript,
		"acquire_fenced": acquireFencedScript, "claim": claimScript, "line_check": lineCheckScript,
		"slots_acquire": slotsAcquireScript, "slots_release": slotsReleaseScript,
		"slots_extend": slotsExtendScript, "slots_line_check": slotsLineCheckScript,
		"left": leftScript, "break": breakScript, "record": script(recordPart),
		"extend_index": extendIndexScript, "unindex": unindexScript, "status": statusScript,
		"index_seen": indexSeenScript, "unindex_seen": unindexSeenScript,
		"window": windowScript, "pause": pauseScript, "resume": resumeScript, "replace": replaceScript,
		"replace_confirm": replaceConfirmScript, "slots_hand": script(slotsHand), "key_hand": script(keyHand),
		"finish": finishScript, "slots_finish": slotsFinishScript,
	}
}

// TestScriptsReadExactlyThroughEveryMonitor: the wire tests read commands
// through redistest's MONITOR parser, and the server under test decides
// how MONITOR writes an argument (Valkey 8.1 leaves quotes and backslashes
// unescaped). Every script as sent, composed ones included, comes back
// from it byte for byte, so the wire checks hold on every server of make
// test-servers.
func TestScriptsReadExactlyThroughEveryMonitor(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client()
	sent := everyScript()
	sent["finish"], sent["slots_finish"] = finishScript, slotsFinishScript
	mon := srv.Monitor()
	var want []string
	for _, script := range sent {
		want = append(want, script())
		if err := rdb.Echo(context.Background(), script()).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, c := range mon.Commands() {
		if len(c.Args) == 2 && strings.EqualFold(c.Args[0], "echo") {
			got = append(got, c.Args[1])
		}
	}
	if len(got) != len(want) {
		t.Fatalf("MONITOR showed %d ECHOs, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("MONITOR read a script as\n%q\nwant\n%q", got[i], want[i])
		}
	}
}

// The release scripts set a hand-over's waiting mark again for as long as
// a liveness key lives (aliveFor): the waiters behind refresh both
// together, so the mark outlives every live entry. The script cannot be
// told it per call (its ARGV is fixed by the finish scripts), so the number
// is written in it and held to aliveFor here.
func TestReleaseSetsTheMarkAgainForAliveFor(t *testing.T) {
	t.Parallel()
	want := "redis.call('set', m, 1, 'PX', " + strconv.FormatInt(aliveFor.Milliseconds(), 10) + ")"
	for name, script := range map[string]func() string{"release": releaseScript, "slots_release": slotsReleaseScript} {
		if !strings.Contains(script(), want) {
			t.Errorf("lua/%s.lua does not set the mark again with %s", name, want)
		}
	}
}

// The scripts composed from the hand-over snippets (key_hand.lua,
// slots_hand.lua) travel without the comments lua/ keeps for readers: the
// release script goes with every release, and Redis hashes its text at each EVAL. Every code
// line of the files is still there, in order, and the release script is no
// longer than the code lines of key_hand.lua and release.lua.
func TestComposedScriptsCarryNoComments(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		script func() string
		files  []string
	}{
		{"release", releaseScript, []string{"key_hand.lua", "release.lua"}},
		{"line_check", lineCheckScript, []string{"key_hand.lua", "line_check.lua"}},
		{"break", breakScript, []string{"slots_hand.lua", "key_hand.lua", "break.lua"}},
		{"slots_line_check", slotsLineCheckScript, []string{"slots_hand.lua", "slots_line_check.lua"}},
	} {
		text := tc.script()
		for i, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "--") {
				t.Errorf("%s script, line %d is a comment: %q", tc.name, i+1, line)
			}
			if strings.TrimRight(line, " \t") != line {
				t.Errorf("%s script, line %d ends with blanks: %q", tc.name, i+1, line)
			}
		}
		var code []string
		size := 0
		for _, f := range tc.files {
			b, err := luaFiles.ReadFile("lua/" + f)
			if err != nil {
				t.Fatal(err)
			}
			for line := range strings.Lines(string(b)) {
				if !strings.HasPrefix(strings.TrimSpace(line), "--") {
					code = append(code, strings.TrimRight(line, " \t\n"))
					size += len(line)
				}
			}
		}
		if got := strings.Split(strings.TrimSuffix(text, "\n"), "\n"); strings.Join(got, "\n") != strings.Join(code, "\n") {
			t.Errorf("%s script is not the code lines of %q in order:\n%s", tc.name, tc.files, text)
		}
		if tc.name == "release" && len(text) > size {
			t.Errorf("release script is %d bytes, want at most %d, the code lines of %q", len(text), size, tc.files)
		}
	}
}

// Every file of lua/ starts with its contract, in comment lines that are
// not sent: a first line naming the file and saying what it does, then
// its KEYS, its ARGV and what it returns, in that order, before any code.
func TestEveryScriptFileBeginsWithItsContract(t *testing.T) {
	t.Parallel()
	files, err := fs.Glob(luaFiles, "lua/*.lua")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := luaFiles.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var head []string
		for line := range strings.Lines(string(b)) {
			if !strings.HasPrefix(line, "--") {
				break
			}
			head = append(head, line)
		}
		name := strings.TrimPrefix(f, "lua/")
		if len(head) == 0 || !strings.HasPrefix(head[0], "-- "+name+": ") {
			t.Errorf("%s does not start with \"-- %s: \" and what it does", f, name)
			continue
		}
		next := 0
		for _, want := range []string{"-- KEYS", "-- ARGV", "-- Returns"} {
			i := slices.IndexFunc(head[next:], func(l string) bool { return strings.HasPrefix(l, want) })
			if i < 0 {
				t.Errorf("%s: its opening comment has no line starting %q after its %d first lines", f, want, next)
				break
			}
			next += i + 1
		}
	}
}

// Every script is sent without its files' comment lines and trailing
// blanks (luacode.Strip), whatever parts it is made of.
func TestEveryScriptIsSentWithoutComments(t *testing.T) {
	t.Parallel()
	for name, script := range everyScript() {
		text := script()
		for i, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "--") || strings.TrimRight(line, " \t") != line {
				t.Errorf("the %s script's line %d is a comment or ends with blanks: %q", name, i+1, line)
			}
		}
	}
}

// A lock's first renewal writes its name into the index of names only when
// it extended the lock (extend_index.lua reads extend.lua's reply): one
// that finds its key gone or another holder's leaves the index as it was.
func TestTheFirstRenewalIndexesOnlyALockItExtended(t *testing.T) {
	t.Parallel()
	rdb := redistest.Start(t).Client()
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		lose    func(key string) error // what becomes of the key before the renewal
		indexed bool
	}{
		{"held", func(string) error { return nil }, true},
		{"gone", func(key string) error { return rdb.Del(ctx, key).Err() }, false},
		{"taken", func(key string) error { return rdb.Set(ctx, key, "another's token", time.Minute).Err() }, false},
	} {
		c := New(rdb, nil)
		l, err := c.TryAcquire(ctx, tc.name, time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		index := keys.Index(c.prefix)
		if err := rdb.HDel(ctx, index, l.key).Err(); err != nil { // the acquisition's entry
			t.Fatal(err)
		}
		if err := tc.lose(l.key); err != nil {
			t.Fatal(err)
		}
		err = l.Extend(ctx, time.Minute)
		if tc.indexed != (err == nil) {
			t.Errorf("%s: Extend = %v", tc.name, err)
		}
		if got := rdb.HExists(ctx, index, l.key).Val(); got != tc.indexed {
			t.Errorf("%s: after the first renewal the index has the key: %v, want %v", tc.name, got, tc.indexed)
		}
	}
}
