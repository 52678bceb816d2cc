package config

import (
	"fmt"
	"io"
	"strings"
)

// WriteBashCompletion writes packaging/completions/with-lock.bash: flags
// until the lock's name, then the command, completed as bash would
// complete it alone.
func WriteBashCompletion(w io.Writer) error {
	flags := completionFlags()
	var values strings.Builder // a case of $prev for each flag whose values bash can offer
	var anyValue, all []string // flags whose value bash cannot offer; every flag
	for _, f := range flags {
		all = append(all, f.names()...)
		reply := ""
		switch {
		case f.value == "":
			continue
		case f.choices != nil:
			reply = fmt.Sprintf(`COMPREPLY=($(compgen -W '%s' -- "$cur"))`, strings.Join(f.choices, " "))
		case f.path() == "file":
			reply = "_filedir"
		case f.path() == "dir":
			reply = "_filedir -d"
		default:
			anyValue = append(anyValue, f.names()...)
			continue
		}
		fmt.Fprintf(&values, "        %s)\n            %s\n            return\n            ;;\n", strings.Join(f.names(), " | "), reply)
	}
	return writeCompletion(w, "with-lock.bash", map[string]string{
		"TakeValue": wrapWords(valueFlags(flags), " | ", " | \\", "                ", 100),
		"Values":    values.String(),
		"AnyValue":  wrapWords(anyValue, " | ", " | \\", "            ", 100),
		"Flags":     wrapWords(all, " ", "", "            ", 100),
	})
}
