package config

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The README's flag table is the settings most runs need, written from the
// settings table between two markers by make docs: the flags, the default
// and the help; --help and with-lock(1) have every one.
const (
	readmeBegin = "<!-- flags:begin: written by make docs from internal/config's settings table -->\n"
	readmeEnd   = "<!-- flags:end -->\n"
)

// readmeFlags are the settings the README's table shows, in --help order.
var readmeFlags = []string{
	"redis", "redis-timeout", "tls-cacert", "password-file", "sentinel", "cluster",
	"prefix", "ttl", "wait", "nonblock", "replace", "conflict-exit-code", "min-hold", "fence", "slots",
	"no-renew", "on-lost", "kill-after", "leftovers", "max-run",
	"quiet", "status", "json",
}

// readmeCode marks what the README sets as code in the help: flags (not
// the - of 0-255), <placeholders> (which markdown would take for HTML) and
// variables.
var readmeCode = regexp.MustCompile(`--[a-z][a-z0-9-]*|\B-[a-zA-Z]\b|<[a-z]+>|\$?WITH_LOCK_[A-Z_]+`)

// ReadmeWithFlags returns readme with the text between its flag table's
// markers replaced by the table the settings make.
func ReadmeWithFlags(readme []byte) ([]byte, error) {
	before, rest, ok := bytes.Cut(readme, []byte(readmeBegin))
	_, after, ok2 := bytes.Cut(rest, []byte(readmeEnd))
	if !ok || !ok2 {
		return nil, errors.New("README.md has no flag table between " + strings.TrimSpace(readmeBegin) + " and " + strings.TrimSpace(readmeEnd))
	}
	var b bytes.Buffer
	b.Write(before)
	b.WriteString(readmeBegin)
	b.WriteString(readmeTable())
	b.WriteString(readmeEnd)
	b.Write(after)
	return b.Bytes(), nil
}

// readmeTable is the markdown table of readmeFlags.
func readmeTable() string {
	var b strings.Builder
	b.WriteString("| flag | default | meaning |\n|---|---|---|\n")
	for _, f := range completionFlags() {
		if !slices.Contains(readmeFlags, f.long) {
			continue
		}
		var names []string
		for i, n := range f.names() {
			if f.value != "" && i == len(f.names())-1 {
				n += " " + f.value
			}
			names = append(names, "`"+n+"`")
		}
		def := manDefault(lookup(f.long).def)
		if def != "" {
			def = "`" + def + "`"
		}
		help := readmeCode.ReplaceAllString(f.help, "`$0`")
		fmt.Fprintf(&b, "| %s | %s | %s |\n", strings.Join(names, ", "), def, help)
	}
	return b.String()
}
