package command

import (
	"strings"
	"testing"
)

// naiveGlob is the textbook recursive matcher, exponential in the number
// of *s: the reference GlobMatch must agree with on short inputs.
func naiveGlob(pattern, s string) bool {
	for len(pattern) > 0 {
		switch pattern[0] {
		case '*':
			for i := 0; i <= len(s); i++ {
				if naiveGlob(pattern[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if len(s) == 0 {
				return false
			}
			s, pattern = s[1:], pattern[1:]
		case '[':
			if len(s) == 0 {
				return false
			}
			n, ok := matchClass(pattern, s[0])
			if !ok {
				return false
			}
			s, pattern = s[1:], pattern[n:]
		case '\\':
			if len(pattern) >= 2 {
				pattern = pattern[1:]
			}
			fallthrough
		default:
			if len(s) == 0 || s[0] != pattern[0] {
				return false
			}
			s, pattern = s[1:], pattern[1:]
		}
	}
	return len(s) == 0
}

func FuzzGlobMatchesNaive(f *testing.F) {
	for _, seed := range [][2]string{{"*a*b", "aab"}, {"h[^e]llo", "hallo"}, {"a\\*b*", "a*bc"}, {"[a-", "a"}, {"*?*", ""}, {"\\", "\\"}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		if len(pattern) > 12 || len(s) > 24 || strings.Count(pattern, "*") > 4 {
			t.Skip() // the reference is exponential
		}
		if got, want := GlobMatch(pattern, s), naiveGlob(pattern, s); got != want {
			t.Fatalf("GlobMatch(%q, %q) = %v, the naive matcher says %v", pattern, s, got, want)
		}
	})
}

// TestGlobPathological: patterns that take a naive matcher exponential
// time (each extra "*a" multiplies it) answer at once. The naive matcher
// needs hours for the first; a regression makes this test time out.
func TestGlobPathological(t *testing.T) {
	t.Parallel()
	key := strings.Repeat("a", 60)
	cases := []struct {
		pattern string
		want    bool
	}{
		{strings.Repeat("*a", 15) + "b", false},
		{strings.Repeat("*a", 15) + "*", true},
		{strings.Repeat("*a", 60), true},
		{strings.Repeat("*a", 61), false},
		{strings.Repeat("*?", 30) + "b", false},
		{strings.Repeat("*[a-z]", 20) + "[^a]", false},
	}
	for _, tc := range cases {
		if got := GlobMatch(tc.pattern, key); got != tc.want {
			t.Errorf("GlobMatch(%.40q..., 60 a's) = %v, want %v", tc.pattern, got, tc.want)
		}
	}
}
