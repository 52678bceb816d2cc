package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/with-lock/with-lock/internal/clitest"
)

// TestCompletionsListEveryFlag keeps the hand-written shell completions in
// packaging/completions and the man page in step with the flags: every long
// flag --help prints must be offered by the bash, zsh and fish completion
// and documented in with-lock.1.
func TestCompletionsListEveryFlag(t *testing.T) {
	r := clitest.Run(t, nil, "--help")
	if r.Code != 0 {
		t.Fatalf("with-lock --help = %d, %q", r.Code, r.Stderr)
	}
	// Flag lines look like "  -w, --wait DUR   ..." or "      --ttl DUR   ...".
	var flags []string
	for _, m := range regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z][a-z0-9-]*)`).FindAllStringSubmatch(r.Stdout, -1) {
		flags = append(flags, m[1])
	}
	if len(flags) < 10 {
		t.Fatalf("found only %d flags in with-lock --help: %q", len(flags), flags)
	}
	completions := filepath.Join("..", "..", "packaging", "completions")
	for _, c := range []struct {
		file string
		flag func(name string) string // how the file names a long flag, as a regexp
	}{
		{filepath.Join(completions, "with-lock.bash"), func(name string) string { return `--` + name }},
		{filepath.Join(completions, "_with-lock"), func(name string) string { return `--` + name }},
		{filepath.Join(completions, "with-lock.fish"), func(name string) string { return `-l ` + name }},
		// roff writes a flag's dashes as \-, maybe right after a font change.
		{filepath.Join("..", "..", "packaging", "with-lock.1"), func(name string) string {
			return `(?:\\f[BIRP])?\\-\\-` + strings.ReplaceAll(name, `-`, `\\-`)
		}},
	} {
		data, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range flags {
			// Whole flag only: --sentinel must not be satisfied by --sentinel-user.
			re := regexp.MustCompile(`(?:^|[^\w-])` + c.flag(regexp.QuoteMeta(name)) + `(?:[^\w-]|$)`)
			if !re.Match(data) {
				t.Errorf("%s does not offer --%s, which with-lock --help lists", c.file, name)
			}
		}
	}
}
