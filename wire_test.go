package withlock

// What goes to Redis and comes back, checked from inside the package: the
// release's keys and arguments, the values kept (a
// record's JSON, a pause), List reading the keys the writers write, what
// each backend can do, and when the answers in hand settle a quorum's
// question.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/with-lock/with-lock/internal/keys"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/with-lock/with-lock/internal/redistest"
)

// TestNewLockBuildsTheKeyAndWaitingMarkTheRuleGives checks that the key
// and waiting mark newLock builds together, and the release arguments it
// builds once, are those Key and keys.Mark give, for every shape of name
// and prefix the hash-tag rule tells apart.
func TestNewLockBuildsTheKeyAndWaitingMarkTheRuleGives(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ prefix, name string }{
		{"", "job"},
		{"app:", "job"},
		{"", "{jobs}:a"},
		{"{app}:", "job"},
		{"", "a}b"},
		{"x}", "job"},
		{"", "a{b"},
		{"", "{}"},
	} {
		c := New(nil, &Options{Prefix: tc.prefix})
		l := c.newLock(tc.name, "tok", time.Second, nil)
		key := c.Key(tc.name)
		if l.key != key {
			t.Errorf("prefix %q name %q: key %q, want %q", tc.prefix, tc.name, l.key, key)
		}
		if got := l.waitMark(); got != keys.Mark(key) {
			t.Errorf("key %q: waiting mark %q, want %q", key, got, keys.Mark(key))
		}
		relKeys, args := l.releaseCall(0, "")
		want := []any{"tok", keys.Mark(key)}
		if !slices.Equal(relKeys, []string{key}) || !slices.Equal(derefArgs(args), want) {
			t.Errorf("key %q: release KEYS %q ARGV %v, want %q %v", key, relKeys, derefArgs(args), []string{key}, want)
		}
	}
}

// TestPlainReleaseArgumentsAllocateNothing pins the uncontended Release's
// own share of allocations at none: its KEYS and ARGV are the ones newLock
// built. A min-hold left or a Client id still gets its own arguments, and
// so does a Lock made without newLock.
//
// Not parallel: AllocsPerRun counts the allocations of every goroutine.
func TestPlainReleaseArgumentsAllocateNothing(t *testing.T) {
	c := New(nil, nil)
	l := c.newLock("job", "tok", time.Second, nil)
	if n := testing.AllocsPerRun(100, func() { l.releaseCall(0, "") }); n != 0 {
		t.Errorf("a plain release's arguments cost %.0f allocations, want 0", n)
	}
	for _, tc := range []struct {
		l    *Lock
		keep time.Duration
		cid  string
		want []any
	}{
		{l, 1500 * time.Millisecond, "", []any{"tok", "{lock:job}:w", int64(1500)}},
		{l, 0, "c1", []any{"tok", "{lock:job}:w", int64(0), "c1"}},
		{&Lock{key: "lock:x", token: "t2"}, 0, "", []any{"t2", "{lock:x}:w"}},
	} {
		keys, args := tc.l.releaseCall(tc.keep, tc.cid)
		if !slices.Equal(keys, []string{tc.l.key}) || !slices.Equal(derefArgs(args), tc.want) {
			t.Errorf("keep %s cid %q: KEYS %q ARGV %v, want %q %v", tc.keep, tc.cid, keys, derefArgs(args), tc.l.key, tc.want)
		}
	}
	if _, args := l.releaseCall(0, ""); &args[0] != &l.relArgs[0] {
		t.Error("after other calls, a plain release no longer uses the arguments newLock built")
	}
}

// derefArgs is args as go-redis writes them: a *string as its string.
func derefArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		if p, ok := a.(*string); ok {
			a = *p
		}
		out[i] = a
	}
	return out
}

// A pause's value in the lock key reads back as the pause it stores, a
// reason with the separator included, and no token or marker reads as a
// pause.
func TestPauseValueReadsBackAndIsNoToken(t *testing.T) {
	t.Parallel()
	since := time.UnixMilli(1_764_000_000_000)
	for _, p := range []Pause{
		{By: "db1:alice", Since: since, Reason: "db migration"},
		{By: "db1:alice", Since: since, Until: since.Add(time.Hour), Reason: "a|b: c"},
		{By: "db1:", Since: since},
	} {
		got, ok := pauseOf(pauseValue(p))
		if !ok || got.By != p.By || !got.Since.Equal(p.Since) || !got.Until.Equal(p.Until) || got.Reason != p.Reason {
			t.Errorf("pauseOf(pauseValue(%+v)) = %+v, %v", p, got, ok)
		}
	}
	token, err := newToken(ownerPrefix(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{token, "#slots=3", "", "paused", "otherhost:4242:0123456789abcdef"} {
		if _, ok := pauseOf(v); ok {
			t.Errorf("pauseOf(%q) reads a pause", v)
		}
	}
}

// TestRecordJSONIsWhatEncodingJSONWrites holds the hand-written record
// encoder to encoding/json's output, byte for byte, so that records
// written before and after it read the same everywhere: the record's own
// fields as json.Marshal writes the struct, then Run.Extra's as it writes
// the map, before the token's digest.
func TestRecordJSONIsWhatEncodingJSONWrites(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 13, 9, 44, 123456789, time.UTC)
	paris := time.FixedZone("CET", 3600)
	for _, rec := range []record{
		{Name: "nightly", Tag: "0123456789abcdef", Run: Run{Holder: "web1:4711", Started: at, Finished: at.Add(time.Second), Outcome: OutcomeOK}},
		{Name: "backup", Run: Run{Holder: "h:1", Started: at.In(paris), Finished: at.Add(90 * time.Minute).In(paris),
			ExitCode: 125, Lost: true, Fence: 42, Outcome: OutcomeLost,
			Extra: map[string]json.RawMessage{"timed_out": raw("true"), "max_rss_kb": raw("56789"), "cpu_ms": raw(" 1234 "), "tracking": raw(`"scope"`)}}},
		{Name: "", Run: Run{ExitCode: -1, Fence: -3, Extra: map[string]json.RawMessage{"cpu_ms": raw("-1"), "nested": raw(`{ "a" : [1, "<b>"] }`)}}}, // zero times, negatives
		{Name: "odd names", Run: Run{Extra: map[string]json.RawMessage{"qu\"o<te>": raw("null"), "héllo": raw(`"\u00e9"`)}}},
		{Name: `quo"te\back<a>&b`, Run: Run{Holder: "tab\there\nnl\x00\x1f\x7f", Outcome: "caller's own"}},
		{Name: "a<b", Run: Run{Holder: "x>y", Outcome: "p&q"}}, // each alone: escaped as HTML
		{Name: "del\x7f", Run: Run{Holder: "back\\slash", Outcome: "\x01"}},
		{Name: "héllo, 世界 \u2028\u2029", Run: Run{Holder: "bad utf-8 \xff\xfe", Started: at.Truncate(time.Second)}},
		{Name: "out", Run: Run{Outcome: OutcomeFailed, Output: "line 1\n\tline 2 <b>\r\n\x00\xff\xfe bin\x1b[0m\n"}},
		{Name: "plain", Run: Run{Output: "plain ascii"}},
	} {
		want, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.Extra) > 0 {
			extra, err := json.Marshal(rec.Extra)
			if err != nil {
				t.Fatal(err)
			}
			tag := []byte(`,"token_sha256":`)
			i := bytes.LastIndex(want, tag)
			want = slices.Concat(want[:i], []byte(","), extra[1:len(extra)-1], want[i:])
		}
		got, err := marshalRecord(&rec)
		if err != nil {
			t.Fatalf("%q: %v", rec.Name, err)
		}
		if string(got) != string(want) {
			t.Errorf("record %q:\n got %s\nwant %s", rec.Name, got, want)
		}
	}
}

// TestRecordJSONRefusesATimeJSONCannotHold: as encoding/json does.
func TestRecordJSONRefusesATimeJSONCannotHold(t *testing.T) {
	t.Parallel()
	rec := record{Name: "x", Run: Run{Started: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}}
	if _, err := json.Marshal(rec); err == nil {
		t.Fatal("encoding/json took year 10000; the test's premise is wrong")
	}
	if b, err := marshalRecord(&rec); err == nil {
		t.Errorf("marshalRecord wrote %s for year 10000, want an error", b)
	}
}

// A run that does not name its outcome gets the first that applies: a
// lost lock whatever else happened (the run may have overlapped another
// owner's), then a timed-out run (a record of a version that stored
// timed_out and no outcome), then the exit code.
func TestOutcomeOfRanksLostThenTimedOutThenTheExitCode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		lost     bool
		timedOut bool
		exitCode int
		want     Outcome
	}{
		{false, false, 0, OutcomeOK},
		{false, false, 1, OutcomeFailed},
		{false, true, 124, outcomeTimedOut},
		{false, true, 0, outcomeTimedOut},
		{true, false, 0, OutcomeLost},
		{true, false, 1, OutcomeLost},
		{true, true, 124, OutcomeLost},
	} {
		if got := outcomeOf(&Run{Lost: tc.lost, ExitCode: tc.exitCode}, tc.timedOut); got != tc.want {
			t.Errorf("lost %v, timed out %v, exit %d: outcome %q, want %q", tc.lost, tc.timedOut, tc.exitCode, got, tc.want)
		}
	}
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

// listKeysOf builds the keys List reads of a lock in one string; they are
// the keys the lock's writers use, whatever the form of its key: with a
// hash tag, without, with a '}' and no tag (numbered side keys, no pause).
func TestListReadsTheKeysTheWritersUse(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"lock:a", "lock:{tag}a", "{lock:}x", "lock:a}b", "lock:{}a", "lock:{}a}", "lock:é-ü", "lock:"} {
		t.Run(key, func(t *testing.T) {
			want := []string{"earlier", key, keys.Fence(key), keys.Record(key), keys.Success(key), keys.Window(key), keys.Left(key)}
			if pk, ok := keys.Pause(key); ok {
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
	t.Parallel()
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

// TestBackendCapabilities checks that each backend has exactly the optional
// capabilities it should: in particular that a semaphore, whose keys are
// slots, never picks up a plain lock's hand-over or once-per marker, which
// would act on the name's key instead of a slot.
func TestBackendCapabilities(t *testing.T) {
	t.Parallel()
	has := func(b backend) map[string]bool {
		_, admin := b.(adminBackend)
		_, index := b.(indexKeeper)
		_, marker := b.(windowMarker)
		_, slots := b.(slotted)
		_, line := b.(fairLine)
		_, handOver := b.(handOverer)
		_, teller := b.(breakTeller)
		return map[string]bool{"admin": admin, "index": index, "marker": marker, "slots": slots,
			"line": line, "handOver": handOver, "breakTeller": teller}
	}
	for _, tc := range []struct {
		name string
		b    backend
		want []string
	}{
		{"single", &single{}, []string{"admin", "index", "marker", "line", "handOver", "breakTeller"}},
		{"semaphore", &semaphore{one: &single{}, n: 2}, []string{"admin", "index", "slots", "line", "breakTeller"}},
		{"quorum", &quorum{}, []string{"admin", "breakTeller"}},
	} {
		got := has(tc.b)
		for _, c := range tc.want {
			if !got[c] {
				t.Errorf("%s lacks %s", tc.name, c)
			}
			delete(got, c)
		}
		for c, ok := range got {
			if ok {
				t.Errorf("%s has %s, which it must not", tc.name, c)
			}
		}
	}
	if n := slotsPer(&semaphore{one: &single{}, n: 3}); n != 3 {
		t.Errorf("slotsPer(semaphore of 3) = %d", n)
	}
	if n := slotsPer(&single{}); n != 1 {
		t.Errorf("slotsPer(single) = %d", n)
	}
}

// A quorum's Status and Break answer without the nodes yet to answer only
// when the answers in hand settle who holds the lock on a majority: one
// token on a majority of all nodes, or no token that the silent nodes
// could still make a majority. Otherwise they wait for the others.
func TestQuorumAdminAnswersOnlyWhenTheAnswersInHandSettleIt(t *testing.T) {
	t.Parallel()
	const wait = "?" // a node yet to answer
	failed := errors.New("connection refused")
	for _, tc := range []struct {
		name  string
		nodes []string // a token, "" for no key, wait, or "!" for a failed node
		want  bool
	}{
		{"two of three hold one token", []string{"a", "a", wait}, true},
		{"two of three are free", []string{"", "", wait}, true},
		{"one holds, one is free: the third decides", []string{"a", "", wait}, false},
		{"two tokens: the third decides", []string{"a", "b", wait}, false},
		{"one answer of three", []string{"a", wait, wait}, false},
		{"one answer of three, free", []string{"", wait, wait}, false},
		{"two failed: no majority can answer", []string{"!", "!", wait}, true},
		{"one failed, one holds: the third decides", []string{"!", "a", wait}, false},
		{"one failed, one free: the third decides", []string{"!", "", wait}, false},
		{"all answered, no majority", []string{"a", "", ""}, true},
		{"three of five free: two silent cannot make a majority", []string{"", "", "", wait, wait}, true},
		{"one of three answers of five holds: two silent could add to it", []string{"a", "", "", wait, wait}, false},
		{"three of five hold one token", []string{"a", "a", "a", wait, wait}, true},
		{"two of four answers of five hold one token: the fifth decides", []string{"a", "a", "", "", wait}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			views := make([]nodeStatus, len(tc.nodes))
			pending := make([]bool, len(tc.nodes))
			for i, n := range tc.nodes {
				switch n {
				case wait:
					pending[i] = true
				case "!":
					views[i].err = failed
				default:
					views[i].token = n
				}
			}
			if got := settled(views, pending, len(tc.nodes)/2+1); got != tc.want {
				t.Errorf("settled(%q) = %v, want %v", tc.nodes, got, tc.want)
			}
		})
	}
}
