package gcra

import "math"

// MaxDebt bounds how far past now Adjust moves a TAT: about 73 years, so
// that a state in debt still expires within the span the snapshot loader
// accepts and now plus any stored TAT fits in an int64.
const MaxDebt = 1 << 61

// Adjust corrects a charge made earlier against a key whose TAT is tat,
// at now, in the Limit's unit. It is the arithmetic of settling a
// reservation (RL.SETTLE):
//
//   - delta > 0 charges delta more units with no limit check: the work
//     they stand for is done. The TAT moves to max(tat, now) + delta*T and
//     may lie past now + τ, a key over its limit, which Decide then denies
//     until the debt has drained. It saturates at now + MaxDebt.
//   - delta < 0 gives -delta units back: the TAT moves back by -delta*T,
//     but never before now. A TAT at or before now is a fresh key with its
//     whole burst; moving it further back would grant credit beyond the
//     burst, which no charge ever bought.
//   - delta == 0 returns max(tat, now)'s equivalent, tat itself.
//
// The returned TAT is what to store; one at or before now is a fresh key.
func Adjust(tat, now int64, l Limit, delta int64) int64 {
	switch {
	case delta > 0:
		base := max(tat, now)
		room := now + MaxDebt - base
		if room <= 0 {
			return base
		}
		if delta > room/l.Interval {
			return now + MaxDebt
		}
		return base + delta*l.Interval
	case delta < 0:
		if tat <= now {
			return tat
		}
		n := -delta
		if delta == math.MinInt64 || n >= (tat-now)/l.Interval+1 {
			return now
		}
		return max(tat-n*l.Interval, now)
	}
	return tat
}
