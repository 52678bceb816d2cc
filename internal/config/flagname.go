package config

import "strings"

// IsFlag reports whether arg is one of with-lock's flags: "--ttl",
// "--ttl=45s", "-q", "-qv", "-w5m". A command named so is most likely a
// flag put after the lock's name, where it belongs to the command.
func IsFlag(arg string) bool {
	fs := newFlagSet(&Config{})
	switch {
	case strings.HasPrefix(arg, "--") && len(arg) > 2:
		name, _, _ := strings.Cut(arg[2:], "=")
		return fs.Lookup(name) != nil
	case strings.HasPrefix(arg, "-") && len(arg) > 1:
		return fs.ShorthandLookup(arg[1:2]) != nil
	}
	return false
}
