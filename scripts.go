package withlock

// Every Lua script the package sends, and the files of lua/ each is made
// of. What a script does, its KEYS, ARGV and reply are written at the top
// of its file; this file says only how the files make the scripts.

import (
	"embed"
	"strings"
	"sync"

	"github.com/with-lock/with-lock/internal/luacode"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// A part is a piece of a script's text: a file of lua/, or parts run as a
// local function.
type part struct {
	file string // lua/<file>.lua, when fn is ""
	fn   string // the local function that the parts in of make
	of   []part
}

// lua is the part lua/<name>.lua.
func lua(name string) part { return part{file: name} }

// asFunction is the parts of run as the local function name(), which the
// part after them calls to have their reply: a release before the record's
// writes (finish.lua), a renewal before the index's (extend_index.lua).
func asFunction(name string, of ...part) part { return part{fn: name, of: of} }

// script returns the text of the script made of parts in order. Each file
// goes without its comment-only lines (luacode.Strip): they are for
// readers of lua/, and Redis hashes a script's text at every EVAL. The
// text is made when first asked for: a process makes only the scripts it
// sends (a CLI run, three or four of them), not every one at start-up. A
// missing file is a build mistake, found by the test that reads every
// script (TestEveryScriptIsEmbedded).
func script(parts ...part) func() string {
	return sync.OnceValue(func() string {
		var s strings.Builder
		writeParts(&s, parts)
		return s.String()
	})
}

func writeParts(s *strings.Builder, parts []part) {
	for _, p := range parts {
		if p.fn != "" {
			s.WriteString("local function " + p.fn + "()\n")
			writeParts(s, p.of)
			s.WriteString("end\n")
			continue
		}
		b, err := luaFiles.ReadFile("lua/" + p.file + ".lua")
		if err != nil {
			panic("withlock: " + err.Error())
		}
		code := luacode.Strip(string(b))
		s.WriteString(code)
		if !strings.HasSuffix(code, "\n") {
			s.WriteByte('\n')
		}
	}
}

// Parts of several scripts, never sent alone: the fair line's hand-overs
// of a free lock and of a free slot, and the record's writes.
var (
	keyHand    = lua("key_hand")   // handKey(k, b, cid)
	slotsHand  = lua("slots_hand") // handSlot(k, b, i, want)
	recordPart = lua("record")     // record(released, at)
)

// The scripts, each by its parts in order. They are sent with EVAL, never
// EVALSHA first: a one-shot process such as the CLI would otherwise pay an
// extra NOSCRIPT round trip, and Redis caches the compiled script by its
// digest either way. The one exception is a Client's releases after its
// first (runRelease, roundtrip_senders.go).
var (
	// A plain lock's life (lock.go, backend_single.go, backend_quorum.go).
	acquireFencedScript = script(lua("acquire_fenced"))
	claimScript         = script(lua("claim"))
	extendScript        = script(lua("extend"))
	extendIndexScript   = script(asFunction("extend", lua("extend")), lua("extend_index"))
	pttlScript          = script(lua("pttl"))
	releaseScript       = script(keyHand, lua("release"))
	finishScript        = script(asFunction("release", keyHand, lua("release")), recordPart, lua("finish"))
	leftScript          = script(lua("left"))

	// The fair line's check (wait_fair.go).
	lineCheckScript = script(keyHand, lua("line_check"))

	// A semaphore's (backend_semaphore.go).
	slotsAcquireScript   = script(lua("slots_acquire"))
	slotsExtendScript    = script(lua("slots_extend"))
	slotsReleaseScript   = script(lua("slots_release"))
	slotsFinishScript    = script(asFunction("release", lua("slots_release")), recordPart, lua("slots_finish"))
	slotsLineCheckScript = script(slotsHand, lua("slots_line_check"))

	// Replacing a holder (replace.go), pausing a name (pause.go), breaking
	// a lock (admin_list.go).
	replaceScript        = script(lua("replace"))
	replaceConfirmScript = script(lua("replace_confirm"))
	pauseScript          = script(lua("pause"))
	resumeScript         = script(lua("resume"))
	breakScript          = script(slotsHand, keyHand, lua("break"))

	// Reading (admin_status.go, onceper.go) and the index of names
	// (admin_index.go, admin_index_cluster.go).
	statusScript      = script(lua("status"))
	windowScript      = script(lua("window"))
	unindexScript     = script(lua("unindex"))
	indexSeenScript   = script(lua("index_seen"))
	unindexSeenScript = script(lua("unindex_seen"))
)
