// Package gcra implements the generic cell rate algorithm (GCRA) as pure
// functions of (state, now, parameters). It owns the arithmetic behind
// CL.THROTTLE (redis-cell), GCRA (as Redis proposed it in redis/redis PR
// #15191, which no released Redis or Valkey has) and the leaky-bucket
// queue; it never reads a clock, takes a lock or knows about keys.
//
// GCRA in plain words: a limit of one request every emission interval T,
// with a burst of B extra requests, is tracked by a single number, the
// theoretical arrival time (TAT): the instant at which the key would be back
// to "fresh" if no more requests came. A request of n units moves the TAT to
// max(TAT, now) + n*T. It is admitted when that new TAT lies no further in
// the future than the delay variation tolerance τ = (B+1)*T, i.e. when
// now >= newTAT - τ. A denied request leaves the TAT alone, so it is never
// charged. Once now >= TAT the state is indistinguishable from a fresh key,
// which is why a key can expire exactly at its TAT.
//
// All times are integers in one unit chosen by the caller (nanoseconds for
// CL.THROTTLE, microseconds for GCRA). Time going backwards only makes the
// stored TAT look further away, so it can never admit extra requests.
package gcra

import (
	"errors"
	"math"
)

// Errors returned for parameters that cannot describe a limit.
var (
	ErrZeroRate = errors.New("zero rates are not supported")
	ErrOverflow = errors.New("parameters overflow the time range")
)

// Limit is a GCRA limit in the caller's time unit.
type Limit struct {
	Interval  int64 // emission interval T: time between requests at the sustained rate, > 0
	Tolerance int64 // delay variation tolerance τ = (max_burst+1) * T
}

// NewLimit builds a Limit from an emission interval and a burst, checking
// that τ fits in an int64.
func NewLimit(interval, maxBurst int64) (Limit, error) {
	if interval <= 0 {
		return Limit{}, ErrZeroRate
	}
	if maxBurst < 0 || maxBurst >= math.MaxInt64 || interval > math.MaxInt64/(maxBurst+1) {
		return Limit{}, ErrOverflow
	}
	return Limit{Interval: interval, Tolerance: interval * (maxBurst + 1)}, nil
}

// Decision is the outcome of one request against a TAT.
type Decision struct {
	Limited bool
	// TAT is the state to store when Limited is false and quantity > 0.
	TAT int64
	// TTL is how long until the key is fresh again: newTAT-now when admitted,
	// oldTAT-now when limited.
	TTL int64
	// RetryAfter is how long until the same request would be admitted, or -1
	// when admitted or when the request is larger than the whole tolerance
	// and can never be admitted.
	RetryAfter int64
	// Next is τ - TTL, the headroom left, from which callers derive
	// "remaining" with their own rounding.
	Next int64
}

// Decide applies a request of quantity units at now to a key whose TAT is
// tat (any instant <= now, such as 0, means a fresh key). A
// quantity of 0 is a peek: the decision describes the current state and its
// TAT equals max(tat, now), which the caller need not store.
func Decide(tat, now int64, l Limit, quantity int64) (Decision, error) {
	if quantity < 0 {
		return Decision{}, ErrOverflow
	}
	if quantity > 0 && l.Interval > math.MaxInt64/quantity {
		return Decision{}, ErrOverflow
	}
	increment := l.Interval * quantity
	if tat < now {
		tat = now // a TAT in the past is a fresh key
	}
	base := tat
	if base > math.MaxInt64-increment {
		return Decision{}, ErrOverflow
	}
	newTAT := base + increment
	allowAt := newTAT - l.Tolerance
	d := Decision{RetryAfter: -1}
	if diff := now - allowAt; diff < 0 {
		d.Limited = true
		if increment <= l.Tolerance {
			d.RetryAfter = -diff
		}
		d.TAT = tat
		d.TTL = tat - now
	} else {
		d.TAT = newTAT
		d.TTL = newTAT - now
	}
	d.Next = l.Tolerance - d.TTL
	return d, nil
}
