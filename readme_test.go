package withlock_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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

// documentedPackages are the packages whose every source file
// docs/architecture.md names, each in the first column of the table under
// its heading; a name may be a pattern (admin_*.go).
var documentedPackages = map[string]string{
	".":             "## Where the code is",
	"cmd/with-lock": "## The command, file by file",
}

// The map of the tree stays true: every source file of a package it lists
// is named there, and every file it names is there, so that adding,
// renaming or removing a file fails until the map says so.
func TestArchitectureNamesEverySourceFile(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile("`([^`/]+\\.go)`")
	for dir, heading := range documentedPackages {
		_, section, ok := strings.Cut(string(doc), "\n"+heading+"\n")
		if !ok {
			t.Errorf("docs/architecture.md has no heading %q, under which it lists %s's files", heading, dir)
			continue
		}
		section, _, _ = strings.Cut(section, "\n## ")
		var patterns []string
		for _, row := range strings.Split(section, "\n") {
			if first, ok := firstCell(row); ok {
				for _, m := range name.FindAllStringSubmatch(first, -1) {
					patterns = append(patterns, m[1])
				}
			}
		}
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		matched := map[string]bool{}
		for _, file := range files {
			base := filepath.Base(file)
			if strings.HasSuffix(base, "_test.go") {
				continue
			}
			named := false
			for _, p := range patterns {
				if ok, _ := filepath.Match(p, base); ok {
					named, matched[p] = true, true
				}
			}
			if !named {
				t.Errorf("docs/architecture.md does not name %s under %q", filepath.Join(dir, base), heading)
			}
		}
		for _, p := range patterns {
			if !matched[p] {
				t.Errorf("docs/architecture.md names %s under %q, but %s has no such source file", p, heading, dir)
			}
		}
	}
	// A file named anywhere else in the map (how a run flows, the job's
	// tracking) is a file of the repository.
	var all []string
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".go") {
			all = append(all, filepath.Base(path))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range name.FindAllStringSubmatch(string(doc), -1) {
		found := false
		for _, base := range all {
			if ok, _ := filepath.Match(m[1], base); ok {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("docs/architecture.md names %s, which is no file of the repository", m[1])
		}
	}
}

// firstCell is the first cell of a Markdown table row, and whether row is
// one (not its separator).
func firstCell(row string) (string, bool) {
	if !strings.HasPrefix(row, "| ") {
		return "", false
	}
	cell, _, _ := strings.Cut(row[2:], " |")
	return cell, true
}

// settingsDeclared reads internal/config/settings.go, where every flag is
// declared, and returns each setting's flags ("--name", and "-x" when it
// has a short one) by its long name, and whether it has a WITH_LOCK_*
// variable.
func settingsDeclared(t *testing.T) (flags map[string][]string, hasEnv map[string]bool) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("internal", "config", "settings*.go"))
	if err != nil {
		t.Fatal(err)
	}
	flags, hasEnv = map[string][]string{}, map[string]bool{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		inspectSettings(f, flags, hasEnv)
	}
	if len(flags) < 50 {
		t.Fatalf("read %d settings from %s; the reading must have stopped finding them", len(flags), strings.Join(files, ", "))
	}
	return flags, hasEnv
}

// inspectSettings adds the settings declared in f to flags and hasEnv.
func inspectSettings(f *ast.File, flags map[string][]string, hasEnv map[string]bool) {
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.CompositeLit)
		if !ok {
			return true
		}
		fields := map[string]ast.Expr{}
		for _, e := range lit.Elts {
			if kv, ok := e.(*ast.KeyValueExpr); ok {
				if key, ok := kv.Key.(*ast.Ident); ok {
					fields[key.Name] = kv.Value
				}
			}
		}
		long, ok := stringLit(fields["name"])
		if !ok || fields["field"] == nil {
			return true // not a setting
		}
		flags[long] = []string{"--" + long}
		if short, ok := stringLit(fields["short"]); ok && short != "" {
			flags[long] = append(flags[long], "-"+short)
		}
		env, isLit := stringLit(fields["env"])
		hasEnv[long] = fields["env"] != nil && (!isLit || env != "")
		return false
	})
}

// stringLit is the value of e when it is a string literal.
func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// The README names every flag that has no WITH_LOCK_* variable, and only
// those, where it says which they are; the flags table says it is a
// selection and points to where every flag is.
func TestReadmeListsEveryFlagWithoutVariable(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	const intro = "Every flag but these can also be set by a `WITH_LOCK_*` variable"
	_, list, ok := strings.Cut(strings.Join(strings.Fields(string(readme)), " "), intro)
	if !ok {
		t.Fatalf("README.md does not say which flags have no variable (%q)", intro)
	}
	list, _, _ = strings.Cut(list, ". ")
	named := map[string]bool{}
	for _, m := range regexp.MustCompile("`(--?[a-z][a-z0-9-]*)`").FindAllStringSubmatch(list, -1) {
		named[m[1]] = true
	}
	flags, hasEnv := settingsDeclared(t)
	for long, names := range flags {
		said := false
		for _, n := range names {
			said = said || named[n]
			delete(named, n)
		}
		switch {
		case !hasEnv[long] && !said:
			t.Errorf("README.md does not name --%s among the flags without a variable", long)
		case hasEnv[long] && said:
			t.Errorf("README.md names --%s among the flags without a variable, but it has one", long)
		}
	}
	for n := range named {
		t.Errorf("README.md names %s among the flags without a variable, but no setting has that flag", n)
	}
	if !strings.Contains(string(readme), "`with-lock --help` and with-lock(1) list every one") {
		t.Error("README.md's flags table does not say it is a selection, and where every flag is")
	}
}

// TestEveryTestRunsInParallelOrSaysWhyNot: the suite spends its time
// waiting on TTLs, timeouts and servers, so the tests of this package and
// of the CLI run side by side (make test's -parallel). A test that must
// run alone, one that holds a bound in time or counts allocations, says
// why in its doc comment ("Not parallel: ..."); every other one calls
// t.Parallel first.
func TestEveryTestRunsInParallelOrSaysWhyNot(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	cli, _ := filepath.Glob(filepath.Join("cmd", "with-lock", "*_test.go"))
	files = append(files, cli...)
	fset := token.NewFileSet()
	for _, file := range files {
		f, err := parser.ParseFile(fset, file, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Name.Name == "TestMain" {
				continue
			}
			parallel, saysWhyNot := callsParallelFirst(fn), saysNotParallel(fn.Doc.Text())
			switch {
			case parallel && saysWhyNot:
				t.Errorf("%s: %s calls t.Parallel() but its doc comment says why it does not", fset.Position(fn.Pos()), fn.Name.Name)
			case !parallel && !saysWhyNot:
				t.Errorf("%s: %s neither calls t.Parallel() first nor says in its doc comment why not (a line \"Not parallel: ...\")",
					fset.Position(fn.Pos()), fn.Name.Name)
			}
		}
	}
}

// saysNotParallel reports whether a doc comment has a line that begins
// "Not parallel:".
func saysNotParallel(doc string) bool {
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "Not parallel:") {
			return true
		}
	}
	return false
}

// callsParallelFirst reports whether fn's first statement is t.Parallel().
func callsParallelFirst(fn *ast.FuncDecl) bool {
	if fn.Body == nil || len(fn.Body.List) == 0 {
		return false
	}
	stmt, ok := fn.Body.List[0].(*ast.ExprStmt)
	if !ok {
		return false
	}
	call, ok := stmt.X.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Parallel"
}
