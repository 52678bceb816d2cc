package config

import (
	"io"
	"strings"
)

// WriteZshCompletion writes packaging/completions/_with-lock: one
// _arguments spec per flag, then the lock's name and the command.
func WriteZshCompletion(w io.Writer) error {
	var specs []string
	for _, f := range completionFlags() {
		specs = append(specs, "  "+zshSpec(f)+" \\")
	}
	return writeCompletion(w, "_with-lock", map[string]string{"Flags": strings.Join(specs, "\n")})
}

// zshSpec is f's _arguments spec, quoted for the shell:
// '(-w --wait)'{-w+,--wait=}'[help]:dur:'.
func zshSpec(f compFlag) string {
	var exclude, names string
	switch {
	case f.exits():
		exclude = "(- *)"
	case f.short != "":
		exclude = "(" + strings.Join(f.names(), " ") + ")"
	case f.list:
		exclude = "*"
	}
	suffix := ""
	if f.value != "" {
		suffix = "="
	}
	names = "--" + f.long + suffix
	if f.short != "" {
		short := "-" + f.short
		if f.value != "" {
			short += "+"
		}
		names = "{" + short + "," + names + "}"
	}
	spec := "[" + zshEscape(f.help) + "]"
	if f.value != "" {
		action := ""
		switch {
		case f.choices != nil:
			action = "(" + strings.Join(f.choices, " ") + ")"
		case f.path() == "file":
			action = "_files"
		case f.path() == "dir":
			action = "_directories"
		}
		spec += ":" + strings.ReplaceAll(strings.ToLower(f.value), ":", `\:`) + ":" + action
	}
	if f.short != "" {
		return shellQuote(exclude) + names + shellQuote(spec)
	}
	return shellQuote(exclude + names + spec)
}

// zshEscape escapes what would end _arguments' [description] early.
func zshEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "[", `\[`, "]", `\]`).Replace(s)
}

// shellQuote quotes s in single quotes for sh and zsh; "" stays empty.
func shellQuote(s string) string {
	if s == "" {
		return ""
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}
