package withlock_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README backs each guarantee with the name of a test. A renamed or
// removed test must not leave the README citing a name that pins nothing.
func TestReadmeCitesOnlyTestsThatExist(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var sources strings.Builder
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
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
	cited := regexp.MustCompile("`(Test[A-Za-z0-9_]+)((?:/[^`]+)?)`").FindAllStringSubmatch(string(readme), -1)
	if len(cited) == 0 {
		t.Fatal("the README cites no test at all")
	}
	for _, m := range cited {
		name, sub := m[1], strings.TrimPrefix(m[2], "/")
		if !strings.Contains(src, "func "+name+"(") {
			t.Errorf("README cites %s, but no test function has that name", m[0])
			continue
		}
		// A subtest's name is a string in the test table; t.Run turns its
		// spaces into underscores.
		if sub != "" && !strings.Contains(src, `"`+sub+`"`) && !strings.Contains(src, `"`+strings.ReplaceAll(sub, "_", " ")+`"`) {
			t.Errorf("README cites %s, but no test names the subtest %q", m[0], sub)
		}
	}
}
