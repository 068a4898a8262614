package command

// GlobMatch reports whether s matches a Redis glob pattern: * any run,
// ? one byte, [abc] [^a-z] classes, and \ escapes: the patterns of KEYS,
// SCAN and PSUBSCRIBE, and of every command that filters names by one.
//
// It takes time proportional to len(pattern) * len(s) at worst: on a
// mismatch it goes back only to the last * seen, since a later * can match
// anything an earlier one could. (Trying every split of every *, as a
// naive matcher does, is exponential in the number of *s: Redis bounds it
// since CVE-2022-36021.)
func GlobMatch(pattern, s string) bool {
	px, sx := 0, 0
	star, starS := -1, 0 // the last * seen, and where its match now ends
	for sx < len(s) {
		if px < len(pattern) {
			switch c := pattern[px]; c {
			case '*':
				star, starS = px, sx
				px++
				continue
			case '?':
				px, sx = px+1, sx+1
				continue
			case '[':
				if n, ok := matchClass(pattern[px:], s[sx]); ok {
					px, sx = px+n, sx+1
					continue
				}
			case '\\':
				lit, n := byte('\\'), 1 // a trailing \ is itself
				if px+1 < len(pattern) {
					lit, n = pattern[px+1], 2
				}
				if lit == s[sx] {
					px, sx = px+n, sx+1
					continue
				}
			default:
				if c == s[sx] {
					px, sx = px+1, sx+1
					continue
				}
			}
		}
		if star < 0 {
			return false
		}
		starS++ // the last * takes one more byte
		px, sx = star+1, starS
	}
	for px < len(pattern) && pattern[px] == '*' {
		px++
	}
	return px == len(pattern)
}

// matchClass matches b against the class at the start of p ("[...]"),
// returning the class's length (its closing ] included, when there is
// one) and whether b is in it.
func matchClass(p string, b byte) (int, bool) {
	i := 1
	not := i < len(p) && p[i] == '^'
	if not {
		i++
	}
	match := false
	for i < len(p) && p[i] != ']' {
		switch {
		case p[i] == '\\' && i+1 < len(p):
			match = match || p[i+1] == b
			i += 2
		case i+2 < len(p) && p[i+1] == '-' && p[i+2] != ']':
			lo, hi := p[i], p[i+2]
			if lo > hi {
				lo, hi = hi, lo
			}
			match = match || (b >= lo && b <= hi)
			i += 3
		default:
			match = match || p[i] == b
			i++
		}
	}
	if i < len(p) {
		i++ // the closing ]
	}
	return i, match != not
}
