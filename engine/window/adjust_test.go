package window

import "testing"

// TestFixedAdjust: a give-back goes to the window charged while it is
// current; a charge to now's window, past the limit if need be.
func TestFixedAdjust(t *testing.T) {
	t.Parallel()
	f, _ := NewFixed(10, 60)
	for i, c := range []struct {
		s          FixedState
		now, at, d int64
		want       FixedState
		over       bool
	}{
		{FixedState{60, 8}, 70, 60, -5, FixedState{60, 3}, false},
		{FixedState{60, 8}, 70, 60, -50, FixedState{60, 0}, false},
		{FixedState{60, 8}, 130, 60, -5, FixedState{60, 8}, false}, // the window passed: nothing
		{FixedState{60, 8}, 70, 0, -5, FixedState{60, 8}, false},   // charged in another window
		{FixedState{60, 8}, 70, 60, 5, FixedState{60, 13}, true},
		{FixedState{60, 8}, 130, 60, 5, FixedState{120, 5}, false}, // charged to now's window
	} {
		got, err := f.Adjust(c.s, c.now, c.at, c.d)
		if err != nil || got != c.want || f.Over(got, c.now) != c.over {
			t.Errorf("step %d: %+v over %v (%v), want %+v over %v", i, got, f.Over(got, c.now), err, c.want, c.over)
		}
	}
}

// TestSlidingAdjust: a give-back reaches the sub-window charged while the
// estimate still counts it, the previous one included.
func TestSlidingAdjust(t *testing.T) {
	t.Parallel()
	s, _ := NewSliding(10, 60, 1)
	st := SlidingState{Start: 60, Counts: []int64{6, 0}}
	for i, c := range []struct {
		now, at, d int64
		want       []int64
		start      int64
	}{
		{70, 60, -4, []int64{2, 0}, 60},
		{130, 60, -4, []int64{0, 2}, 120}, // the previous window, counted in part
		{190, 60, -4, []int64{0, 0}, 180}, // slid out: nothing
		{70, 60, 7, []int64{13, 0}, 60},
	} {
		got, err := s.Adjust(st, c.now, c.at, c.d, make([]int64, 2))
		if err != nil || got.Start != c.start || got.Counts[0] != c.want[0] || got.Counts[1] != c.want[1] {
			t.Errorf("step %d: %+v (%v), want start %d counts %v", i, got, err, c.start, c.want)
		}
	}
	if !s.Over(SlidingState{Start: 60, Counts: []int64{13, 0}}, 70) {
		t.Error("13 of 10 in the current window is not over")
	}
}
