package bucket

import (
	"math"
	"testing"
)

// TestAdjust: tokens taken with no check (a debt past empty, reported by
// Over) or put back up to the capacity, exact in the bucket's units.
func TestAdjust(t *testing.T) {
	t.Parallel()
	b, _ := New(10, 1, 1e9) // 10 tokens, one a second
	const now = int64(1e12)
	for i, c := range []struct {
		at        int64 // the state's full instant
		n         int64
		remaining int64
		over      bool
		back      int64 // BackWithin
	}{
		{now, 4, 6, false, 0},
		{now + 4e9, -3, 9, false, 0},
		{now + 4e9, -30, 10, false, 0}, // never past full
		{now + 8e9, 5, 0, true, 3e9},   // 13 taken of 10: 3 s to empty
		{now + 8e9, math.MinInt64, 10, false, 0},
		{now, 0, 10, false, 0},
	} {
		s, err := b.Adjust(State{At: c.at}, now, c.n)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		d, _ := b.Take(s, now, 0)
		if d.Remaining != c.remaining || b.Over(s, now) != c.over || b.BackWithin(s, now) != c.back {
			t.Errorf("step %d: remaining %d, over %v, back within %d; want %d, %v, %d", i, d.Remaining, b.Over(s, now), b.BackWithin(s, now), c.remaining, c.over, c.back)
		}
	}
	// A debt saturates, and the state still expires within maxFill.
	s, _ := b.Adjust(State{At: now}, now, math.MaxInt64)
	if s.At-now > maxFill {
		t.Errorf("saturated debt: full at now+%d, past maxFill", s.At-now)
	}
}
