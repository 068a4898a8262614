package window

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/limitdb/limitdb/engine/internal/wide"
)

// MaxPrecision bounds the sub-windows of a sliding window.
const MaxPrecision = 1000

// Sliding is a sliding-window counter: at most Limit cost in any window of
// Window nanoseconds, estimated from per-sub-window counts.
//
// In plain words (Cloudflare's counter, generalised): the window is split
// into Precision sub-windows of width w, aligned to the epoch. The estimate
// at now counts in full the sub-window now falls in and the Precision-1
// before it, and counts the one before those (the "oldest") in proportion
// to the share of it still inside the sliding window [now-Window, now]:
// (w - e)/w, where e is how far now lies into its sub-window. A request is
// admitted when estimate + cost <= Limit, compared exactly in integers:
//
//	(full + cost)*w + oldest*(w - e) <= Limit*w
//
// With Precision 1 this is Cloudflare's previous-window x weight + current
// window. The estimate assumes the oldest sub-window's requests were spread
// evenly over it, so under even traffic it is exact and never admits more
// than Limit; under bursts it errs by at most the oldest sub-window's
// count, a share 1/Precision of the window.
type Sliding struct {
	Limit     int64
	Window    int64
	Precision int64
	width     int64
}

// NewSliding validates a sliding window of limit per window nanoseconds,
// split into precision sub-windows (1 to MaxPrecision); the window must be
// a whole number of nanoseconds per sub-window.
func NewSliding(limit, window, precision int64) (Sliding, error) {
	if err := checkLimit(limit, window); err != nil {
		return Sliding{}, err
	}
	if precision < 1 || precision > MaxPrecision {
		return Sliding{}, fmt.Errorf("%w: precision must be between 1 and %d, got %d", ErrInvalid, MaxPrecision, precision)
	}
	if window%precision != 0 {
		return Sliding{}, fmt.Errorf("%w: window of %dns does not split into %d equal sub-windows", ErrInvalid, window, precision)
	}
	return Sliding{Limit: limit, Window: window, Precision: precision, width: window / precision}, nil
}

// SlidingState is a sliding window's stored state: Counts[j] is the cost
// charged in the sub-window starting at Start - j*w, for j = 0..Precision.
// A state with no count above zero is an empty window.
type SlidingState struct {
	Start  int64
	Counts []int64
}

func (st SlidingState) empty() bool {
	for _, c := range st.Counts {
		if c != 0 {
			return false
		}
	}
	return true
}

// view is the state seen from a later sub-window, k sub-windows after
// Start, without moving anything.
type view struct {
	st SlidingState
	k  int64
	n  int64
}

// at is the count of the sub-window j places before the viewed one.
func (v view) at(j int64) int64 {
	i := j - v.k
	if i < 0 || i >= int64(len(v.st.Counts)) {
		return 0
	}
	return v.st.Counts[i]
}

// full is the saturating sum of the sub-windows counted in full, and
// oldest the one counted in part.
func (v view) full() int64 {
	var s int64
	for j := int64(0); j < v.n; j++ {
		c := v.at(j)
		if s > math.MaxInt64-c {
			return math.MaxInt64
		}
		s += c
	}
	return s
}

func (v view) oldest() int64 { return v.at(v.n) }

// locate returns the instant the state is judged at (now, or the start of
// the stored sub-window if the clock went back before it), that instant's
// sub-window start and the view from it.
func (s Sliding) locate(st SlidingState, now int64) (eff, start int64, v view) {
	eff = now
	if !st.empty() && st.Start > eff {
		eff = st.Start
	}
	start = floorTo(eff, s.width)
	k := int64(0)
	if !st.empty() {
		k = (start - st.Start) / s.width
		if k > s.Precision+1 {
			k = s.Precision + 1
		}
	}
	return eff, start, view{st: st, k: k, n: s.Precision}
}

// fits reports whether full + oldest*(w-e)/w <= limit, exactly.
func (s Sliding) fits(full, oldest, e int64) bool {
	if full > s.Limit {
		return false
	}
	return wide.Mul(oldest, s.width-e).Cmp(wide.Mul(s.Limit-full, s.width)) <= 0
}

// Decide applies a request of cost at now to st without changing it; the
// caller stores Record's state when the decision admits a cost > 0.
func (s Sliding) Decide(st SlidingState, now, cost int64) (Decision, error) {
	if err := checkRequest(now, cost); err != nil {
		return Decision{}, err
	}
	eff, start, v := s.locate(st, now)
	e := eff - start
	full, oldest := v.full(), v.oldest()
	d := Decision{RetryAfter: -1}
	if cost <= math.MaxInt64-full && s.fits(full+cost, oldest, e) {
		full += cost
		d.Remaining = s.remaining(full, oldest, e)
		d.ResetAfter = s.resetAfter(st, start, cost, now)
		return d, nil
	}
	d.Limited = true
	d.Remaining = s.remaining(full, oldest, e)
	d.ResetAfter = s.resetAfter(st, start, 0, now)
	if cost <= s.Limit {
		d.RetryAfter = s.retryAt(v, start, e, cost) - now
	}
	return d, nil
}

// remaining is the whole cost still admitted: limit - full - ceil(partial).
func (s Sliding) remaining(full, oldest, e int64) int64 {
	part, _ := wide.Mul(oldest, s.width-e).CeilDiv(s.width)
	r := s.Limit - full
	if r < part {
		return 0
	}
	return r - part
}

// retryAt walks the coming sub-windows, in each of which the estimate
// falls linearly as the oldest sub-window slides out, and solves for the
// first instant the request fits. By Precision+1 sub-windows on, every
// count has slid out, so a cost <= Limit always fits.
func (s Sliding) retryAt(v view, start, e, cost int64) int64 {
	for step := int64(0); step <= s.Precision+1; step++ {
		full, oldest := v.full(), v.oldest()
		if full <= s.Limit-cost {
			room := s.Limit - full - cost
			eMin := int64(0)
			if oldest > room {
				// oldest*(w-e) <= room*w  <=>  e >= w - floor(room*w/oldest)
				q, _, _ := wide.Mul(room, s.width).DivMod(oldest)
				eMin = s.width - q
			}
			if eMin < e {
				eMin = e
			}
			if eMin < s.width {
				return start + eMin
			}
		}
		v.k++
		start += s.width
		e = 0
	}
	return start // unreachable for cost <= Limit
}

// resetAfter is how long from now until the state (with cost added at the
// sub-window starting at start) holds no count the estimate still sees.
func (s Sliding) resetAfter(st SlidingState, start, cost, now int64) int64 {
	exp := s.Expire(st)
	if cost > 0 {
		exp = start + (s.Precision+1)*s.width
	}
	if exp <= now {
		return 0
	}
	return exp - now
}

// Expire is the instant st equals an empty window: the newest non-zero
// sub-window has slid wholly out. 0 for an empty state.
func (s Sliding) Expire(st SlidingState) int64 {
	for j, c := range st.Counts {
		if c != 0 {
			return st.Start + (s.Precision+1-int64(j))*s.width
		}
	}
	return 0
}

// Record charges an admitted cost at now: it returns the state moved to
// now's sub-window with cost added, written into counts (len Precision+1),
// which may be st.Counts itself.
func (s Sliding) Record(st SlidingState, now, cost int64, counts []int64) SlidingState {
	_, start, v := s.locate(st, now)
	for j := s.Precision; j >= 0; j-- {
		counts[j] = v.at(j)
	}
	counts[0] += cost
	return SlidingState{Start: start, Counts: counts}
}

// Adopt fits a state stored under other parameters (another precision) to
// s, conservatively: every count still held is kept, all in the newest
// sub-window, so a change of parameters never forgets a request. States
// already of s's shape are returned as they are.
func (s Sliding) Adopt(st SlidingState) SlidingState {
	if int64(len(st.Counts)) == s.Precision+1 {
		return st
	}
	counts := make([]int64, s.Precision+1)
	for _, c := range st.Counts {
		if counts[0] > math.MaxInt64-c {
			counts[0] = math.MaxInt64
			break
		}
		counts[0] += c
	}
	return SlidingState{Start: floorTo(st.Start, s.width), Counts: counts}
}

// Clone returns a copy of st that shares no memory with it.
func (st *SlidingState) Clone() SlidingState {
	return SlidingState{Start: st.Start, Counts: slices.Clone(st.Counts)}
}

// AppendBinary appends the state's serialised form: Start as a varint, the
// number of counts, then each count as a uvarint.
func (st *SlidingState) AppendBinary(b []byte) []byte {
	b = binary.AppendVarint(b, st.Start)
	b = binary.AppendUvarint(b, uint64(len(st.Counts)))
	for _, c := range st.Counts {
		b = binary.AppendUvarint(b, uint64(c))
	}
	return b
}

var errCorruptSliding = errors.New("window: corrupt sliding window")

// DecodeSliding reads a state written by AppendBinary, by value as
// DecodeRing does.
func DecodeSliding(b []byte) (SlidingState, error) {
	start, k := binary.Varint(b)
	if k <= 0 {
		return SlidingState{}, errCorruptSliding
	}
	b = b[k:]
	n, k := binary.Uvarint(b)
	if k <= 0 || n < 1 || n > MaxPrecision+1 || n > uint64(len(b)) {
		return SlidingState{}, errCorruptSliding
	}
	b = b[k:]
	st := SlidingState{Start: start, Counts: make([]int64, n)}
	for i := range st.Counts {
		c, k := binary.Uvarint(b)
		if k <= 0 || c > math.MaxInt64 {
			return SlidingState{}, errCorruptSliding
		}
		st.Counts[i] = int64(c)
		b = b[k:]
	}
	if len(b) != 0 {
		return SlidingState{}, errCorruptSliding
	}
	return st, nil
}
