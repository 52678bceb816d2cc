package withlock_test

// What v1 promises and tests hold it to: the exported names within their
// budget and speaking to users only, and a stored record that reads both
// ways across versions.

import (
	"context"
	"encoding/json"
	"errors"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os/exec"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	withlock "github.com/with-lock/with-lock"
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
	t.Parallel()
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
	t.Parallel()
	gotool, err := exec.LookPath("go") // go test puts its own go first in PATH
	if err != nil {
		t.Fatalf("no go tool in PATH: %v", err)
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

// The stored record's JSON reads both ways between versions: the fields a
// caller keeps in Run.Extra are stored at the top level, where versions
// that declared them as fields of Run (cpu_ms, max_rss_kb, timed_out,
// tracking) read and wrote them, so a record written by either reads with
// every field on the other. A record from before outcomes gets its outcome
// from lost, timed_out and its exit code, the first that applies (Outcome):
// a lost run that also timed out reads as lost.
func TestRecordFormatReadsBothWaysAcrossVersions(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	ctx, rdb := context.Background(), startRedis(t)
	c := withlock.New(rdb, nil)

	t.Run("written by this version, read by one before Extra", func(t *testing.T) {
		l := mustAcquire(t, c, "new-writes", time.Minute)
		run := withlock.Run{Started: at, Finished: at.Add(time.Minute), ExitCode: 124, Outcome: "timed-out", Output: "tail",
			Extra: map[string]json.RawMessage{"cpu_ms": json.RawMessage("1520"), "max_rss_kb": json.RawMessage("2048"),
				"timed_out": json.RawMessage("true"), "tracking": json.RawMessage(`"scope"`)}}
		if err := l.ReleaseAndRecord(ctx, run, time.Minute); err != nil {
			t.Fatal(err)
		}
		raw, err := rdb.Get(ctx, "{lock:new-writes}:last").Result()
		if err != nil {
			t.Fatal(err)
		}
		// A version before Extra read the record with encoding/json into a
		// Run whose fields had these JSON names, at the top level.
		var old map[string]json.RawMessage
		if err := json.Unmarshal([]byte(raw), &old); err != nil {
			t.Fatalf("the older version cannot read %s: %v", raw, err)
		}
		for name, want := range map[string]string{"holder": `"` + withlock.HolderOf(l.Token()) + `"`,
			"started": `"2026-12-01T02:00:00Z"`, "finished": `"2026-12-01T02:01:00Z"`, "exit_code": "124",
			"timed_out": "true", "outcome": `"timed-out"`, "cpu_ms": "1520", "max_rss_kb": "2048",
			"output": `"tail"`, "tracking": `"scope"`} {
			if got := string(old[name]); got != want {
				t.Errorf("the older version reads %s = %s, want %s, from %s", name, got, want, raw)
			}
		}
		// And this version reads back what it wrote.
		st, err := c.Status(ctx, "new-writes")
		if err != nil || st.LastRun == nil {
			t.Fatalf("Status = %+v, %v", st, err)
		}
		if !reflect.DeepEqual(st.LastRun.Extra, run.Extra) || st.LastRun.Outcome != "timed-out" || st.LastRun.Window != nil {
			t.Errorf("read back %+v, want Extra %s and outcome timed-out", st.LastRun, run.Extra)
		}
	})

	for _, tc := range []struct {
		name, raw   string
		outcome     withlock.Outcome
		wantMissing bool // a field the version had not: Extra is nil
	}{
		{"written by a version before Extra",
			`{"name":"old","holder":"web1:4711","started":"2026-12-01T02:00:00Z","finished":"2026-12-01T02:01:00Z","exit_code":124,` +
				`"timed_out":true,"outcome":"timed-out","cpu_ms":1520,"max_rss_kb":2048,"output":"tail","tracking":"scope","token_sha256":"0123456789abcdef"}`,
			"timed-out", false},
		{"written by a version before outcomes",
			`{"name":"old","holder":"web1:4711","started":"2026-12-01T02:00:00Z","finished":"2026-12-01T02:01:00Z","exit_code":124,` +
				`"timed_out":true,"cpu_ms":1520,"max_rss_kb":2048,"output":"tail","tracking":"scope","token_sha256":"0123456789abcdef"}`,
			"timed-out", false},
		{"written by a version before outcomes, lost as it timed out",
			`{"name":"old","holder":"web1:4711","started":"2026-12-01T02:00:00Z","finished":"2026-12-01T02:01:00Z","exit_code":124,"lost":true,` +
				`"timed_out":true,"cpu_ms":1520,"max_rss_kb":2048,"output":"tail","tracking":"scope","token_sha256":"0123456789abcdef"}`,
			withlock.OutcomeLost, false},
		{"written by a version before the CLI's fields",
			`{"name":"old","holder":"web1:4711","started":"2026-12-01T02:00:00Z","finished":"2026-12-01T02:01:00Z","exit_code":124,` +
				`"output":"tail","token_sha256":"0123456789abcdef"}`,
			withlock.OutcomeFailed, true},
	} {
		t.Run(tc.name+", read by this version", func(t *testing.T) {
			if err := rdb.Set(ctx, "{lock:old}:last", tc.raw, time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			st, err := c.Status(ctx, "old")
			if err != nil || st.LastRun == nil {
				t.Fatalf("Status = %+v, %v", st, err)
			}
			got := st.LastRun
			if got.Holder != "web1:4711" || !got.Started.Equal(at) || !got.Finished.Equal(at.Add(time.Minute)) ||
				got.ExitCode != 124 || got.Output != "tail" || got.Outcome != tc.outcome {
				t.Errorf("read %+v from %s, want its own fields and outcome %q", got, tc.raw, tc.outcome)
			}
			want := map[string]json.RawMessage{"timed_out": json.RawMessage("true"), "cpu_ms": json.RawMessage("1520"),
				"max_rss_kb": json.RawMessage("2048"), "tracking": json.RawMessage(`"scope"`)}
			if tc.wantMissing {
				want = nil
			}
			if !reflect.DeepEqual(got.Extra, want) {
				t.Errorf("Extra %s, want %s", got.Extra, want)
			}
		})
	}
}

// A caller's field may not take a name the record uses itself, nor be a
// value that is not JSON: either would read back as something else. The
// record is refused (ErrNotRecorded) and the lock released all the same.
func TestRecordRefusesExtraFieldsThatWouldNotReadBack(t *testing.T) {
	t.Parallel()
	rdb := startRedis(t)
	ctx := context.Background()
	c := withlock.New(rdb, nil)
	for _, extra := range []map[string]json.RawMessage{
		{"outcome": json.RawMessage(`"ok"`)},
		{"token_sha256": json.RawMessage(`"0"`)},
		{"name": json.RawMessage(`"x"`)},
		{"cpu_ms": json.RawMessage(`12 13`)},
		{"cpu_ms": nil},
	} {
		l := mustAcquire(t, c, "extra", time.Minute)
		err := l.ReleaseAndRecord(ctx, withlock.Run{Extra: extra}, time.Minute)
		if !errors.Is(err, withlock.ErrNotRecorded) || errors.Is(err, withlock.ErrNotReleased) || errors.Is(err, withlock.ErrLockNotHeld) {
			t.Errorf("Extra %s: %v, want ErrNotRecorded alone", extra, err)
		}
		if n := rdb.Exists(ctx, "lock:extra", "{lock:extra}:last").Val(); n != 0 {
			t.Errorf("Extra %s: %d of the lock's key and record exist, want neither", extra, n)
		}
	}
}
