package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
	"github.com/spf13/pflag"
)

// The config file: TOML, one top-level key per setting, named as its long
// flag (ttl = "45s", redis = ["redis://a:6379/0"]). It sits between the
// variables and the defaults: a flag beats its variable, which beats the
// file.
const (
	DefaultFile = "/etc/with-lock.conf"
	EnvConfig   = "WITH_LOCK_CONFIG"
)

// defaultFile is DefaultFile; tests point it elsewhere.
var defaultFile = DefaultFile

// maxFile bounds the config file: anything larger is not one.
const maxFile = 1 << 20

// applyFile reads the config file and fills each setting that neither a
// flag nor a variable set. A missing DefaultFile is no file; a file named
// by --config or WITH_LOCK_CONFIG must exist. Every key is checked, even
// one a flag overrides. Errors wrap ErrConfig and say file:line and key.
func (c *Config) applyFile(flags *pflag.FlagSet) error {
	if c.File == "" {
		return nil
	}
	data, err := os.ReadFile(c.File)
	switch {
	case errors.Is(err, fs.ErrNotExist) && c.source("config") == fromDefault:
		return nil
	case err != nil:
		return fmt.Errorf("%w: %s %s: %w", ErrConfig, c.origin("config"), c.File, errors.Unwrap(err))
	case len(data) > maxFile:
		return fmt.Errorf("%w: %s is too large for a config file", ErrConfig, c.File)
	}
	c.fileRead = true
	values := map[string]any{}
	if err := toml.Unmarshal(data, &values); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			line, _ := de.Position()
			return fmt.Errorf("%w: %s:%d: %s", ErrConfig, c.File, line, strings.TrimPrefix(de.Error(), "toml: "))
		}
		return fmt.Errorf("%w: %s: %w", ErrConfig, c.File, err)
	}
	lines, err := keyLines(data)
	if err != nil {
		return fmt.Errorf("%w: %s:%w", ErrConfig, c.File, err)
	}
	c.fileLines = lines
	known := map[string]setting{}
	for _, g := range settings(c) {
		for _, s := range g.settings {
			if s.inFile() {
				known[s.name] = s
			}
		}
	}
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return lines[keys[i]] < lines[keys[j]] })
	for _, key := range keys {
		at := fmt.Sprintf("%s:%d: %s", c.File, lines[key], key)
		s, ok := known[key]
		switch {
		case ok:
		case renamedKey(key) != nil: // tlsalias.go
			return fmt.Errorf("%w: %s: %w", ErrConfig, at, renamedKey(key))
		case key == "password" || key == "sentinel-password":
			return fmt.Errorf("%w: %s: a password does not go in the config file; use %s-file (mode 0600) or $%s",
				ErrConfig, at, key, map[string]string{"password": EnvPassword, "sentinel-password": EnvSentinelPassword}[key])
		default:
			return fmt.Errorf("%w: %s: unknown setting (the keys are the long flags' names, see with-lock --help)", ErrConfig, at)
		}
		if err := c.setFromFile(flags, s, values[key]); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrConfig, at, err)
		}
	}
	if c.source("redis") == fromFile && hasPassword(c.RedisURLs...) {
		c.Warnings = append(c.Warnings, c.origin("redis")+": a password in the URL can be read by anyone who can read the file; use password-file")
	}
	return nil
}

// setFromFile gives setting s the file's value v, of the TOML type its
// flag's type calls for, unless a flag or variable set it.
func (c *Config) setFromFile(flags *pflag.FlagSet, s setting, v any) error {
	var text string
	switch s.field.(type) {
	case *string:
		str, ok := v.(string)
		if !ok {
			return wrongType(v, `a string such as "text"`)
		}
		text = str
	case *bool:
		b, ok := v.(bool)
		if !ok {
			return wrongType(v, "true or false")
		}
		text = strconv.FormatBool(b)
	case *int:
		n, ok := v.(int64)
		if !ok {
			return wrongType(v, "a whole number")
		}
		text = strconv.FormatInt(n, 10)
	case *time.Duration:
		switch d := v.(type) {
		case string:
			text = d
		case int64:
			text = strconv.FormatInt(d, 10)
		case float64:
			text = strconv.FormatFloat(d, 'f', -1, 64)
		default:
			return wrongType(v, `a duration such as "45s" or a number of seconds`)
		}
	case *[]string:
		list, err := stringList(v)
		if err != nil {
			return err
		}
		if c.source(s.name) > fromFile {
			return nil
		}
		*s.field.(*[]string) = list
		c.sources[s.name] = fromFile
		return nil
	}
	if c.source(s.name) > fromFile {
		return nil
	}
	if err := flags.Lookup(s.name).Value.Set(text); err != nil {
		return fmt.Errorf("%q: %w", text, err)
	}
	c.sources[s.name] = fromFile
	return nil
}

// stringList reads a list setting: an array of strings, or one string.
func stringList(v any) ([]string, error) {
	const want = `a list of strings such as ["a", "b"]`
	switch v := v.(type) {
	case string:
		return []string{v}, nil
	case []any:
		list := make([]string, 0, len(v))
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, wrongType(e, want)
			}
			list = append(list, s)
		}
		return list, nil
	}
	return nil, wrongType(v, want)
}

func wrongType(v any, want string) error {
	return fmt.Errorf("expected %s, not %s", want, tomlType(v))
}

// tomlType names a decoded TOML value's type as the TOML spec does.
func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return "a date or time"
}

// keyLines returns the line of each top-level key of a TOML document
// that toml.Unmarshal accepted. A [table] holds no setting: its header is
// an error (" LINE: message", to follow the file's name).
func keyLines(data []byte) (map[string]int, error) {
	lines := map[string]int{}
	var p unstable.Parser
	p.Reset(data)
	for p.NextExpression() {
		e := p.Expression()
		if e.Kind != unstable.KeyValue && e.Kind != unstable.Table && e.Kind != unstable.ArrayTable {
			continue
		}
		var parts []string
		line := 0
		for it := e.Key(); it.Next(); {
			k := it.Node()
			if line == 0 {
				line = p.Shape(k.Raw).Start.Line
			}
			parts = append(parts, string(k.Data))
		}
		if e.Kind != unstable.KeyValue {
			return nil, fmt.Errorf("%d: [%s]: the file has no sections; write each setting as a top-level key", line, strings.Join(parts, "."))
		}
		if _, ok := lines[parts[0]]; !ok {
			lines[parts[0]] = line
		}
	}
	if err := p.Error(); err != nil {
		return nil, fmt.Errorf(" %w", err) // toml.Unmarshal reported it first
	}
	return lines, nil
}
