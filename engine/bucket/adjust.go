package bucket

import "github.com/limitdb/limitdb/engine/internal/wide"

// maxDebt bounds how far past now Adjust moves the full instant, so that a
// bucket in debt still expires within maxFill of now.
const maxDebt = maxFill / 2

// Adjust corrects a charge made earlier against the bucket in state s, at
// now: the arithmetic of settling a reservation (RL.SETTLE).
//
//   - n > 0 takes n more tokens with no check: the work they stand for is
//     done. The bucket may go below empty (a debt): its full instant moves
//     past now + the time to fill it, Take denies until the debt has
//     refilled, and Over reports it. The full instant saturates at
//     now + maxFill/2.
//   - n < 0 puts -n tokens back, up to the capacity: a full bucket holds
//     no more, as refilling never fills it past full.
//
// A negative now past the time range is ErrOverflow, as in Take.
func (b Bucket) Adjust(s State, now, n int64) (State, error) {
	if now > maxNow() {
		return s, ErrOverflow
	}
	d := b.debt(s, now)
	switch {
	case n > 0:
		add := wide.Mul(n, b.perToken)
		limit := wide.Mul(maxDebt, b.perNs)
		d = d.Add(add)
		if d.Cmp(limit) > 0 {
			d = limit
		}
	case n < 0:
		give := wide.Mul(-(n + 1), b.perToken).Add(wide.From(b.perToken)) // -n without overflowing at MinInt64
		if d.Cmp(give) <= 0 {
			return State{At: now}, nil
		}
		d = d.Sub(give)
	default:
		return s, nil
	}
	q, r, _ := d.DivMod(b.perNs)
	return State{At: now + q, Frac: r}, nil
}

// Over reports whether the bucket in state s is below empty at now: more
// taken than it holds, by a settle that charged past the capacity.
func (b Bucket) Over(s State, now int64) bool { return b.debt(s, now).Cmp(b.full) > 0 }

// BackWithin is how long from now until a bucket in debt holds no less
// than empty again; 0 when it is not in debt.
func (b Bucket) BackWithin(s State, now int64) int64 {
	if !b.Over(s, now) {
		return 0
	}
	q, _, _ := b.full.DivMod(b.perNs)
	return until(s.At-q, now)
}

// debt is how many units the bucket lacks at now, uncapped: past a whole
// bucket when a settle charged more than it held.
func (b Bucket) debt(s State, now int64) wide.U128 {
	switch {
	case s.At < now:
		return wide.U128{}
	case s.At == now:
		return wide.From(s.Frac)
	}
	if s.At-now > maxFill {
		return wide.Mul(maxFill, b.perNs)
	}
	return wide.Mul(s.At-now, b.perNs).Add(wide.From(s.Frac))
}

func maxNow() int64 { return 1<<63 - 1 - maxFill - 1 }
