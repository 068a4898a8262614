package gcra

import (
	"math"

	"github.com/limitdb/limitdb/engine/limit"
)

// Reply is the uniform limiter reply; here durations are in seconds.
type Reply = limit.Result

// CellLimit builds the limit CL.THROTTLE describes: count requests per period
// seconds, plus a burst of maxBurst, in nanoseconds. Like redis-cell it
// divides the period by count in float64 and truncates, so the emission
// interval is bit-for-bit the one redis-cell computes.
func CellLimit(maxBurst, count, periodSec int64) (Limit, error) {
	if count <= 0 || periodSec <= 0 {
		return Limit{}, ErrZeroRate
	}
	if periodSec > math.MaxInt64/int64(1e9) {
		return Limit{}, ErrOverflow
	}
	interval := int64(float64(periodSec*1e9) / float64(count))
	return NewLimit(interval, maxBurst)
}

// Throttle answers CL.THROTTLE for a key whose TAT is tat (nanoseconds, 0 for
// a fresh key). It returns the reply in seconds and the TAT to store; write
// is false when nothing must be stored (a denial or a peek).
func Throttle(tat, now int64, l Limit, quantity int64) (r Reply, newTAT int64, write bool, err error) {
	d, err := Decide(tat, now, l, quantity)
	if err != nil {
		return Reply{}, 0, false, err
	}
	r = Reply{
		Limited:    d.Limited,
		Limit:      l.Tolerance / l.Interval,
		Remaining:  cellRemaining(d.Next, l.Interval),
		RetryAfter: -1,
		ResetAfter: cellSeconds(d.TTL),
	}
	if d.RetryAfter >= 0 {
		r.RetryAfter = cellSeconds(d.RetryAfter)
	}
	return r, d.TAT, !d.Limited && quantity > 0, nil
}

// cellRemaining reproduces redis-cell's "remaining": the headroom divided by
// the emission interval, both truncated to whole microseconds and divided in
// float64, then truncated toward zero; 0 once the headroom is a whole
// interval or more below zero.
func cellRemaining(next, interval int64) int64 {
	if next <= -interval {
		return 0
	}
	q := float64(next/1000) / float64(interval/1000)
	switch {
	case math.IsNaN(q):
		return 0
	case q >= math.MaxInt64:
		return math.MaxInt64
	case q <= math.MinInt64:
		return math.MinInt64
	}
	return int64(q)
}

// cellSeconds rounds a duration in nanoseconds to seconds the way redis-cell
// does: whole seconds, plus one when the fraction holds at least 1 ms.
func cellSeconds(ns int64) int64 {
	s := ns / 1e9
	if (ns%1e9)/1e6 > 0 {
		s++
	}
	return s
}

// RedisLimit builds the limit the GCRA command describes, in microseconds:
// tokensPerPeriod per period seconds (fractional allowed) with maxBurst extra.
// As in Redis, the interval is rounded to the nearest microsecond, at least 1.
func RedisLimit(maxBurst, tokensPerPeriod int64, periodSec float64) (Limit, error) {
	if tokensPerPeriod <= 0 || !(periodSec > 0) {
		return Limit{}, ErrZeroRate
	}
	interval := int64(periodSec*1e6/float64(tokensPerPeriod) + 0.5)
	if interval == 0 {
		interval = 1
	}
	return NewLimit(interval, maxBurst)
}

// RedisGCRA answers the GCRA command for a key whose TAT is tat
// (microseconds, 0 for a fresh key): durations are rounded up to whole
// seconds and remaining is an integer division, as in the GCRA command
// Redis proposed (redis/redis PR #15191).
func RedisGCRA(tat, now int64, l Limit, tokens int64) (r Reply, newTAT int64, write bool, err error) {
	d, err := Decide(tat, now, l, tokens)
	if err != nil {
		return Reply{}, 0, false, err
	}
	r = Reply{
		Limited:    d.Limited,
		Limit:      l.Tolerance / l.Interval,
		RetryAfter: -1,
		ResetAfter: ceilDiv(d.TTL, 1e6),
	}
	if d.Next > -l.Interval {
		r.Remaining = d.Next / l.Interval
	}
	if d.RetryAfter >= 0 {
		r.RetryAfter = ceilDiv(d.RetryAfter, 1e6)
	}
	return r, d.TAT, !d.Limited && tokens > 0, nil
}

// ceilDiv divides rounding toward +inf.
func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a > 0) == (b > 0) {
		q++
	}
	return q
}
