package config_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The man page as man shows it: groff renders packaging/with-lock.1 with
// every warning on and says nothing, and every section the template
// writes is a heading of its own. A request glued to the end of the text
// before it (".SH" after a generated paragraph with no newline) is no
// warning to groff, only words of that paragraph, so the headings are
// checked in the rendered text, where such a section is missing.
func TestManPageRendersWithoutWarningsAndWithEverySection(t *testing.T) {
	tmpl, err := os.ReadFile("with-lock.1.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	// Anywhere in the template, not only at the start of a line: a
	// heading glued to a template action is still one the page must have.
	var want []string
	for _, m := range regexp.MustCompile(`\.SH ([^\n]+)`).FindAllStringSubmatch(string(tmpl), -1) {
		want = append(want, m[1])
	}
	if len(want) < 8 || !contains(want, "EXIT STATUS") {
		t.Fatalf("found only these section headings in the template: %q", want)
	}

	// -P-cbou: plain text, no escape sequences or overstriking, so a
	// heading is a line of its own starting at the left margin.
	cmd := exec.Command(groff(t), "-man", "-Tutf8", "-ww", "-P-cbou", filepath.Join("..", "..", "packaging", "with-lock.1"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("groff: %v\n%s", err, stderr.String())
	}
	if stderr.Len() > 0 {
		t.Errorf("groff warns about packaging/with-lock.1:\n%s", stderr.String())
	}
	var have []string
	for _, line := range strings.Split(stdout.String(), "\n") {
		// Page headers and footers also start at the margin; they
		// name the page.
		if line == "" || line[0] == ' ' || strings.Contains(line, "with-lock(1)") || strings.Contains(line, "WITH-LOCK(1)") {
			continue
		}
		have = append(have, line)
	}
	for _, h := range want {
		if !contains(have, h) {
			t.Errorf("the rendered man page has no section heading %q; its headings: %q", h, have)
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// groff is the man page formatter; `make test` installs it (make groff,
// the Debian package groff-base, which man itself depends on). Missing,
// the test fails, in CI always; only go test -short outside CI (make
// test-short, which runs without servers and tools) leaves it out.
func groff(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("groff")
	switch {
	case err == nil:
		return path
	case testing.Short() && os.Getenv("CI") != "true":
		t.Skip("runs groff, which is not installed: not run under go test -short")
	}
	t.Fatalf("groff not found: run make groff (the Debian package groff-base ships it)")
	return ""
}
