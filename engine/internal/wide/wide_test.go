package wide

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

func toBig(x U128) *big.Int {
	b := new(big.Int).SetUint64(x.Hi)
	b.Lsh(b, 64)
	return b.Add(b, new(big.Int).SetUint64(x.Lo))
}

// TestAgainstBig checks every operation against math/big on random and
// edge operands.
func TestAgainstBig(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	edge := []int64{0, 1, 2, 3, 1000, 1 << 31, 1<<32 + 1, 1 << 62, math.MaxInt64 - 1, math.MaxInt64}
	pick := func() int64 {
		if rng.IntN(3) == 0 {
			return edge[rng.IntN(len(edge))]
		}
		return rng.Int64N(math.MaxInt64) >> rng.IntN(63)
	}
	maxI64 := big.NewInt(math.MaxInt64)
	for i := 0; i < 20000; i++ {
		a, b, c, d := pick(), pick(), pick(), pick()
		x, y := Mul(a, b), Mul(c, d)
		bx, by := toBig(x), toBig(y)
		if want := new(big.Int).Mul(big.NewInt(a), big.NewInt(b)); bx.Cmp(want) != 0 {
			t.Fatalf("Mul(%d, %d) = %v, want %v", a, b, bx, want)
		}
		if got := x.Cmp(y); got != bx.Cmp(by) {
			t.Fatalf("Cmp: %d, want %d", got, bx.Cmp(by))
		}
		if toBig(x.Add(y)).Cmp(new(big.Int).Add(bx, by)) != 0 {
			t.Fatalf("Add(%v, %v)", bx, by)
		}
		if x.Cmp(y) >= 0 && toBig(x.Sub(y)).Cmp(new(big.Int).Sub(bx, by)) != 0 {
			t.Fatalf("Sub(%v, %v)", bx, by)
		}
		if toBig(x.Min(y)).Cmp(toBig(y.Min(x))) != 0 {
			t.Fatalf("Min not symmetric")
		}
		if d == 0 {
			continue
		}
		q, r, ok := x.DivMod(d)
		wq, wr := new(big.Int).QuoRem(bx, big.NewInt(d), new(big.Int))
		if wantOK := wq.Cmp(maxI64) <= 0; ok != wantOK || (ok && (q != wq.Int64() || r != wr.Int64())) {
			t.Fatalf("DivMod(%v, %d) = %d, %d, %v; want %v, %v", bx, d, q, r, ok, wq, wr)
		}
		cq, ok := x.CeilDiv(d)
		if wr.Sign() != 0 {
			wq.Add(wq, big.NewInt(1))
		}
		if wantOK := wq.Cmp(maxI64) <= 0; ok != wantOK || (ok && cq != wq.Int64()) {
			t.Fatalf("CeilDiv(%v, %d) = %d, %v; want %v", bx, d, cq, ok, wq)
		}
	}
}
