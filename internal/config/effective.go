package config

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/pelletier/go-toml/v2"
)

// Effective is one setting as --print-config shows it.
type Effective struct {
	Name   string `json:"name"`   // the long flag, and the config file's key
	Value  any    `json:"value"`  // string, bool, int or []string; durations as "30s"; passwords as ***
	Source string `json:"source"` // "default", "file PATH:LINE", "env VAR" or "flag --NAME"
}

// Effective returns every setting the config file can set, in --help
// order, with its value and where that came from. Passwords in URLs are
// masked.
func (c *Config) Effective() []Effective {
	var out []Effective
	for _, g := range settings(c) {
		for _, s := range g.settings {
			if !s.inFile() {
				continue
			}
			e := Effective{Name: s.name, Source: c.describeSource(s)}
			switch p := s.field.(type) {
			case *string:
				e.Value = *p
			case *bool:
				e.Value = *p
			case *int:
				e.Value = *p
			case *time.Duration:
				e.Value = p.String()
			case *[]string:
				list := make([]string, len(*p))
				for i, v := range *p {
					list[i] = v
					if s.name == "redis" {
						list[i] = MaskURL(v)
					}
				}
				e.Value = list
			}
			out = append(out, e)
		}
	}
	return out
}

// FileRead reports whether the config file existed and was read.
func (c *Config) FileRead() bool { return c.fileRead }

// FileSource says where the config file's name came from, as Effective's
// Source does.
func (c *Config) FileSource() string { return c.describeSource(lookup("config")) }

// SecretSources lists where the passwords that have no setting come from,
// by name: "password" and "sentinel-password", when set.
func (c *Config) SecretSources(getenv func(string) string) map[string]string {
	m := map[string]string{}
	for _, v := range []string{EnvPassword, EnvRedisCLIAuth} {
		if getenv(v) != "" {
			m["password"] = "env " + v
			break
		}
	}
	if getenv(EnvSentinelPassword) != "" {
		m["sentinel-password"] = "env " + EnvSentinelPassword
	}
	return m
}

func (c *Config) describeSource(s setting) string {
	switch c.source(s.name) {
	case fromFile:
		return fmt.Sprintf("file %s:%d", c.File, c.fileLines[s.name])
	case fromEnv:
		return "env " + s.env
	case fromFlag:
		return "flag --" + s.name
	}
	if s.name == "redis" {
		return "default: locks only against a Redis on this host"
	}
	return "default"
}

// MaskURL returns raw with its password, if any, replaced by ***.
func MaskURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		if _, ok := u.User.Password(); ok {
			// Redacted writes "xxxxx"; its own escaping keeps *** from a URL.
			return strings.Replace(u.Redacted(), ":xxxxx@", ":***@", 1)
		}
		return raw
	}
	// Unparsable: hide whatever may be credentials.
	if i := strings.LastIndexByte(raw, '@'); i >= 0 {
		scheme, _, ok := strings.Cut(raw, "://")
		if ok {
			return scheme + "://***" + raw[i:]
		}
		return "***" + raw[i:]
	}
	return raw
}

// FormatValue writes an Effective value as a TOML value, strings in
// double quotes when they need no escapes.
func FormatValue(v any) string {
	switch v := v.(type) {
	case string:
		if !strings.ContainsFunc(v, func(r rune) bool { return r == '"' || r == '\\' || unicode.IsControl(r) }) {
			return `"` + v + `"`
		}
	case []string:
		parts := make([]string, len(v))
		for i, s := range v {
			parts[i] = FormatValue(s)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case bool:
		return strconv.FormatBool(v)
	case int:
		return strconv.Itoa(v)
	}
	b, err := toml.Marshal(map[string]any{"v": v})
	if err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSpace(strings.TrimPrefix(string(b), "v = "))
}
