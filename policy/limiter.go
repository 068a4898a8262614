package policy

import (
	"errors"
	"math"
	"math/bits"

	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/engine/gcra"
	"github.com/limitdb/limitdb/engine/limit"
)

// builders make the engine.Limiter for each algorithm from a validated
// policy. Every limiter answers in milliseconds.
var builders = map[Algorithm]func(p Policy) (engine.Limiter, error){
	GCRA: newGCRA,
	TokenBucket: func(p Policy) (engine.Limiter, error) {
		return unwrap(engine.NewTokenBucket(p.EffectiveBurst(), p.Limit, int64(p.Period)))
	},
	LeakyQueue: func(p Policy) (engine.Limiter, error) {
		return unwrap(engine.NewLeakyQueue(p.EffectiveBurst(), p.Limit, int64(p.Period)))
	},
	FixedWindow: func(p Policy) (engine.Limiter, error) {
		return unwrap(engine.NewFixedWindow(p.Limit, int64(p.Period)))
	},
	SlidingWindow: func(p Policy) (engine.Limiter, error) {
		return unwrap(engine.NewSlidingWindow(p.Limit, int64(p.Period), 1))
	},
	SlidingLog: func(p Policy) (engine.Limiter, error) {
		return unwrap(engine.NewSlidingLog(p.Limit, int64(p.Period)))
	},

	Concurrency: func(p Policy) (engine.Limiter, error) {
		return unwrap(engine.NewLeaseLimiter(p.Limit, int64(p.Period)))
	},
}

// unwrap boxes a constructor's limiter once, when the policy is compiled,
// so applying it later allocates nothing.
func unwrap[L engine.Limiter](l L, err error) (engine.Limiter, error) {
	if err != nil {
		return nil, err
	}
	return l, nil
}

var errUnavailable = errors.New("algorithm not available in this build")

func newLimiter(p Policy) (engine.Limiter, error) {
	if p.Calendar.Unit != 0 {
		return newCalendarLimiter(p)
	}

	b := builders[p.Algorithm]
	if b == nil {
		return nil, errUnavailable
	}
	return b(p)
}

// gcraLimiter is GCRA in nanoseconds with replies in milliseconds: limit
// requests per period spread evenly (one every period/limit), at most burst
// at once. It stores the TAT in A and the emission interval it was computed
// with in B, so that when the policy's rate changes the client's usage,
// counted in requests, carries over (see rescale).
type gcraLimiter struct{ l gcra.Limit }

func newGCRA(p Policy) (engine.Limiter, error) {
	interval := int64(p.Period) / p.Limit
	if interval < 1 {
		return nil, errors.New("more than one request per nanosecond")
	}
	l, err := gcra.NewLimit(interval, p.EffectiveBurst()-1)
	if err != nil {
		return nil, errors.New("burst times period/limit overflows the time range")
	}
	return gcraLimiter{l}, nil
}

// Kind implements engine.Limiter.
func (gcraLimiter) Kind() engine.Kind { return engine.KindGCRA }

// Apply implements engine.Limiter. A cost of 0 peeks.
func (g gcraLimiter) Apply(ent engine.Entry, now, cost int64) (engine.Entry, limit.Result, bool, error) {
	tat, rescaled := ent.A, false
	if ent.B > 0 && ent.B != g.l.Interval && tat > now {
		tat, rescaled = now+rescale(tat-now, g.l.Interval, ent.B), true
	}
	d, err := gcra.Decide(tat, now, g.l, cost)
	if err != nil {
		return ent, limit.Result{}, false, err
	}
	r := limit.Result{
		Limited:    d.Limited,
		Limit:      g.l.Tolerance / g.l.Interval,
		RetryAfter: -1,
		ResetAfter: limit.CeilMillis(d.TTL),
	}
	if d.Next > 0 {
		r.Remaining = d.Next / g.l.Interval
	}
	if d.RetryAfter >= 0 {
		r.RetryAfter = limit.CeilMillis(d.RetryAfter)
	}
	// A rescaled TAT is stored even on a denial: it is the same usage in the
	// new unit, not a charge, and storing it makes the key expire when the
	// new rate says it is fresh, not the old one.
	write := cost > 0 && (!d.Limited || rescaled)
	return engine.Entry{Kind: engine.KindGCRA, A: d.TAT, B: g.l.Interval, Expire: d.TAT}, r, write, nil
}

// rescale converts a debt of d nanoseconds accrued at oldInterval per
// request into the same number of requests at newInterval, rounding up so a
// change never frees a partial request.
func rescale(d, newInterval, oldInterval int64) int64 {
	hi, lo := bits.Mul64(uint64(d), uint64(newInterval))
	if hi >= uint64(oldInterval) {
		return math.MaxInt64 / 2
	}
	q, rem := bits.Div64(hi, lo, uint64(oldInterval))
	if rem != 0 {
		q++
	}
	if q > math.MaxInt64/2 {
		return math.MaxInt64 / 2
	}
	return int64(q)
}

// Limiter validates p's algorithm, limit, period and burst and builds its
// engine.Limiter, for callers that name and key their limits themselves
// (Envoy's rate limit service): p.Name is not looked at, and p.Shadow is
// the caller's to honour. Errors are *FieldError.
func Limiter(p Policy) (engine.Limiter, error) {
	p.Name = "limiter"
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return newLimiter(p)
}
