package testbed

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// defaultMirror is used where apt's sources name none for the suite.
const defaultMirror = "http://deb.debian.org/debian"

// aptMirror is the mirror this machine's apt uses for suite: the first
// "deb" source that lists it, in /etc/apt/sources.list and then
// sources.list.d (one-line .list files and deb822 .sources files).
func aptMirror(suite string) string {
	files := []string{"/etc/apt/sources.list"}
	for _, pattern := range []string{"*.list", "*.sources"} {
		m, _ := filepath.Glob(filepath.Join("/etc/apt/sources.list.d", pattern))
		files = append(files, m...)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var uri string
		if strings.HasSuffix(f, ".sources") {
			uri = mirrorIn822(string(b), suite)
		} else {
			uri = mirrorInList(string(b), suite)
		}
		if uri != "" {
			return uri
		}
	}
	return defaultMirror
}

// mirrorInList finds suite in one-line sources: "deb [opts] URI SUITE COMP...".
func mirrorInList(text, suite string) string {
	for _, line := range strings.Split(text, "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "deb" {
			continue
		}
		f = f[1:]
		if strings.HasPrefix(f[0], "[") { // options, up to the field ending in ]
			for len(f) > 0 && !strings.HasSuffix(f[0], "]") {
				f = f[1:]
			}
			if len(f) > 0 {
				f = f[1:]
			}
		}
		if len(f) >= 2 && f[1] == suite {
			return f[0]
		}
	}
	return ""
}

// mirrorIn822 finds suite in deb822 sources: stanzas of "Key: value"
// lines separated by blank lines.
func mirrorIn822(text, suite string) string {
	for _, stanza := range strings.Split(text, "\n\n") {
		fields := map[string]string{}
		for _, line := range strings.Split(stanza, "\n") {
			if strings.HasPrefix(line, "#") {
				continue
			}
			if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(k, " ") {
				fields[strings.ToLower(k)] = strings.TrimSpace(v)
			}
		}
		if strings.EqualFold(fields["enabled"], "no") ||
			!slices.Contains(strings.Fields(fields["types"]), "deb") ||
			!slices.Contains(strings.Fields(fields["suites"]), suite) {
			continue
		}
		if uris := strings.Fields(fields["uris"]); len(uris) > 0 {
			return uris[0]
		}
	}
	return ""
}
