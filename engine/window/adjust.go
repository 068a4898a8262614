package window

import "math"

// Adjusting a charge already made: the arithmetic of settling a
// reservation (RL.SETTLE). A reservation charges its estimate like any
// request; its settle charges the difference (delta > 0) or gives it back
// (delta < 0). A charge is never checked against the limit (the work it
// stands for is done) and may leave the window over its limit, which the
// next decisions deny until the window moves on. A give-back goes to the
// window the reservation was charged in, named by at (its start), and only
// while the algorithm still counts that window: once it has passed, its
// budget is gone, and crediting the window now current would admit more
// than the limit in it.

// Adjust corrects a charge made in the window starting at at, at now:
// delta > 0 adds delta to now's window (the one a new request would be
// counted in); delta < 0 takes -delta back from the window at, if it is
// still the current one, down to zero; otherwise nothing changes.
func (f Fixed) Adjust(s FixedState, now, at, delta int64) (FixedState, error) {
	if err := checkRequest(now, 0); err != nil {
		return s, err
	}
	start := floorTo(now, f.Window)
	switch {
	case delta > 0:
		cur := FixedState{Start: start}
		if s.Count > 0 && s.Start >= start {
			cur = s
		}
		cur.Count = satAdd(cur.Count, delta)
		return cur, nil
	case delta < 0 && s.Count > 0 && s.Start == at && s.Start >= start:
		s.Count -= min(s.Count, neg(delta))
	}
	return s, nil
}

// Over reports whether the window current at now counts more than the
// limit.
func (f Fixed) Over(s FixedState, now int64) bool {
	return s.Start >= floorTo(now, f.Window) && s.Count > f.Limit
}

// Adjust corrects a charge made in the sub-window starting at at, at now,
// writing the counts into counts (len Precision+1, which may be
// st.Counts): delta > 0 adds delta to now's sub-window, as Record does;
// delta < 0 takes -delta back from the sub-window at while the estimate
// still counts it (in full, or in part as the oldest), down to zero.
func (s Sliding) Adjust(st SlidingState, now, at, delta int64, counts []int64) (SlidingState, error) {
	if err := checkRequest(now, 0); err != nil {
		return st, err
	}
	next := s.Record(st, now, 0, counts)
	switch {
	case delta > 0:
		counts[0] = satAdd(counts[0], delta)
	case delta < 0 && at <= next.Start && (next.Start-at)%s.width == 0:
		if j := (next.Start - at) / s.width; j <= s.Precision {
			counts[j] -= min(counts[j], neg(delta))
		}
	}
	return next, nil
}

// Over reports whether the estimate at now exceeds the limit.
func (s Sliding) Over(st SlidingState, now int64) bool {
	eff, start, v := s.locate(st, now)
	return !s.fits(v.full(), v.oldest(), eff-start)
}

func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// neg is -d for d < 0, saturated at MinInt64.
func neg(d int64) int64 {
	if d == math.MinInt64 {
		return math.MaxInt64
	}
	return -d
}
