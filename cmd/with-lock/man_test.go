package main

// What the man page, the completions and --version show.

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime/debug"
	"sort"
	"strings"
	"testing"

	"github.com/with-lock/with-lock/internal/clitest"
)

// manSection returns the text of with-lock.1 from the line starting with
// start up to the next line starting with a roff request in next.
func manSection(t *testing.T, start string, next ...string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "packaging", "with-lock.1"))
	if err != nil {
		t.Fatal(err)
	}
	man := string(data)
	i := strings.Index(man, "\n"+start)
	if i < 0 {
		t.Fatalf("with-lock.1 has no line %q", start)
	}
	rest := man[i+1+len(start):]
	end := len(rest)
	for _, n := range next {
		if j := strings.Index(rest, "\n"+n); j >= 0 && j < end {
			end = j
		}
	}
	return rest[:end]
}

// Every WITH_LOCK_* variable the binary reads or sets for the command is
// in the man page's ENVIRONMENT: the variables are found in the source of
// the binary (the CLI and its config package), so a new one cannot be
// forgotten.
func TestManPageNamesEveryVariable(t *testing.T) {
	t.Parallel()
	env := manSection(t, ".SH ENVIRONMENT", ".SH ")
	vars := map[string]bool{}
	literal := regexp.MustCompile(`"(WITH_LOCK_[A-Z0-9_]*[A-Z0-9])"`)
	for _, dir := range []string{".", filepath.Join("..", "..", "internal", "config")} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range literal.FindAllStringSubmatch(string(src), -1) {
				vars[m[1]] = true
			}
		}
	}
	if len(vars) < 20 {
		t.Fatalf("found only %d variables in the source: %v", len(vars), vars)
	}
	names := make([]string, 0, len(vars))
	for v := range vars {
		names = append(names, v)
	}
	sort.Strings(names)
	for _, v := range names {
		// Whole name only: WITH_LOCK_SENTINEL must not be satisfied by
		// WITH_LOCK_SENTINEL_MASTER.
		if !regexp.MustCompile(`(?:^|[^A-Z0-9_])` + v + `(?:[^A-Z0-9_]|$)`).MatchString(env) {
			t.Errorf("with-lock.1's ENVIRONMENT does not name %s, which the binary reads or sets", v)
		}
	}
}

// The man page's --json and --log-format paragraphs name every field the
// JSON output has, and --json every action it goes with.
func TestManPageNamesEveryJSONField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		flag  string
		types []reflect.Type
	}{
		{`.B \-\-json`, []reflect.Type{reflect.TypeFor[statusJSON](), reflect.TypeFor[printConfigJSON]()}},
		{`.BI \-\-log\-format`, []reflect.Type{reflect.TypeFor[entry](), reflect.TypeFor[fields]()}},
	} {
		text := manSection(t, tc.flag, ".TP", ".SH ")
		text = strings.ReplaceAll(text, `\-`, "-")
		if tc.flag == `.B \-\-json` {
			for _, action := range []string{"--status", "--list", "--print-config"} { // validateActions
				if !strings.Contains(text, action) {
					t.Errorf("with-lock.1's --json does not say it goes with %s", action)
				}
			}
		}
		for _, typ := range tc.types {
			for i := range typ.NumField() {
				name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
				if name == "" || name == "-" {
					continue // an embedded struct: its fields are checked on their own
				}
				if !regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`).MatchString(text) {
					t.Errorf("with-lock.1's %s does not name the JSON field %s", tc.flag, name)
				}
			}
		}
	}
}

// TestCompletionsListEveryFlag keeps the shell completions (make docs) in
// packaging/completions and the man page in step with the flags: every long
// flag --help prints must be offered by the bash, zsh and fish completion
// and documented in with-lock.1.
func TestCompletionsListEveryFlag(t *testing.T) {
	t.Parallel()
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

func TestVersionFromBuildInfo(t *testing.T) {
	t.Parallel()
	const rev = "0123456789abcdef0123456789abcdef01234567"
	vcs := func(modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for _, tc := range []struct {
		name string
		info debug.BuildInfo
		want string
	}{
		{"go install of a tagged module", debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: vcs("false")}, "v1.2.3"},
		{"go build in a checkout stamps a pseudo-version", debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20251130150200-0123456789ab+dirty"}}, "v0.0.0-20251130150200-0123456789ab+dirty"},
		{"clean revision", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("false")}, "0123456789ab"},
		{"modified revision", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("true")}, "0123456789ab-dirty"},
		{"no version and no VCS", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "(devel)"},
	} {
		if got := versionFromBuildInfo(&tc.info); got != tc.want {
			t.Errorf("%s: versionFromBuildInfo = %q, want %q", tc.name, got, tc.want)
		}
	}
}
