package config_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// bashCompletion is the library bash-completion ships, which the
// completion's _init_completion, _filedir and _command_offset come from.
const bashCompletion = "/usr/share/bash-completion/bash_completion"

// The completions written from the settings table complete, in the
// shells themselves: a flag's values, its paths, the flags, and the
// command after the lock's name, also after flags that take a value (the
// word after one is its value, not the lock's name). make test installs
// the shells (make shells); under go test -short one that is missing is
// left out, else it fails the test.
func TestCompletionsCompleteInTheirShells(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sup.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		words  []string // the last is the word being completed
		want   []string // offered, each of them
		unwant []string // not offered
	}{
		{[]string{"with-lock", "--on-lost", ""}, []string{"term", "ignore", "reacquire"}, nil},
		{[]string{"with-lock", "--stop-signal", ""}, []string{"TERM", "KILL", "USR1"}, []string{"STOP"}},
		{[]string{"with-lock", "--log-format", ""}, []string{"text", "json"}, nil},
		{[]string{"with-lock", "--on-l"}, []string{"--on-lost"}, nil},
		{[]string{"with-lock", "--max-age", "1h", "--warn-a"}, []string{"--warn-age"}, nil},
		{[]string{"with-lock", "-w", "5", "job", "ech"}, []string{"echo"}, nil},
		{[]string{"with-lock", "--metrics-dir", filepath.Join(dir, "su")}, []string{filepath.Join(dir, "sub")}, []string{filepath.Join(dir, "sup.txt")}},
		{[]string{"with-lock", "--config", filepath.Join(dir, "su")}, []string{filepath.Join(dir, "sub"), filepath.Join(dir, "sup.txt")}, nil},
	} {
		for _, shell := range []string{"bash", "fish"} {
			got, ok := complete(t, shell, tc.words)
			if !ok {
				continue
			}
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("%s completes %q with %q, want %q among them", shell, tc.words, got, w)
				}
			}
			for _, w := range tc.unwant {
				if slices.Contains(got, w) {
					t.Errorf("%s completes %q with %q, want no %q", shell, tc.words, got, w)
				}
			}
		}
	}
}

// missing reports what is not installed: a failure, but under -short.
func missing(t *testing.T, what string) {
	t.Helper()
	if !testing.Short() {
		t.Fatalf("%s is not installed: run make shells", what)
	}
	t.Logf("%s is not installed: its completion is not checked under -short", what)
}

// complete returns what shell offers for the last of words, typed after
// the others, with the completion of packaging/completions loaded; false
// when the shell is not installed.
func complete(t *testing.T, shell string, words []string) ([]string, bool) {
	t.Helper()
	completions := filepath.Join("..", "..", "packaging", "completions")
	var script string
	switch shell {
	case "bash":
		if _, err := os.Stat(bashCompletion); err != nil {
			missing(t, "bash-completion ("+bashCompletion+")")
			return nil, false
		}
		script = `source ` + bashCompletion + ` && source "$0" || exit 1
COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
_with_lock 2>/dev/null
printf '%s\n' "${COMPREPLY[@]}"`
	case "fish":
		script = `source $argv[1]; or exit 1; complete -C (string join ' ' -- $argv[2..-1]) | string replace -r '\t.*' ''; true`
	}
	path, err := exec.LookPath(shell)
	if err != nil {
		missing(t, shell)
		return nil, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := append([]string{"-c", script, filepath.Join(completions, map[string]string{"bash": "with-lock.bash", "fish": "with-lock.fish"}[shell])}, words...)
	out, err := exec.CommandContext(ctx, path, args...).Output()
	if err != nil {
		t.Fatalf("%s completing %q: %v", shell, words, err)
	}
	var offered []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		offered = append(offered, strings.TrimSuffix(line, "/")) // fish ends a directory with /
	}
	return offered, true
}
