package config_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/with-lock/with-lock/internal/config"
)

// Every file make docs writes from the settings table (the man page, the
// example config, the shells' completions, the README's flag table) is,
// as committed, what it would write now: a setting added, renamed or
// reworded without make docs would leave one of them behind.
func TestCommittedDocsAreWhatTheSettingsTableWrites(t *testing.T) {
	docs := config.Docs()
	if len(docs) < 6 {
		t.Fatalf("config.Docs lists %d files, want the man page, the example config, three completions and the README", len(docs))
	}
	for _, d := range docs {
		have, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(d.Path)))
		if err != nil {
			t.Fatal(err)
		}
		want, err := d.Make(have)
		if err != nil {
			t.Errorf("%s: %v", d.Path, err)
			continue
		}
		if line, ok := firstDifference(have, want); !ok {
			t.Errorf("%s differs from what the settings table writes from line %d: run make docs", d.Path, line)
		}
	}
}

// firstDifference is the first line at which a and b differ, and whether
// they are the same.
func firstDifference(a, b []byte) (int, bool) {
	if bytes.Equal(a, b) {
		return 0, true
	}
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return i + 1, false
		}
	}
	return min(len(la), len(lb)) + 1, false
}

// The README's flag table is written between its markers and only there:
// the text around it is kept as it is, and a README without the markers
// is an error rather than a README rewritten whole.
func TestReadmeFlagTableIsWrittenBetweenItsMarkersOnly(t *testing.T) {
	var readme config.Doc
	for _, d := range config.Docs() {
		if d.Path == "README.md" {
			readme = d
		}
	}
	const before, after = "# Title\n\nintro\n\n", "\nmore text\n"
	old := before + "<!-- flags:begin: written by make docs from internal/config's settings table -->\nstale\n<!-- flags:end -->\n" + after
	got, err := readme.Make([]byte(old))
	if err != nil {
		t.Fatal(err)
	}
	text := string(got)
	if !strings.HasPrefix(text, before) || !strings.HasSuffix(text, after) || strings.Contains(text, "stale") ||
		!strings.Contains(text, "| `--ttl DUR` | `30s` |") {
		t.Errorf("the README's table was not written between the markers alone:\n%s", text)
	}
	if _, err := readme.Make([]byte(before + after)); err == nil {
		t.Error("a README without the markers was rewritten; want an error naming them")
	}
}
