// Package bucket implements the token bucket (TB.TAKE) and the leaky bucket
// as a queue (LB.QUEUE) as pure functions of (state, now, parameters), in
// integer nanoseconds. It never reads a clock, takes a lock or knows about
// keys; it imports only the arithmetic helpers under engine/.
//
// The token bucket in plain words: a bucket holds at most Capacity tokens
// and gains Refill tokens every Period, continuously (a third of a token a
// third of the way through). A request of n tokens is admitted when the
// bucket holds at least n whole tokens, and takes them; a denied request
// takes nothing. A new bucket is full.
//
// Exact integers: the refill rate refill/period is rarely a whole number of
// nanoseconds per token, so the bucket counts in "units": one token is
// period/g units and one nanosecond refills refill/g units (g = gcd(refill,
// period)). Both are integers, so refilling is exact and no rounding ever
// accumulates.
//
// The state is the instant the bucket will be full again, the way GCRA keeps
// its theoretical arrival time: lazily, the level at now is what the elapsed
// time since then implies. Because that instant is a fraction of a
// nanosecond in general, it is stored as a whole nanosecond At and the
// remaining units Frac (0 <= Frac < units per ns): full at At + Frac/perNs.
// From that instant on the bucket is indistinguishable from a new one, which
// is when its key may expire.
//
// The leaky bucket as a queue is the same arithmetic read the other way:
// the "deficit" is the queue of requests waiting to be served one every
// period/rate, and a request's delay is the time until the queue ahead of
// it drains. Capacity bounds the queue: a request is admitted when
// delay + cost*interval <= capacity*interval.
//
// Time going backwards makes the bucket look emptier than it was (the full
// instant lies further ahead), never fuller, so it admits nothing extra.
package bucket

import (
	"errors"
	"fmt"
	"math"

	"github.com/limitdb/limitdb/engine/internal/wide"
)

// Errors for parameters that cannot describe a bucket.
var (
	ErrInvalid  = errors.New("invalid token bucket")
	ErrOverflow = errors.New("token bucket too large for the nanosecond time range")
)

// maxFill bounds the time to fill an empty bucket (about 146 years), so that
// now plus any state the bucket stores fits in an int64.
const maxFill = 1 << 62

// Bucket is a token bucket's parameters, validated by New.
type Bucket struct {
	Capacity int64 // tokens the bucket holds when full, >= 1
	perToken int64 // units in one token
	perNs    int64 // units refilled per nanosecond
	full     wide.U128
}

// New validates a bucket of capacity tokens refilled with refill tokens per
// period nanoseconds. Every parameter must be at least 1, and refilling an
// empty bucket must take less than about 146 years.
func New(capacity, refill, period int64) (Bucket, error) {
	switch {
	case capacity < 1:
		return Bucket{}, fmt.Errorf("%w: capacity must be at least 1, got %d", ErrInvalid, capacity)
	case refill < 1:
		return Bucket{}, fmt.Errorf("%w: refill must be at least 1, got %d", ErrInvalid, refill)
	case period < 1:
		return Bucket{}, fmt.Errorf("%w: period must be at least 1ns, got %d", ErrInvalid, period)
	}
	g := gcd(refill, period)
	b := Bucket{Capacity: capacity, perToken: period / g, perNs: refill / g}
	b.full = wide.Mul(capacity, b.perToken)
	if fill, ok := b.full.CeilDiv(b.perNs); !ok || fill > maxFill {
		return Bucket{}, fmt.Errorf("%w: refilling %d tokens at %d per %dns takes too long", ErrOverflow, capacity, refill, period)
	}
	return b, nil
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// State is a bucket's stored state: full again at At + Frac/perNs
// nanoseconds. The zero State is a full bucket.
type State struct {
	At   int64 // whole nanosecond of the full instant
	Frac int64 // units beyond At, 0 <= Frac < perNs
}

// Expire is the first whole nanosecond at which the bucket is full, when
// the state equals a new bucket's.
func (s State) Expire() int64 {
	if s.Frac > 0 {
		return s.At + 1
	}
	return s.At
}

// Decision is the outcome of one request. Durations are nanoseconds.
type Decision struct {
	Limited bool
	// State is what to store when the request was admitted with n > 0.
	State State
	// Remaining is the whole tokens left (after the take when admitted).
	Remaining int64
	// RetryAfter is how long until the same request would be admitted; -1
	// when admitted or when n exceeds the capacity and never fits.
	RetryAfter int64
	// ResetAfter is how long until the bucket is full again.
	ResetAfter int64
	// Wait is how long until the bucket as it was before this request is
	// full: the request's delay in the queue reading (LB.QUEUE).
	Wait int64
}

// deficit is how many units the bucket lacks at now, at most a whole
// bucket (a clock that went backwards past the state sees an empty one).
func (b Bucket) deficit(s State, now int64) wide.U128 {
	switch {
	case s.At < now:
		return wide.U128{}
	case s.At == now:
		return wide.From(s.Frac)
	}
	if s.At-now > maxFill { // also guards the product below
		return b.full
	}
	return wide.Mul(s.At-now, b.perNs).Add(wide.From(s.Frac)).Min(b.full)
}

// Take applies a request of n tokens at now to the bucket in state s.
// n == 0 is a peek: it describes the state and asks for nothing to be
// stored. A negative n is an error.
func (b Bucket) Take(s State, now, n int64) (Decision, error) {
	if n < 0 {
		return Decision{}, fmt.Errorf("%w: cost must not be negative, got %d", ErrInvalid, n)
	}
	if now > math.MaxInt64-maxFill-1 {
		return Decision{}, ErrOverflow
	}
	d := b.deficit(s, now)
	dec := Decision{RetryAfter: -1, State: s, Wait: until(s.Expire(), now)}
	dec.ResetAfter = dec.Wait
	if n > b.Capacity {
		dec.Limited = true
		dec.Remaining = b.remaining(d)
		return dec, nil
	}
	need := d.Add(wide.Mul(n, b.perToken))
	if need.Cmp(b.full) > 0 {
		dec.Limited = true
		dec.Remaining = b.remaining(d)
		dec.RetryAfter = b.fitsAt(s, n) - now
		return dec, nil
	}
	dec.Remaining = b.remaining(need)
	if n > 0 {
		q, r, _ := need.DivMod(b.perNs) // need <= full, so q <= maxFill
		dec.State = State{At: now + q, Frac: r}
		dec.ResetAfter = until(dec.State.Expire(), now)
	}
	return dec, nil
}

// until is the time from now to t, or 0 if t is past.
func until(t, now int64) int64 {
	if t <= now {
		return 0
	}
	return t - now
}

// remaining is the whole tokens in a bucket short of d units.
func (b Bucket) remaining(d wide.U128) int64 {
	missing, _ := d.CeilDiv(b.perToken)
	return b.Capacity - missing
}

// fitsAt is the first instant at which n <= Capacity tokens are in the
// bucket: when the deficit, (At - t)*perNs + Frac, has fallen to
// full - n*perToken. It is solved from the state itself rather than from
// the deficit at now, which is capped at a whole bucket when the clock has
// gone back past the state.
func (b Bucket) fitsAt(s State, n int64) int64 {
	room := b.full.Sub(wide.Mul(n, b.perToken))
	frac := wide.From(s.Frac)
	if room.Cmp(frac) < 0 {
		return s.At + 1 // even the fraction of a nanosecond left is too much
	}
	q, _, _ := room.Sub(frac).DivMod(b.perNs) // <= full/perNs <= maxFill
	return s.At - q
}
