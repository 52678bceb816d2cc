// Package luacode gives a Lua script's text as it is sent to Redis: without
// its comment-only lines and trailing blanks. Redis hashes a script's text
// at every EVAL, and the release script travels with every release; the
// comments, each file's contract first, are for readers of lua/, not for
// the server. The library sends every script through it and the tests that
// read the wire import it.
package luacode

import "strings"

// Strip returns src without the lines whose text, once trimmed, starts
// with "--" (a Lua line comment, which outside a string runs to the line's
// end), and without the blanks ending each line. The code lines keep their
// indentation and order.
//
// It returns src unchanged when src holds a long bracket ("[[" or "[=",
// which opens a long string or a "--[[" block comment) or a line ending
// with a backslash (a string going on to the next line): inside those, a
// line starting with "--" or ending with a blank is not a comment nor
// spare, and telling them apart takes a Lua parser.
func Strip(src string) string {
	if strings.Contains(src, "[[") || strings.Contains(src, "[=") {
		return src
	}
	var b strings.Builder
	b.Grow(len(src))
	for line := range strings.Lines(src) {
		code := strings.TrimRight(line, " \t\r\n")
		if strings.HasSuffix(code, `\`) {
			return src
		}
		if strings.HasPrefix(strings.TrimLeft(code, " \t"), "--") {
			continue
		}
		b.WriteString(code)
		if strings.HasSuffix(line, "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String()
}
