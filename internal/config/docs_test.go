package config_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/with-lock/with-lock/internal/config"
)

// The README and the guides are read as the manual: a flag or variable
// they name that with-lock does not have sends a reader after nothing.
// These tests read them from the module's root.

// docs returns the README and every guide in docs/, by path.
func docs(t *testing.T) map[string]string {
	t.Helper()
	paths, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(paths) < 3 {
		t.Fatalf("docs/ holds %d guides (%v), want the README's guides there", len(paths), err)
	}
	texts := map[string]string{}
	for _, p := range append(paths, "../../README.md") {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		texts[strings.TrimPrefix(p, "../../")] = string(b)
	}
	return texts
}

// otherPrograms' flags that the docs name beside their program, on the
// same line: the flag is that program's, not with-lock's.
var otherPrograms = map[string]string{
	"--failed":           "systemctl",
	"--now":              "systemctl",
	"--ignore-missing":   "sha256sum",
	"--user":             "unshare",
	"--map-current-user": "unshare",
	"--pid":              "unshare",
	"--fork":             "unshare",
	"--mount-proc":       "unshare",
	// docs/kubernetes.md: a job image's Containerfile and its Secret.
	"--from":                  "COPY",
	"--no-install-recommends": "apt-get",
	"--from-file":             "kubectl",
	// docs/long-jobs.md: where a job's scope comes from.
	"--scope": "systemd-run",
}

// Every --flag in the README and the guides is one of with-lock's (a
// hidden old TLS name included), or another program's named on its line;
// a link's anchor (#--min-hold-dur-...) is not a flag.
func TestDocsNameOnlyFlagsThatExist(t *testing.T) {
	flag := regexp.MustCompile(`(?:^|[^A-Za-z0-9_#-])(--[a-z][a-z0-9-]*)`)
	seen := 0
	for path, text := range docs(t) {
		for n, line := range strings.Split(text, "\n") {
			for _, m := range flag.FindAllStringSubmatch(line, -1) {
				seen++
				name := m[1]
				if program, ok := otherPrograms[name]; ok && strings.Contains(line, program+" ") {
					continue
				}
				if !config.IsFlag(name) {
					t.Errorf("%s:%d names %s, which with-lock does not have: %s", path, n+1, name, line)
				}
			}
		}
	}
	if seen < 100 {
		t.Errorf("found %d flags in the docs; the pattern must have stopped finding them", seen)
	}
}

// Every WITH_LOCK_* variable in the README and the guides is one that
// with-lock reads, or one it gives the command.
func TestDocsNameOnlyVariablesThatExist(t *testing.T) {
	known := map[string]bool{
		config.EnvConfig: true, config.EnvPassword: true, config.EnvSentinelPassword: true,
		config.EnvLockName: true, config.EnvLockKey: true, config.EnvLockToken: true,
		config.EnvLockFence: true, config.EnvLockSlot: true,
	}
	for _, v := range config.Env() {
		known[v] = true
	}
	variable := regexp.MustCompile(`WITH_LOCK_[A-Z0-9_]*[A-Z0-9]`)
	seen := 0
	for path, text := range docs(t) {
		for n, line := range strings.Split(text, "\n") {
			for _, name := range variable.FindAllString(line, -1) {
				seen++
				if !known[name] {
					t.Errorf("%s:%d names %s, which with-lock neither reads nor sets: %s", path, n+1, name, line)
				}
			}
		}
	}
	if seen < 20 {
		t.Errorf("found %d variables in the docs; the pattern must have stopped finding them", seen)
	}
}

// --help and the man page list every exit code of the README's table.
func TestHelpAndManPageListEveryExitCodeOfTheReadme(t *testing.T) {
	readme := docs(t)["README.md"]
	_, table, ok := strings.Cut(readme, "\n### Exit codes\n")
	if !ok {
		t.Fatal("README.md has no Exit codes section")
	}
	table, _, _ = strings.Cut(table, "\n#")
	codes := regexp.MustCompile(`(?m)^\| (\d+) \|`).FindAllStringSubmatch(table, -1)
	if len(codes) < 10 {
		t.Fatalf("the README's exit-code table has %d numeric codes; the pattern must have stopped finding them", len(codes))
	}
	var help bytes.Buffer
	config.Usage(&help)
	_, helpCodes, ok := strings.Cut(help.String(), "\nExit codes: ")
	if !ok {
		t.Fatal("--help has no Exit codes paragraph")
	}
	helpCodes, _, _ = strings.Cut(helpCodes, "\n\n")
	man, err := os.ReadFile("../../packaging/with-lock.1")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range codes {
		code := m[1]
		if !regexp.MustCompile(`(^|\s)` + code + `\s`).MatchString(helpCodes) {
			t.Errorf("--help's exit codes leave out %s: %q", code, helpCodes)
		}
		if !strings.Contains(string(man), "\n.B "+code+"\n") {
			t.Errorf("the man page's EXIT STATUS leaves out %s", code)
		}
	}
}
