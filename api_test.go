package withlock_test

import (
	"context"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// maxExported is the budget of exported names for v1: top-level functions,
// types, variables and constants, and the exported methods of exported
// types (a struct's fields count with their type, as in go doc's summary).
// bsm/redislock exports about 25, etcd's concurrency package about 23; this
// package also carries Status, List, Break, records, semaphores and quorums.
const maxExported = 70

// The package exports no more than its budget, and every exported name
// has a doc comment saying what it is for.
func TestExportedNamesStayWithinBudgetAndAreDocumented(t *testing.T) {
	// go/build picks the package's files as the go command does, build
	// constraints included, and leaves the tests out.
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range pkg.GoFiles {
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	var names []string
	undocumented := func(name string, doc ...*ast.CommentGroup) {
		for _, d := range doc {
			if d != nil && strings.TrimSpace(d.Text()) != "" {
				return
			}
		}
		t.Errorf("exported %s has no doc comment", name)
	}
	for _, f := range files {
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				name, ok := funcName(d)
				if ok {
					names = append(names, name)
					undocumented(name, d.Doc)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							names = append(names, s.Name.Name)
							undocumented(s.Name.Name, s.Doc, d.Doc)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names = append(names, n.Name)
								undocumented(n.Name, s.Doc, s.Comment, d.Doc)
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d exported names", len(names))
	if len(names) > maxExported {
		t.Errorf("%d exported names, more than the budget of %d: %v", len(names), maxExported, names)
	}
}

// funcName names an exported function, or an exported method of an
// exported type ("Lock.Release"); ok is false for anything else.
func funcName(d *ast.FuncDecl) (name string, ok bool) {
	if !d.Name.IsExported() {
		return "", false
	}
	if d.Recv == nil {
		return d.Name.Name, true
	}
	t := d.Recv.List[0].Type
	if s, isPtr := t.(*ast.StarExpr); isPtr {
		t = s.X
	}
	if id, isIdent := t.(*ast.Ident); isIdent && id.IsExported() {
		return id.Name + "." + d.Name.Name, true
	}
	return "", false
}

// The package's documentation, as go doc -all shows it, speaks to its
// users: it names no source file ("wait_fair.go") and no unexported type
// or method ("quorum.subscribe", "Lock.keep"), which a user cannot open
// from go doc nor call.
func TestDocNamesNoSourceFileNorUnexportedName(t *testing.T) {
	gotool, err := exec.LookPath("go")
	if err != nil {
		gotool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, gotool, "doc", "-all", ".").Output()
	if err != nil {
		t.Fatalf("go doc -all .: %v", err)
	}
	doc := string(out)
	if !strings.Contains(doc, "func (c *Client) Acquire(") {
		t.Fatalf("go doc -all . shows no Client.Acquire; the check below would prove nothing:\n%s", doc)
	}
	// The package's declared names: its unexported types, and its
	// methods by receiver, to tell "Lock.keep" from "Lock.Fence".
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	unexported := map[string]bool{} // "quorum", "Lock.keep"
	for _, name := range pkg.GoFiles {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					if s, ok := spec.(*ast.TypeSpec); ok && !s.Name.IsExported() {
						unexported[s.Name.Name] = true
					}
				}
			case *ast.FuncDecl:
				if d.Recv != nil && !d.Name.IsExported() {
					recv := d.Recv.List[0].Type
					if s, ok := recv.(*ast.StarExpr); ok {
						recv = s.X
					}
					if id, ok := recv.(*ast.Ident); ok {
						unexported[id.Name+"."+d.Name.Name] = true
					}
				}
			}
		}
	}
	sourceFile := regexp.MustCompile(`\b\w+\.go\b`)
	dotted := regexp.MustCompile(`\b([A-Za-z]\w*)\.([A-Za-z]\w*)`)
	for i, line := range strings.Split(doc, "\n") {
		if i == 0 { // package withlock // import "github.com/with-lock/with-lock"
			continue
		}
		if f := sourceFile.FindString(line); f != "" {
			t.Errorf("go doc names the source file %s: %q", f, strings.TrimSpace(line))
		}
		for _, m := range dotted.FindAllStringSubmatch(line, -1) {
			if unexported[m[1]] || unexported[m[0]] {
				t.Errorf("go doc names the unexported %s: %q", m[0], strings.TrimSpace(line))
			}
		}
	}
}
