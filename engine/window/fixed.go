package window

// Fixed is a fixed window limit: at most Limit cost per window, the windows
// aligned to multiples of Window nanoseconds since the Unix epoch.
type Fixed struct {
	Limit  int64
	Window int64
}

// NewFixed validates a fixed window of limit per window nanoseconds.
func NewFixed(limit, window int64) (Fixed, error) {
	if err := checkLimit(limit, window); err != nil {
		return Fixed{}, err
	}
	return Fixed{Limit: limit, Window: window}, nil
}

// FixedState is a fixed window's stored state: the start of the window
// Count was charged in. The zero FixedState is an empty window.
type FixedState struct {
	Start int64
	Count int64
}

// Expire is the end of the state's window, when it equals a new key's.
func (f Fixed) Expire(s FixedState) int64 { return s.Start + f.Window }

// Incr applies a request of cost at now and returns the decision and the
// state to store when it was admitted with cost > 0. A state whose window
// lies ahead of now (the clock went backwards) keeps counting in that
// window.
func (f Fixed) Incr(s FixedState, now, cost int64) (Decision, FixedState, error) {
	if err := checkRequest(now, cost); err != nil {
		return Decision{}, s, err
	}
	start := floorTo(now, f.Window)
	cur := FixedState{Start: start}
	if s.Count > 0 && s.Start >= start {
		cur = s
	}
	end := cur.Start + f.Window
	d := Decision{RetryAfter: -1, Remaining: max(f.Limit-cur.Count, 0), ResetAfter: end - now}
	if cur.Count == 0 {
		d.ResetAfter = 0
	}
	if cost > f.Limit-cur.Count { // a count above the limit: the limit was lowered
		d.Limited = true
		if cost <= f.Limit {
			d.RetryAfter = end - now
		}
		return d, s, nil
	}
	if cost == 0 {
		return d, s, nil
	}
	cur.Count += cost
	d.Remaining -= cost
	d.ResetAfter = end - now
	return d, cur, nil
}
