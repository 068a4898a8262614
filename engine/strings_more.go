package engine

import (
	"errors"
	"math/big"
	"strings"
)

var (
	// ErrNotFloat is INCRBYFLOAT on a value, or with an increment, that is
	// not a number.
	ErrNotFloat = errors.New("value is not a valid float")
	// ErrNaNOrInf is an INCRBYFLOAT or HINCRBYFLOAT whose result is not
	// finite.
	ErrNaNOrInf = errors.New("increment would produce NaN or Infinity")
)

// Redis adds floats (INCRBYFLOAT, HINCRBYFLOAT) in C's long double, on
// x86-64 the x87 80-bit format: a 64-bit mantissa and a 15-bit exponent.
// A big.Float of 64 bits' precision rounding to nearest even gives the
// same sums, and its exact decimal formatting gives printf's "%.17Lf", so
// the stored text is Redis's byte for byte (0.1 + 0.2 is "0.3" there, not
// float64's 0.30000000000000004).
const (
	longDoublePrec   = 64
	longDoubleMaxExp = 16384  // 2^16384 overflows
	longDoubleMinExp = -16444 // below the least subnormal, it is 0
	maxLongDoubleLen = 5 * 1024
)

// ParseLongDouble reads b as C's strtold does for Redis's string2ld: no
// leading space, nothing after the number, not NaN, not out of range;
// "inf" and "infinity" (any case, signed) are infinite; "0x" starts a
// hexadecimal float.
func ParseLongDouble(b []byte) (f *big.Float, ok bool) {
	if len(b) == 0 || len(b) >= maxLongDoubleLen {
		return nil, false
	}
	s := string(b)
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 {
		return nil, false
	}
	if l := strings.ToLower(body); l == "inf" || l == "infinity" {
		return new(big.Float).SetInf(s[0] == '-'), true
	}
	base, digits := 10, "0123456789.eE+-"
	if l := strings.ToLower(body); strings.HasPrefix(l, "0x") {
		base, digits = 0, "0123456789abcdefABCDEFxXpP.+-" // C's hexadecimal floats
	}
	for _, ch := range body {
		// big.Float also reads "0b", "0o" and "_", which strtold does
		// not; and a leading space fails Redis's isspace check.
		if !strings.ContainsRune(digits, ch) {
			return nil, false
		}
	}
	f, _, err := new(big.Float).SetPrec(longDoublePrec).SetMode(big.ToNearestEven).Parse(s, base)
	if err != nil {
		return nil, false
	}
	if exp := f.MantExp(nil); f.Sign() != 0 && (exp > longDoubleMaxExp || exp < longDoubleMinExp) {
		return nil, false // strtold's ERANGE: HUGE_VAL or 0
	}
	return f, true
}

// AddLongDouble is a + b in long double; ok is false when the sum is
// infinite (or NaN: inf - inf).
func AddLongDouble(a, b *big.Float) (sum *big.Float, ok bool) {
	if a.IsInf() || b.IsInf() {
		return nil, false
	}
	sum = new(big.Float).SetPrec(longDoublePrec).SetMode(big.ToNearestEven).Add(a, b)
	if sum.Sign() != 0 && sum.MantExp(nil) > longDoubleMaxExp {
		return nil, false
	}
	return sum, true
}

// AppendLongDouble appends f as Redis's ld2string in its human mode:
// "%.17Lf" without trailing zeros (nor a trailing point), and "0" for -0.
func AppendLongDouble(dst []byte, f *big.Float) []byte {
	start := len(dst)
	dst = f.Append(dst, 'f', 17)
	if i := strings.IndexByte(string(dst[start:]), '.'); i >= 0 {
		for dst[len(dst)-1] == '0' {
			dst = dst[:len(dst)-1]
		}
		if dst[len(dst)-1] == '.' {
			dst = dst[:len(dst)-1]
		}
	}
	if string(dst[start:]) == "-0" {
		dst = append(dst[:start], '0')
	}
	return dst
}

// IncrByFloat adds the long double incr to the number at key (0 when
// absent), keeping its expiry, and returns the new value's text, which is
// what the key now holds.
func (e *Engine) IncrByFloat(key []byte, now int64, incr *big.Float) (val []byte, err error) {
	e.Do(key, now, func(ent Entry) (Entry, bool) {
		cur := new(big.Float)
		switch ent.Kind {
		case KindNone:
		case KindString:
			var ok bool
			if cur, ok = ParseLongDouble(AppendString(nil, ent)); !ok {
				err = ErrNotFloat
				return ent, false
			}
		default:
			err = ErrWrongType
			return ent, false
		}
		sum, ok := AddLongDouble(cur, incr)
		if !ok {
			err = ErrNaNOrInf
			return ent, false
		}
		val = AppendLongDouble(nil, sum)
		// Kept as text even when it reads as an integer: Redis keeps
		// INCRBYFLOAT's result as text too (OBJECT ENCODING embstr).
		return Entry{Kind: KindString, Expire: ent.Expire, Ext: val}, true
	})
	return val, err
}

// GetDel appends key's string value to dst and deletes the key. ok is
// false when it is absent; err is ErrWrongType for another kind, which
// stays.
func (e *Engine) GetDel(key []byte, now int64, dst []byte) (val []byte, ok bool, err error) {
	val = dst
	e.Do(key, now, func(ent Entry) (Entry, bool) {
		switch ent.Kind {
		case KindNone:
			return ent, false
		case KindString:
			val, ok = AppendString(dst, ent), true
			return Entry{}, true
		}
		err = ErrWrongType
		return ent, false
	})
	return val, ok, err
}

// GetEx appends key's string value to dst and then applies expiry, which
// runs only when the key holds a string (an absent key answers nothing; a
// bad expiry argument is an error only for a key that exists, as in
// Redis). expiry returns the new expiry (0 removes it) and whether to
// change it at all; an expiry at or before now deletes the key.
func (e *Engine) GetEx(key []byte, now int64, dst []byte, expiry func() (at int64, change bool, err error)) (val []byte, ok bool, err error) {
	val = dst
	e.Do(key, now, func(ent Entry) (Entry, bool) {
		switch ent.Kind {
		case KindNone:
			return ent, false
		case KindString:
		default:
			err = ErrWrongType
			return ent, false
		}
		at, change, xerr := expiry()
		if xerr != nil {
			err = xerr
			return ent, false
		}
		val, ok = AppendString(dst, ent), true
		if !change || at == ent.Expire {
			return ent, false
		}
		if at != 0 && at <= now {
			return Entry{}, true
		}
		ent.Expire = at
		return ent, true
	})
	return val, ok, err
}
