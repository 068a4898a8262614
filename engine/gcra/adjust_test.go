package gcra

import (
	"math"
	"testing"
)

// TestAdjust: charges move the TAT forward past the tolerance if need be,
// give-backs move it back but never before now, and both saturate.
func TestAdjust(t *testing.T) {
	t.Parallel()
	l, _ := NewLimit(10, 4) // one unit per 10, τ = 50
	const now = 1000
	for i, c := range []struct {
		tat, delta, want int64
	}{
		{now + 30, 2, now + 50},
		{now + 30, 5, now + 80}, // past τ: over the limit
		{now - 5, 3, now + 30},  // a fresh key charges from now
		{now + 30, -1, now + 20},
		{now + 30, -3, now},    // back to fresh, no further
		{now + 30, -100, now},  // never before now
		{now - 5, -1, now - 5}, // fresh stays as it was
		{now + 30, math.MinInt64, now},
		{now + 30, math.MaxInt64, now + MaxDebt},
		{now + 30, 0, now + 30},
	} {
		if got := Adjust(c.tat, now, l, c.delta); got != c.want {
			t.Errorf("step %d: Adjust(tat %d, delta %d) = %d, want %d", i, c.tat, c.delta, got, c.want)
		}
	}
	// Over the limit: a peek denies until the debt has drained.
	d, _ := Decide(now+80, now, l, 0)
	if !d.Limited || d.RetryAfter != 30 {
		t.Errorf("peek over the limit: %+v, want limited, retry after 30", d)
	}
}
