package config

import (
	_ "embed" // the man page's hand-written parts
	"fmt"
	"io"
	"strings"
	"text/template"
	"time"

	"github.com/spf13/pflag"
)

// The man page with-lock.1 is generated: its OPTIONS and the variables of
// its ENVIRONMENT come from the settings table, the rest (NAME, SYNOPSIS,
// DESCRIPTION, EXIT STATUS, EXAMPLES...) is written by hand in the
// template. make docs (or go generate) rewrites packaging/with-lock.1 with
// the other files written from the settings table (docs.go).
//
//go:generate go run ./gendocs -root ../..

//go:embed with-lock.1.tmpl
var manTemplate string

// WriteManPage writes the man page with-lock.1.
func WriteManPage(w io.Writer) error {
	tmpl, err := template.New("with-lock.1").Option("missingkey=error").Parse(manTemplate)
	if err != nil {
		return fmt.Errorf("man page template: %w", err)
	}
	c := &Config{}
	fs := newFlagSet(c)
	text := manText()
	var options, vars, other, none []string
	for _, g := range settings(c) {
		options = append(options, ".SS "+g.title)
		for _, s := range g.settings {
			options = append(options, manEntry(s, fs.Lookup(s.name), text[s.name]))
			switch {
			case s.env == "":
				none = append(none, `\-\-`+roffDashes(s.name))
			case s.env == EnvConfig || s.env == EnvRedis: // an entry of their own
			case s.env == envName(s.name):
				vars = append(vars, manVariable(s, ""))
			default:
				other = append(other, manVariable(s, `\-\-`+roffDashes(s.name)))
			}
		}
	}
	return tmpl.Execute(w, map[string]string{
		"Options":        strings.Join(options, "\n"),
		"Variables":      manList(vars),
		"OtherVariables": manList(other),
		"NoVariable":     strings.Join(none[:len(none)-1], ", ") + " and " + none[len(none)-1],
	})
}

// manEntry is the .TP paragraph of one setting: its flags, its
// description (the help when the man page has none of its own), its
// default, and its variable.
func manEntry(s setting, f *pflag.Flag, text string) string {
	valueName, help := pflag.UnquoteUsage(f)
	if _, ok := s.field.(*bool); ok {
		valueName = ""
	}
	var head string
	switch {
	case s.short != "" && valueName != "":
		head = fmt.Sprintf(`.BR \-%s ", " \-\-%s " \fI%s\fR"`, s.short, roffDashes(s.name), valueName)
	case s.short != "":
		head = fmt.Sprintf(`.BR \-%s ", " \-\-%s`, s.short, roffDashes(s.name))
	case valueName != "":
		head = fmt.Sprintf(`.BI \-\-%s " %s"`, roffDashes(s.name), valueName)
	default:
		head = `.B \-\-` + roffDashes(s.name)
	}
	if text == "" {
		text = roffDashes(strings.ToUpper(help[:1])+help[1:]) + "."
	}
	lines := []string{".TP", head, text}
	def := manDefault(s.def)
	if s.env == EnvConfig {
		def = DefaultFile // not defaultFile, which tests point elsewhere
	}
	if def != "" {
		lines = append(lines, fmt.Sprintf(`.RB "Default: " "%s" .`, roffDashes(def)))
	}
	if s.env != "" {
		env := fmt.Sprintf(`.RB "Environment: " %s .`, s.env)
		if s.list {
			env = fmt.Sprintf(`.RB "Environment: " %s ", the values separated by spaces."`, s.env)
		}
		lines = append(lines, env)
	}
	return strings.Join(lines, "\n")
}

// manVariable is one line of the ENVIRONMENT's lists of variables, with
// the flag it sets when its name does not say it.
func manVariable(s setting, flag string) string {
	var notes []string
	if flag != "" {
		notes = append(notes, flag)
	}
	if s.list {
		notes = append(notes, "values separated by spaces")
	}
	if len(notes) == 0 {
		return ".BR " + s.env
	}
	return fmt.Sprintf(`.BR %s " (%s)`, s.env, strings.Join(notes, "; "))
}

// manList ends every line of a list with a comma, the last with a period,
// inside the quotes of a line that has them.
func manList(lines []string) string {
	for i, l := range lines {
		p := ","
		if i == len(lines)-1 {
			p = "."
		}
		if strings.HasSuffix(l, `)`) && strings.Contains(l, `"`) {
			lines[i] = l + p + `"`
		} else {
			lines[i] = l + " " + p
		}
	}
	return strings.Join(lines, "\n")
}

// manDefault is a setting's default as the man page writes it; "" for
// none (the zero value).
func manDefault(def any) string {
	switch d := def.(type) {
	case nil:
		return ""
	case []string:
		return strings.Join(d, " ")
	case time.Duration:
		s := d.String() // 720h0m0s: written as 720h
		if strings.HasSuffix(s, "m0s") {
			s = strings.TrimSuffix(s, "0s")
		}
		if strings.HasSuffix(s, "h0m") {
			s = strings.TrimSuffix(s, "0m")
		}
		return s
	case bool:
		if !d {
			return ""
		}
	}
	return fmt.Sprint(def)
}

// envName is the variable a flag's name gives: WITH_LOCK_ and the name in
// capitals with - as _.
func envName(flag string) string {
	return "WITH_LOCK_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// manText returns, by flag name, the description of each setting in the
// man page's OPTIONS that has one longer than its help (setting.man).
func manText() map[string]string {
	text := map[string]string{}
	for _, g := range settings(new(Config)) {
		for _, s := range g.settings {
			if s.man != "" {
				text[s.name] = s.man
			}
		}
	}
	return text
}

// roffDashes writes s's hyphens as roff's \-, which man prints as the
// minus sign a flag is typed with.
func roffDashes(s string) string { return strings.ReplaceAll(s, "-", `\-`) }
