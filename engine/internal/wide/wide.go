// Package wide is the 128-bit unsigned arithmetic the limiting algorithms
// need where a product of two int64 parameters (a count times a duration in
// nanoseconds) can leave 63 bits even though every answer fits. It is a leaf
// and allocation-free: values are two uint64 words.
package wide

import "math/bits"

// U128 is an unsigned 128-bit integer.
type U128 struct{ Hi, Lo uint64 }

// From widens a non-negative int64.
func From(a int64) U128 { return U128{Lo: uint64(a)} }

// Mul is a*b for non-negative a and b.
func Mul(a, b int64) U128 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	return U128{hi, lo}
}

// Add is x+y (callers keep the sum far below 2^128).
func (x U128) Add(y U128) U128 {
	lo, c := bits.Add64(x.Lo, y.Lo, 0)
	return U128{x.Hi + y.Hi + c, lo}
}

// Sub is x-y for x >= y.
func (x U128) Sub(y U128) U128 {
	lo, b := bits.Sub64(x.Lo, y.Lo, 0)
	return U128{x.Hi - y.Hi - b, lo}
}

// Cmp returns -1, 0 or +1 as x is less than, equal to or greater than y.
func (x U128) Cmp(y U128) int {
	switch {
	case x.Hi < y.Hi || (x.Hi == y.Hi && x.Lo < y.Lo):
		return -1
	case x == y:
		return 0
	}
	return 1
}

// IsZero reports whether x is 0.
func (x U128) IsZero() bool { return x.Hi == 0 && x.Lo == 0 }

// Min is the smaller of x and y.
func (x U128) Min(y U128) U128 {
	if x.Cmp(y) <= 0 {
		return x
	}
	return y
}

// DivMod divides x by d > 0. ok is false when the quotient does not fit in
// an int64; q and r are then meaningless.
func (x U128) DivMod(d int64) (q, r int64, ok bool) {
	ud := uint64(d)
	if x.Hi == 0 { // the common case: one 64-bit division
		q := x.Lo / ud
		if q > 1<<63-1 {
			return 0, 0, false
		}
		return int64(q), int64(x.Lo - q*ud), true
	}
	if x.Hi >= ud {
		return 0, 0, false
	}
	uq, ur := bits.Div64(x.Hi, x.Lo, ud)
	if uq > 1<<63-1 {
		return 0, 0, false
	}
	return int64(uq), int64(ur), true
}

// CeilDiv is x/d rounded up, for d > 0; ok as for DivMod.
func (x U128) CeilDiv(d int64) (int64, bool) {
	q, r, ok := x.DivMod(d)
	if !ok {
		return 0, false
	}
	if r != 0 {
		if q == 1<<63-1 {
			return 0, false
		}
		q++
	}
	return q, true
}

// Int64 narrows x; ok is false when it does not fit.
func (x U128) Int64() (int64, bool) {
	if x.Hi != 0 || x.Lo > 1<<63-1 {
		return 0, false
	}
	return int64(x.Lo), true
}
