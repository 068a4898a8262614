package lua

// This file is limitdb's, not upstream's (LIMITDB.md): the one reader of
// a string as a number, as Lua 5.1's luaO_str2d reads one with glibc's
// strtod, which is what Redis's Lua does.

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

var errNotNumber = errors.New("not a number")

// StrToNumber reads s as Lua 5.1 converts a string to a number (in
// arithmetic, in tonumber, in library arguments, in a numeral of the
// source): luaO_str2d over glibc's strtod. The number is
//
//   - decimal: digits with an optional point and an optional exponent
//     (e or E, a sign, digits): "12", "00012" (leading zeros are decimal),
//     "1.", ".5", "1e3";
//   - hexadecimal: 0x or 0X, hex digits with an optional point and an
//     optional binary exponent (p or P, a sign, decimal digits): "0x10",
//     "0x1.8", "0x1p4";
//   - "inf" or "infinity", "nan" or "nan(chars)", in any case;
//
// each with an optional sign before it ("-0" is minus zero, "-nan" a NaN
// with its sign bit set), with C's white space (space, \t, \n, \v, \f,
// \r) allowed before and after. Anything else makes ok false: "", "0x",
// "1e", "0b101", "1_000", "1,5". The string ends at its first NUL byte,
// as a C string does ("1\x00x" is 1). The value is the nearest double,
// ±Inf past the largest and zero below the smallest, as strtod rounds.
//
// luaO_str2d retries a string on which strtod stopped at an 'x' with
// strtoul in base 16; with a C99 strtod, which reads hexadecimal itself,
// that retry never accepts what strtod refused, so it has no code here.
func StrToNumber(s string) (f float64, ok bool) {
	if f, ok := shortDecimal(s); ok {
		return f, true
	}
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	i := 0
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	start := i
	negative := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		negative = s[i] == '-'
		i++
	}
	var end int
	switch {
	case hasPrefixFold(s[i:], "inf"):
		end = i + 3
		if hasPrefixFold(s[end:], "inity") {
			end += 5
		}
		f = math.Inf(1)
	case hasPrefixFold(s[i:], "nan"):
		end = i + 3
		if end < len(s) && s[end] == '(' {
			j := end + 1
			for j < len(s) && (isAlnum(s[j]) || s[j] == '_') {
				j++
			}
			if j < len(s) && s[j] == ')' {
				end = j + 1
			}
		}
		f = math.NaN()
	case i+1 < len(s) && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X'):
		var exp bool
		if end, exp = scanHex(s, i+2); end < 0 {
			end = i + 1 // strtod reads the "0" alone and stops at the 'x'
			f = 0
			break
		}
		text := s[start:end]
		if !exp {
			text += "p0" // Go wants the exponent strtod does without
		}
		f, ok = parseFloat(text)
		if !ok {
			return 0, false
		}
	default:
		if end = scanDecimal(s, i); end < 0 {
			return 0, false
		}
		if f, ok = parseFloat(s[start:end]); !ok {
			return 0, false
		}
	}
	for end < len(s) && isCSpace(s[end]) {
		end++
	}
	if end != len(s) {
		return 0, false
	}
	if negative && (math.IsInf(f, 0) || math.IsNaN(f)) {
		f = math.Copysign(f, -1)
	}
	return f, true
}

// shortDecimal reads the strings scripts convert most (arguments,
// counters): 1 to 15 decimal digits after an optional minus sign, each
// such integer a double exactly.
func shortDecimal(s string) (float64, bool) {
	digits := s
	negative := len(s) > 0 && s[0] == '-'
	if negative {
		digits = s[1:]
	}
	if len(digits) == 0 || len(digits) > 15 {
		return 0, false
	}
	n := int64(0)
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if negative {
		return -float64(n), true // -0 keeps its sign
	}
	return float64(n), true
}

// scanDecimal returns the end of strtod's decimal number at s[i:] (after
// the sign), or -1 when there is no digit.
func scanDecimal(s string, i int) int {
	digits := 0
	for ; i < len(s) && isDigit(s[i]); i++ {
		digits++
	}
	if i < len(s) && s[i] == '.' {
		for i++; i < len(s) && isDigit(s[i]); i++ {
			digits++
		}
	}
	if digits == 0 {
		return -1
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && isDigit(s[j]) {
			for i = j; i < len(s) && isDigit(s[i]); i++ {
			}
		}
	}
	return i
}

// scanHex returns the end of strtod's hexadecimal number whose digits
// start at s[i] (after "0x"), or -1 when there is no hex digit; exp
// reports a binary exponent.
func scanHex(s string, i int) (end int, exp bool) {
	digits := 0
	for ; i < len(s) && isHexDigit(s[i]); i++ {
		digits++
	}
	if i < len(s) && s[i] == '.' {
		for i++; i < len(s) && isHexDigit(s[i]); i++ {
			digits++
		}
	}
	if digits == 0 {
		return -1, false
	}
	if i < len(s) && (s[i] == 'p' || s[i] == 'P') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && isDigit(s[j]) {
			for i = j; i < len(s) && isDigit(s[i]); i++ {
			}
			exp = true
		}
	}
	return i, exp
}

// parseFloat is strconv.ParseFloat of a number scanDecimal or scanHex
// delimited: out of range is ±Inf or zero, as strtod answers.
func parseFloat(text string) (float64, bool) {
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		var numErr *strconv.NumError
		if !errors.As(err, &numErr) || numErr.Err != strconv.ErrRange {
			return 0, false
		}
	}
	return f, true
}

// isCSpace is C's isspace in the C locale.
func isCSpace(c byte) bool {
	return c == ' ' || (c >= '\t' && c <= '\r')
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHexDigit(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func isAlnum(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
