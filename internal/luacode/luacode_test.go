package luacode

import "testing"

func TestStripDropsCommentOnlyLinesAndTrailingBlanks(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"comment lines", "-- about\nlocal k = KEYS[1]\n  -- inside\nreturn k\n", "local k = KEYS[1]\nreturn k\n"},
		{"trailing blanks", "local k = 1 \t\nreturn k  ", "local k = 1\nreturn k"},
		{"code before a comment stays", "return 1 -- one\n", "return 1 -- one\n"},
		{"dashes in a string stay", "local s = '--x'\n", "local s = '--x'\n"},
		{"indentation stays", "if a then\n  return 1\nend\n", "if a then\n  return 1\nend\n"},
		{"CRLF", "-- c\r\nreturn 1\r\n", "return 1\n"},
		{"block comment: whole", "--[[ a\n-- b\n]]\nreturn 1\n", "--[[ a\n-- b\n]]\nreturn 1\n"},
		{"long string: whole", "local s = [==[\n-- not a comment \n]==]\n", "local s = [==[\n-- not a comment \n]==]\n"},
		{"string going on: whole", "local s = 'a\\\n-- b'\n", "local s = 'a\\\n-- b'\n"},
	} {
		if got := Strip(tc.src); got != tc.want {
			t.Errorf("%s: Strip(%q) = %q, want %q", tc.name, tc.src, got, tc.want)
		}
	}
}
