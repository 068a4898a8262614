package engine

import (
	"math"

	"github.com/limitdb/limitdb/engine/bucket"
	"github.com/limitdb/limitdb/engine/limit"
	"github.com/limitdb/limitdb/engine/window"
)

// The Adjuster side of the adapters that take reservations (reserve.go):
// the token bucket, the fixed window and the sliding window. Each answers
// an Adjust with the peek (cost 0) of the state it leaves, Limited when
// that state is over its limit.

// Mark implements Adjuster: a bucket's give-back needs no mark.
func (TokenBucket) Mark(Entry) int64 { return 0 }

// Adjust implements Adjuster: tokens taken or put back (bucket.Adjust).
func (t TokenBucket) Adjust(ent Entry, now, _, delta int64) (Entry, limit.Result, error) {
	s, err := t.B.Adjust(bucket.State{At: ent.A, Frac: ent.B}, now, delta)
	if err != nil {
		return ent, limit.Result{}, err
	}
	next := Entry{Kind: KindTokenBucket, A: s.At, B: s.Frac, Expire: s.Expire()}
	_, r, _, err := t.Apply(next, now, 0)
	if t.B.Over(s, now) {
		// A peek of a bucket in debt sees it empty; say it is over.
		r.Limited, r.Remaining, r.RetryAfter = true, 0, limit.CeilMillis(t.B.BackWithin(s, now))
	}
	return next, r, err
}

// Mark implements Adjuster: the start of the window charged.
func (FixedWindow) Mark(ent Entry) int64 { return ent.A }

// Adjust implements Adjuster (window.Fixed.Adjust).
func (f FixedWindow) Adjust(ent Entry, now, mark, delta int64) (Entry, limit.Result, error) {
	st, err := f.W.Adjust(window.FixedState{Start: ent.A, Count: ent.B}, now, mark, delta)
	if err != nil {
		return ent, limit.Result{}, err
	}
	next := Entry{Kind: KindFixedWindow, A: st.Start, B: st.Count, Expire: f.W.Expire(st)}
	if st.Count == 0 {
		next = Entry{}
	}
	_, r, _, err := f.Apply(next, now, 0)
	return next, r, err
}

// Mark implements Adjuster: the start of the sub-window charged.
func (s SlidingWindow) Mark(ent Entry) int64 {
	if x := extRead[window.SlidingState](ent.Ext); x != nil {
		return x.Start
	}
	return ent.A
}

// Adjust implements Adjuster (window.Sliding.Adjust). It builds its state
// in counts of its own: the entry it is given stays as it was.
func (s SlidingWindow) Adjust(ent Entry, now, mark, delta int64) (Entry, limit.Result, error) {
	var packed [2]int64
	st := s.state(ent, &packed)
	ns, err := s.W.Adjust(st, now, mark, delta, make([]int64, s.W.Precision+1))
	if err != nil {
		return ent, limit.Result{}, err
	}
	var next Entry
	switch exp := s.W.Expire(ns); {
	case exp == 0:
	case s.W.Precision == 1 && ns.Counts[0] <= math.MaxUint32 && ns.Counts[1] <= math.MaxUint32:
		next = Entry{Kind: KindSlidingWindow, A: ns.Start, B: int64(uint64(ns.Counts[0]) | uint64(ns.Counts[1])<<32), Expire: exp}
	default:
		next = Entry{Kind: KindSlidingWindow, Ext: newExtBox[window.SlidingState](ns), Expire: exp}
	}
	_, r, _, err := s.Apply(next, now, 0)
	return next, r, err
}
