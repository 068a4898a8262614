package window

import (
	"math/rand/v2"
	"testing"
)

// TestSlidingNeverAboveUnderEvenTraffic is the promise behind the counter:
// when the oldest sub-window's requests were spread evenly over it, the
// estimate is never below the true count, so an admitted request never
// takes the true count in the window above the limit.
func TestSlidingNeverAboveUnderEvenTraffic(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 11))
	const start = int64(1_700_000_000_000_000_000)
	for i := 0; i < 20000; i++ {
		precision := rng.Int64N(4) + 1
		width := rng.Int64N(1000) + 1
		limit := rng.Int64N(20) + 1
		s, err := NewSliding(limit, width*precision, precision)
		if err != nil {
			t.Fatal(err)
		}
		// The oldest sub-window holds c requests spaced w/c apart from a
		// phase; the newer ones hold counts whose timing does not matter.
		c := rng.Int64N(limit) + 1
		phase := rng.Int64N(width/c + 1)
		counts := make([]int64, precision+1)
		counts[precision] = c
		rest := limit - c
		for j := int64(0); j < precision && rest > 0; j++ {
			counts[j] = rng.Int64N(rest + 1)
			rest -= counts[j]
		}
		base := floorTo(start, width) // sub-windows start on multiples of their width
		st := SlidingState{Start: base, Counts: counts}
		now := base + rng.Int64N(width) // inside the newest sub-window
		cost := rng.Int64N(limit) + 1
		d, err := s.Decide(st, now, cost)
		if err != nil {
			t.Fatal(err)
		}
		if d.Limited {
			continue
		}
		// True count in (now-window, now]: the newer sub-windows in full,
		// and the oldest's requests still inside.
		var count int64
		for j := int64(0); j < precision; j++ {
			count += counts[j]
		}
		oldestStart := base - precision*width
		for k := int64(0); k < c; k++ {
			if at := oldestStart + phase + k*width/c; at > now-s.Window {
				count++
			}
		}
		if count+cost > limit {
			t.Fatalf("precision %d, width %d, limit %d, oldest %d from phase %d, counts %v, cost %d at +%d: admitted with %d already in the window",
				precision, width, limit, c, phase, counts, cost, now-base, count)
		}
	}
}
