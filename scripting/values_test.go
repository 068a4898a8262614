package scripting

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// TestValuesAreCopies: what values makes equals what Go's conversions
// make, and stays so when the bytes it was made from change and when the
// blocks it lives in fill up.
func TestValuesAreCopies(t *testing.T) {
	v := newValues()
	rng := rand.New(rand.NewPCG(1, 2))
	type made struct {
		got  lua.LValue
		want lua.LValue
	}
	var all []made
	buf := make([]byte, 0, 200)
	for i := 0; i < 20000; i++ {
		buf = buf[:rng.IntN(3)*rng.IntN(70)]
		for j := range buf {
			buf[j] = "0123456789:ab"[rng.IntN(13)]
		}
		all = append(all, made{v.str(buf), lua.LString(buf)})
		for j := range buf {
			buf[j] = 'x' // the caller's buffer is reused: the value must not see it
		}
		f := []float64{float64(rng.IntN(2000)), rng.NormFloat64() * 1e9, math.Copysign(0, -1), math.Inf(1), 1e300}[rng.IntN(5)]
		all = append(all, made{v.number(f), lua.LNumber(f)})
	}
	for i, m := range all {
		if m.got.Type() != m.want.Type() || m.got.String() != m.want.String() {
			t.Fatalf("value %d is %q (%s), want %q", i, m.got.String(), m.got.Type(), m.want.String())
		}
		if n, ok := m.got.(lua.LNumber); ok && math.Signbit(float64(n)) != math.Signbit(float64(m.want.(lua.LNumber))) {
			t.Fatalf("value %d: sign of %v lost", i, n)
		}
	}
}

// TestValuesAllocateInBlocks: a run's strings and numbers cost no
// allocation each.
func TestValuesAllocateInBlocks(t *testing.T) {
	v := newValues()
	b := []byte("1700000000")
	n := 0
	allocs := testing.AllocsPerRun(1000, func() {
		n++
		v.str(strconv.AppendInt(b[:0], int64(100000+n%900000), 10))
		v.number(float64(1e9 + n))
	})
	if allocs > 0.1 {
		t.Fatalf("%.2f allocations a string and a number", allocs)
	}
}
