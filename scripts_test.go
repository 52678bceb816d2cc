package withlock

import (
	"strings"
	"testing"
)

// The scripts composed from the hand-over snippets (withHands) travel
// without the comments lua/ keeps for readers: the release script goes
// with every release, and Redis hashes its text at each EVAL. Every code
// line of the files is still there, in order, and the release script is no
// longer than the code lines of key_hand.lua and release.lua.
func TestComposedScriptsCarryNoComments(t *testing.T) {
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
