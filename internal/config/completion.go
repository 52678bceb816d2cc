package config

import (
	"embed"
	"io"
	"strings"
	"text/template"

	"github.com/spf13/pflag"
)

// The shells' completions (packaging/completions) are written from the
// settings table by make docs: every flag, whether it takes a value, the
// values it takes, and its help as the description. What the shells share
// is here; each shell's file is a template in completions/, filled in by
// completion_<shell>.go.

//go:embed completions/*.tmpl
var completionTemplates embed.FS

// writeCompletion fills in the template completions/<file>.tmpl.
func writeCompletion(w io.Writer, file string, fields map[string]string) error {
	t, err := template.ParseFS(completionTemplates, "completions/"+file+".tmpl")
	if err != nil {
		return err
	}
	return t.Option("missingkey=error").Execute(w, fields)
}

// A compFlag is one flag as a completion offers it.
type compFlag struct {
	long, short string
	value       string   // the value's name (DUR, FILE), "" for a flag that takes none
	choices     []string // the values it takes; nil for any
	help        string   // --help's line, without the `quotes` around the value's name
	list        bool     // repeatable
}

// path says what a value is completed with: "file", "dir", or "" for
// nothing the shell can offer.
func (f compFlag) path() string {
	switch f.value {
	case "FILE":
		return "file"
	case "DIR":
		return "dir"
	}
	return ""
}

// names are the flag's spellings, the short one first.
func (f compFlag) names() []string {
	if f.short != "" {
		return []string{"-" + f.short, "--" + f.long}
	}
	return []string{"--" + f.long}
}

// exits reports whether the flag ends with-lock before anything else is
// read (--help, --version): zsh then offers nothing after it.
func (f compFlag) exits() bool { return f.long == "help" || f.long == "version" }

// completionFlags are every flag of the settings table, in --help order.
func completionFlags() []compFlag {
	c := &Config{}
	fs := newFlagSet(c)
	var flags []compFlag
	for _, g := range settings(c) {
		for _, s := range g.settings {
			value, _ := pflag.UnquoteUsage(fs.Lookup(s.name))
			if _, ok := s.field.(*bool); ok {
				value = ""
			}
			flags = append(flags, compFlag{long: s.name, short: s.short, value: value, choices: s.choices,
				help: strings.ReplaceAll(s.help, "`", ""), list: s.list})
		}
	}
	return flags
}

// valueFlags are the spellings of every flag that takes a value: the word
// after one is that value, not the lock's name.
func valueFlags(flags []compFlag) []string {
	var names []string
	for _, f := range flags {
		if f.value != "" {
			names = append(names, f.names()...)
		}
	}
	return names
}

// wrapWords joins words with sep into lines of at most width characters,
// each after the first starting with indent.
func wrapWords(words []string, sep, lineEnd, indent string, width int) string {
	var b strings.Builder
	line := 0
	for i, w := range words {
		if i > 0 {
			if line+len(sep)+len(w) > width {
				b.WriteString(lineEnd + "\n" + indent)
				line = len(indent)
			} else {
				b.WriteString(sep)
				line += len(sep)
			}
		}
		b.WriteString(w)
		line += len(w)
	}
	return b.String()
}
