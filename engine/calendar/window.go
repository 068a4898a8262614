package calendar

import (
	"fmt"
	"math"

	"github.com/limitdb/limitdb/engine/internal/wide"
)

// MaxLimit bounds a calendar window's limit: a state keeps two counts of
// 32 bits each (a window's and the one's before it).
const MaxLimit = math.MaxUint32

// Window is a limit of Limit cost per calendar window of Cal.
//
// Fixed (Sliding false) counts each window from zero: at most Limit cost
// between two boundaries, as "10,000 calls per calendar month" means.
//
// Sliding (Cloudflare's sliding-window counter over calendar windows)
// also counts the previous window, weighted by the share of the current
// window still to run: at an instant a fraction f into the current window,
// the estimate is current + previous*(1 - f). Windows of unequal length (a
// month of 28 days after one of 31, a day of 23 hours) are weighed by each
// one's own length in nanoseconds; compared exactly in integers:
//
//	(current + cost)*L + previous*(end - now) <= Limit*L,  L = end - start
//
// Time going backwards never admits extra requests: a state whose window
// lies ahead of now keeps counting in that window.
type Window struct {
	Limit   int64
	Cal     Calendar
	Sliding bool
}

// NewWindow validates a limit of limit (1 to MaxLimit) per window of cal.
func NewWindow(limit int64, cal Calendar, sliding bool) (Window, error) {
	if cal.loc == nil {
		return Window{}, fmt.Errorf("%w: no calendar", ErrInvalid)
	}
	if limit < 1 || limit > MaxLimit {
		return Window{}, fmt.Errorf("%w: limit must be between 1 and %d, got %d", ErrInvalid, int64(MaxLimit), limit)
	}
	return Window{Limit: limit, Cal: cal, Sliding: sliding}, nil
}

// State is a calendar window's stored state: the window its Count was
// charged in (its first day's number) and the count of the window before
// it. The zero State is a new key's.
type State struct {
	Window      int64
	Count, Prev int64
}

func (s State) empty() bool { return s.Count == 0 && s.Prev == 0 }

// Decision is the outcome of one request. Durations are nanoseconds.
type Decision struct {
	Limited bool
	// Remaining is how much more cost would be admitted now (after this
	// request when admitted).
	Remaining int64
	// RetryAfter is how long until the same request would be admitted; -1
	// when admitted or when the cost exceeds the limit and never fits.
	RetryAfter int64
	// ResetAfter is how long until the state equals a new key's.
	ResetAfter int64
}

// view is a state seen from an instant: the window it counts in, that
// window's bounds, and the two counts.
type view struct {
	w, start, end, after int64
	cur, prev            int64
}

// at sees s from now. The stored window is read in the calendar's current
// unit (a state written under another unit or zone counts in the window of
// this calendar that contains its first day), so a change of policy never
// forgets a count still in the window now.
func (l Window) at(s State, now int64) view {
	c := l.Cal
	v := view{w: c.Window(now)}
	if !s.empty() && valid(s.Window) {
		sw := c.windowOf(s.Window)
		switch {
		case sw >= v.w: // this window, or one ahead of a clock that went back
			v.w, v.cur, v.prev = sw, s.Count, s.Prev
		case c.Next(sw) == v.w:
			v.prev = s.Count
		}
	}
	b := c.Bounds(v.w)
	v.start, v.end, v.after = b.Start, b.End, b.After
	return v
}

func checkRequest(now, cost int64) error {
	if cost < 0 {
		return fmt.Errorf("%w: cost must not be negative, got %d", ErrInvalid, cost)
	}
	if now < minInstant || now >= maxInstant {
		return ErrOverflow
	}
	return nil
}

// Apply decides a request of cost at now against s. It returns the state
// to store, which differs from s only when the request was admitted with a
// cost above 0.
func (l Window) Apply(s State, now, cost int64) (Decision, State, error) {
	if err := checkRequest(now, cost); err != nil {
		return Decision{}, s, err
	}
	v := l.at(s, now)
	eff := max(now, v.start)
	d := Decision{RetryAfter: -1}
	if cost <= l.Limit-v.cur && l.fits(v.cur+cost, v.prev, v.end-eff, v.end-v.start) {
		if cost == 0 {
			d.Remaining = l.remaining(v, eff)
			d.ResetAfter = max(l.expire(v)-now, 0)
			return d, s, nil
		}
		v.cur += cost
		d.Remaining = l.remaining(v, eff)
		d.ResetAfter = max(l.expire(v)-now, 0)
		return d, State{Window: v.w, Count: v.cur, Prev: v.prev}, nil
	}
	d.Limited = true
	d.Remaining = l.remaining(v, eff)
	d.ResetAfter = max(l.expire(v)-now, 0)
	if cost <= l.Limit {
		d.RetryAfter = l.retryAt(v, eff, cost) - now
	}
	return d, s, nil
}

// weight is the previous window's count as still seen: prev*left/length,
// where left is how much of the current window is still to run (the
// fixed window sees none of it).
func (l Window) weight(prev, left int64) wide.U128 {
	if !l.Sliding {
		return wide.U128{}
	}
	return wide.Mul(prev, left)
}

// fits reports whether full*length + weight <= Limit*length, exactly.
func (l Window) fits(full, prev, left, length int64) bool {
	if full > l.Limit {
		return false
	}
	return wide.Mul(full, length).Add(l.weight(prev, left)).Cmp(wide.Mul(l.Limit, length)) <= 0
}

// remaining is the whole cost still admitted: Limit - cur - ceil(weight).
func (l Window) remaining(v view, eff int64) int64 {
	part, _ := l.weight(v.prev, v.end-eff).CeilDiv(v.end - v.start)
	r := l.Limit - v.cur - part
	return max(r, 0)
}

// retryAt is the first instant a request of cost (<= Limit) fits. In the
// current window the estimate falls as the previous window slides out:
// prev*(end - t) <= room*length once t >= end - floor(room*length/prev).
// When the current count leaves no room, the next window starts with it as
// its previous count, and the same solves there.
func (l Window) retryAt(v view, eff, cost int64) int64 {
	length := v.end - v.start
	if cost <= l.Limit-v.cur {
		return max(solve(l.Limit-v.cur-cost, v.prev, length, v.end, l.Sliding), eff)
	}
	if !l.Sliding {
		return v.end
	}
	return max(solve(l.Limit-cost, v.cur, v.after-v.end, v.after, true), v.end)
}

// solve is the first t with prev*(end - t) <= room*length.
func solve(room, prev, length, end int64, sliding bool) int64 {
	if !sliding || prev == 0 {
		return math.MinInt64
	}
	q, _, _ := wide.Mul(room, length).DivMod(prev)
	if q >= length {
		return end - length
	}
	return end - q
}

// expire is when the view's state equals a new key's: the fixed window's
// end; for the sliding window, the end of the window after the newest
// count's.
func (l Window) expire(v view) int64 {
	switch {
	case !l.Sliding && v.cur > 0:
		return v.end
	case l.Sliding && v.cur > 0:
		return v.after
	case l.Sliding && v.prev > 0:
		return v.end
	}
	return 0
}

// Expire is the instant s equals a new key's (0 for an empty state): the
// key's expiry, at the real end of its window in the zone.
func (l Window) Expire(s State) int64 {
	if s.empty() || !valid(s.Window) {
		return 0
	}
	b := l.Cal.Bounds(l.Cal.windowOf(s.Window))
	return l.expire(view{w: b.W, end: b.End, after: b.After, cur: s.Count, prev: s.Prev})
}
