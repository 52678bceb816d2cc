// Package serverinfo reads the text of Redis's INFO: its fields, and the
// one statement of when a server may evict a lock, which the library's
// warnings and the CLI's --doctor both judge by.
package serverinfo

import "strings"

// Fields are INFO's "name:value" lines by name; the "# Section" headers
// and blank lines are skipped.
func Fields(info string) map[string]string {
	f := map[string]string{}
	for line := range strings.Lines(info) {
		line = strings.TrimRight(line, "\r\n")
		if line == "" || line[0] == '#' {
			continue
		}
		if name, value, ok := strings.Cut(line, ":"); ok {
			f[name] = value
		}
	}
	return f
}

// EvictingPolicy reads the text of INFO (its memory section): its
// maxmemory_policy when the server may evict keys that have a TTL, as
// every lock has (any policy but noeviction, volatile-* and allkeys-*
// alike), with a maxmemory set; else "". A 64-bit server with maxmemory 0
// never evicts; a 32-bit one reports the 3 GB it then sets itself.
func EvictingPolicy(info string) string {
	f := Fields(info)
	maxmemory, policy := f["maxmemory"], f["maxmemory_policy"]
	if maxmemory == "" || maxmemory == "0" || policy == "" || policy == "noeviction" {
		return ""
	}
	return policy
}
