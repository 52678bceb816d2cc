package config

import (
	"io"
	"strings"
)

// WriteFishCompletion writes packaging/completions/with-lock.fish: the
// flags until the lock's name, then the command, completed as fish would
// complete it alone.
func WriteFishCompletion(w io.Writer) error {
	flags := completionFlags()
	var lines []string
	for _, f := range flags {
		line := "complete -c with-lock -n $flags"
		if f.short != "" {
			line += " -s " + f.short
		}
		line += " -l " + f.long
		switch {
		case f.value == "":
		case f.choices != nil:
			line += " -x -a " + fishQuote(strings.Join(f.choices, " "))
		case f.path() == "file":
			line += " -r -F"
		case f.path() == "dir":
			line += " -x -a '(__fish_complete_directories)'"
		default:
			line += " -x"
		}
		lines = append(lines, line+" -d "+fishQuote(f.help))
	}
	return writeCompletion(w, "with-lock.fish", map[string]string{
		"TakeValue": wrapWords(valueFlags(flags), " ", " \\", "        ", 100),
		"Flags":     strings.Join(lines, "\n"),
	})
}

// fishQuote quotes s in single quotes for fish, where \ escapes ' and \.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s) + "'"
}
