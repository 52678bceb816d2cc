package withlock_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// docFiles returns the README and the guides in docs/.
func docFiles(t *testing.T) []string {
	t.Helper()
	guides, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(guides) < 3 {
		t.Fatalf("docs/ holds %d guides, want the README's guides there", len(guides))
	}
	return append([]string{"README.md"}, guides...)
}

// The README and the guides back each guarantee with the name of a test. A
// renamed or removed test must not leave them citing a name that pins
// nothing.
func TestReadmeCitesOnlyTestsThatExist(t *testing.T) {
	var sources strings.Builder
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path == "bench" { // its own module, cited for figures only
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, "_test.go") {
			b, err := os.ReadFile(path)
			sources.Write(b)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	src := sources.String()
	citation := regexp.MustCompile("`(Test[A-Za-z0-9_]+)((?:/[^`]+)?)`")
	total := 0
	for _, doc := range docFiles(t) {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		cited := citation.FindAllStringSubmatch(string(text), -1)
		total += len(cited)
		for _, m := range cited {
			name, sub := m[1], strings.TrimPrefix(m[2], "/")
			if !strings.Contains(src, "func "+name+"(") {
				t.Errorf("%s cites %s, but no test function has that name", doc, m[0])
				continue
			}
			// A subtest's name is a string in the test table; t.Run turns
			// its spaces into underscores.
			if sub != "" && !strings.Contains(src, `"`+sub+`"`) && !strings.Contains(src, `"`+strings.ReplaceAll(sub, "_", " ")+`"`) {
				t.Errorf("%s cites %s, but no test names the subtest %q", doc, m[0], sub)
			}
		}
	}
	if total < 100 {
		t.Errorf("the README and the guides cite %d tests; the regexp must have stopped finding them", total)
	}
}

// A guide the README does not link to is a guide nobody finds, and a link
// to a guide that is gone is a dead end.
func TestReadmeLinksEveryGuide(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range docFiles(t)[1:] {
		if !strings.Contains(string(readme), "]("+filepath.ToSlash(doc)+")") {
			t.Errorf("README.md does not link to %s", doc)
		}
	}
	// Every relative link of the README and the guides reaches a file, and
	// a heading in it when it names one.
	link := regexp.MustCompile(`\]\(([^)#:]*)(?:#([^)]*))?\)`)
	for _, doc := range docFiles(t) {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(text), -1) {
			target := doc
			if m[1] != "" {
				target = filepath.Join(filepath.Dir(doc), m[1])
			}
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s links to %s, which is not there", doc, m[1])
				continue
			}
			if m[2] != "" && strings.HasSuffix(target, ".md") && !headingAnchors(t, target)[m[2]] {
				t.Errorf("%s links to %s#%s, a heading %s does not have", doc, m[1], m[2], target)
			}
		}
	}
}

// headingAnchors returns the anchors GitHub gives the headings of the
// Markdown file at path: lower case, punctuation dropped, spaces as -.
func headingAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	fenced := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var a strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				a.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				a.WriteRune(r)
			}
		}
		anchors[a.String()] = true
	}
	return anchors
}

// The README is for the first reader: what with-lock is, how to start and
// where the rest is. What grows goes into a guide in docs/.
func TestReadmeStaysShort(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Fields(string(readme))); n > 3000 {
		t.Errorf("README.md has %d words, want at most 3,000: move the detail into a guide in docs/", n)
	}
}

// The quick start is two commands, make demo and make test, and nothing
// else to type.
func TestReadmeQuickStartIsTwoCommands(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Quick start\n")
	if !ok {
		t.Fatal("README.md has no Quick start section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	blocks := strings.Split(section, "```")
	if len(blocks) != 3 {
		t.Fatalf("the Quick start has %d code blocks, want one", (len(blocks)-1)/2)
	}
	if got := strings.TrimSpace(blocks[1]); got != "make demo\nmake test" {
		t.Errorf("the Quick start's commands are %q, want make demo and make test", got)
	}
}
