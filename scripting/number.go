package scripting

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// Lua 5.1's reading of strings as numbers, as Redis's Lua does it.
//
// The reader itself is lua.StrToNumber (third_party/gopher-lua's
// str2number.go): the interpreter calls it wherever a string becomes a
// number (arithmetic, library arguments, numerals in the source), so it
// lives with the interpreter; this file holds what a script sees beside
// that: tonumber, with and without a base.

// ReadNumber reads s as Lua 5.1 (strtod) does, as arithmetic on a string
// and tonumber(s) read it: decimal ("00012" is 12), hexadecimal ("0x10",
// "0x1p4"), exponents, inf and nan, C's white space around; ok is false
// for anything else. See lua.StrToNumber.
func ReadNumber(s string) (float64, bool) { return lua.StrToNumber(s) }

// ShortInteger reads what limiter libraries send as numbers: 1 to 15
// decimal digits with an optional minus sign, without strconv; every such
// integer is a float64 exactly, and ReadNumber reads it the same way.
// negative reports the sign, so that a caller can give "-0" its sign.
func ShortInteger[T string | []byte](s T) (n int64, negative, ok bool) {
	digits := s
	if len(digits) > 0 && digits[0] == '-' {
		digits, negative = digits[1:], true
	}
	if len(digits) == 0 || len(digits) > 15 {
		return 0, false, false
	}
	for i := 0; i < len(digits); i++ {
		ch := digits[i]
		if ch < '0' || ch > '9' {
			return 0, false, false
		}
		n = n*10 + int64(ch-'0')
	}
	return n, negative, true
}

// toNumber is Lua 5.1's tonumber (lbaselib.c's luaB_tonumber): with no
// base, or base 10, a number stays and a string is read as arithmetic
// reads it (so tonumber("0x10", 10) is 16); with a base from 2 to 36 the
// argument (a number as its text) is read by C's strtoul: white space, a
// sign, "0x" in base 16, at least one digit, white space, nothing after.
// strtoul's unsigned arithmetic shows through: "-1" is 2^64-1, and a
// number past 2^64-1 is 2^64-1.
func toNumber(vals *values) lua.LGFunction {
	return func(L *lua.LState) int {
		base := 10
		if L.Get(2) != lua.LNil {
			base = checkInt(L, 2)
		}
		if base == 10 {
			if L.GetTop() < 1 {
				argError(L, 1, "value expected")
			}
			switch v := L.Get(1).(type) {
			case lua.LNumber:
				L.Push(v)
				return 1
			case lua.LString:
				if f, ok := lua.StrToNumber(string(v)); ok {
					L.Push(vals.number(f))
					return 1
				}
			}
			L.Push(lua.LNil)
			return 1
		}
		var s string
		switch v := L.Get(1).(type) {
		case lua.LString:
			s = string(v)
		case lua.LNumber:
			s = LuaNumber(float64(v))
		default:
			argError(L, 1, "string expected, got "+typeName(L, 1))
		}
		if base < 2 || base > 36 {
			argError(L, 2, "base out of range")
		}
		if n, ok := strtoul(s, base); ok {
			L.Push(vals.number(float64(n)))
		} else {
			L.Push(lua.LNil)
		}
		return 1
	}
}

// checkInt is luaL_checkint for tonumber's argument n.
func checkInt(L *lua.LState, n int) int { return checkIntOf(L, n, "tonumber") }

// checkIntOf is luaL_checkint for argument n of the library function fn:
// a number, or a string arithmetic reads as one, truncated as C casts a
// double to a long and the long to an int.
func checkIntOf(L *lua.LState, n int, fn string) int {
	var f float64
	switch v := L.Get(n).(type) {
	case lua.LNumber:
		f = float64(v)
	case lua.LString:
		var ok bool
		if f, ok = lua.StrToNumber(string(v)); !ok {
			L.RaiseError("bad argument #%d to '%s' (number expected, got string)", n, fn)
		}
	default:
		L.RaiseError("bad argument #%d to '%s' (number expected, got %s)", n, fn, typeName(L, n))
	}
	return int(int32(toInteger(f)))
}

// strtoul is C's strtoul(s, &end, base) as luaB_tonumber uses it: ok is
// false unless at least one digit was read and only white space follows.
func strtoul(s string, base int) (uint64, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 { // a C string ends there
			s = s[:i]
			break
		}
	}
	i := 0
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	negative := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		negative = s[i] == '-'
		i++
	}
	if base == 16 && i+2 < len(s) && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X') && digitValue(s[i+2]) < 16 {
		i += 2
	}
	var n uint64
	digits, overflow := 0, false
	for ; i < len(s); i++ {
		d := digitValue(s[i])
		if d >= base {
			break
		}
		digits++
		if n > (math.MaxUint64-uint64(d))/uint64(base) {
			overflow = true
		}
		n = n*uint64(base) + uint64(d)
	}
	if digits == 0 {
		return 0, false
	}
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	switch {
	case i != len(s):
		return 0, false
	case overflow:
		return math.MaxUint64, true
	case negative:
		return -n, true
	}
	return n, true
}

// digitValue is c's value as a digit of a base up to 36, or 36.
func digitValue(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'Z':
		return int(c-'A') + 10
	}
	return 36
}

// isCSpace is C's isspace in the C locale.
func isCSpace(c byte) bool { return c == ' ' || (c >= '\t' && c <= '\r') }

// argError raises Lua 5.1's luaL_argerror for tonumber's argument n.
func argError(L *lua.LState, n int, msg string) {
	L.RaiseError("bad argument #%d to 'tonumber' (%s)", n, msg)
}

// typeName is luaL_typename of argument n: "no value" past the last.
func typeName(L *lua.LState, n int) string {
	if n > L.GetTop() {
		return "no value"
	}
	return L.Get(n).Type().String()
}
