package keys

import "strings"

// A lock token is "<host>:<pid>:<start>.<random>": the random part proves
// ownership and must never be shown; host and pid name the holder.

// Holder is the "<host>:<pid>" part of a token, the part that is safe to
// show. A token in another format yields "unknown".
func Holder(token string) string {
	i := strings.LastIndexByte(token, ':')
	if i <= 0 {
		return "unknown"
	}
	return token[:i]
}

// Secret is what follows a token's holder: its start and random part,
// which messages must not print.
func Secret(token string) string { return token[strings.LastIndexByte(token, ':')+1:] }
