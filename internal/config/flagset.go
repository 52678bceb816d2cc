package config

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// define adds s to fs, bound to its field.
func (s *setting) define(fs *pflag.FlagSet) {
	help := s.help
	if s.env != "" {
		help += " [$" + s.env + "]"
	}
	switch p := s.field.(type) {
	case *string:
		def, _ := s.def.(string)
		fs.StringVarP(p, s.name, s.short, def, help)
	case *[]string:
		def, _ := s.def.([]string)
		fs.StringArrayVarP(p, s.name, s.short, def, help)
	case *bool:
		def, _ := s.def.(bool)
		fs.BoolVarP(p, s.name, s.short, def, help)
	case *int:
		def, _ := s.def.(int)
		fs.IntVarP(p, s.name, s.short, def, help)
	case *time.Duration:
		def, _ := s.def.(time.Duration)
		fs.VarP(newDurationValue(def, p), s.name, s.short, help)
		// As the man page writes it: 720h, not 720h0m0s; and "0", which
		// pflag takes for no default, not "0s", which only its own
		// durations' may be.
		f := fs.Lookup(s.name)
		f.DefValue = manDefault(def)
		if def == 0 {
			f.DefValue = "0"
		}
	default:
		panic(fmt.Sprintf("setting --%s: unsupported field type %T", s.name, s.field))
	}
}

// inFile reports whether the config file may set s: every setting that
// has a variable, except those only the command line and environment set.
func (s *setting) inFile() bool { return s.env != "" && !s.cli }

// source is where a setting's value came from.
type source int

// Sources from the weakest to the strongest: a flag beats its variable,
// which beats the config file, which beats the built-in default.
const (
	fromDefault source = iota
	fromFile
	fromEnv
	fromFlag
)

func (s source) String() string {
	return [...]string{"default", "file", "environment", "flag"}[s]
}

// newFlagSet returns the flag set of c: every setting, in --help order.
func newFlagSet(c *Config) *pflag.FlagSet {
	fs := pflag.NewFlagSet("with-lock", pflag.ContinueOnError)
	fs.SetInterspersed(false) // everything after the name belongs to the command
	fs.SetOutput(io.Discard)  // errors are reported once, by the caller
	fs.SortFlags = false
	fs.SetNormalizeFunc(oldTLSFlag) // tlsalias.go
	for _, g := range settings(c) {
		for i := range g.settings {
			g.settings[i].define(fs)
		}
	}
	return fs
}

// applyEnv fills each setting not given as a flag from its variable, if
// set and not empty, parsed as the flag would be, and records in c where
// every setting's value came from.
func (c *Config) applyEnv(fs *pflag.FlagSet, getenv func(string) string) error {
	c.sources = map[string]source{}
	for _, g := range settings(c) {
		for _, s := range g.settings {
			f := fs.Lookup(s.name)
			v := ""
			if s.env != "" {
				v = getenv(s.env)
			}
			switch {
			case f.Changed:
				c.sources[s.name] = fromFlag
				continue
			case v == "":
				continue
			}
			values := []string{v}
			if s.list {
				values = strings.Fields(v)
			}
			for _, v := range values {
				// Value.Set, not fs.Set: the flag stays unchanged, and
				// the error does not call the variable a flag.
				if err := f.Value.Set(v); err != nil {
					return fmt.Errorf("%s: %q: %w", s.env, v, envValueError(s, err))
				}
			}
			c.sources[s.name] = fromEnv
		}
	}
	return nil
}

// envValueError says what a variable of s takes, for the types whose
// parser's error names only itself (strconv.ParseBool: parsing "yes":
// invalid syntax), as the durations' error does; others are err.
func envValueError(s setting, err error) error {
	switch s.field.(type) {
	case *bool:
		return errors.New("expected true or false (or 1 or 0)")
	case *int:
		return errors.New("expected a whole number")
	}
	return err
}

// source says where the setting named by its flag came from.
func (c *Config) source(name string) source { return c.sources[name] }

// origin names a setting in a message as the user gave it: its flag, its
// variable when the value came from the environment, or the file, line
// and key when it came from the config file.
func (c *Config) origin(name string) string {
	switch c.source(name) {
	case fromEnv:
		return lookup(name).env
	case fromFile:
		return fmt.Sprintf("%s:%d: %s", c.File, c.fileLines[name], name)
	}
	return "--" + name
}

// lookup returns the setting named by its flag.
func lookup(name string) setting {
	for _, g := range settings(&Config{}) {
		for _, s := range g.settings {
			if s.name == name {
				return s
			}
		}
	}
	panic("no setting --" + name)
}
