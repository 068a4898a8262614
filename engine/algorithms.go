package engine

import (
	"fmt"
	"math"

	"github.com/limitdb/limitdb/engine/bucket"
	"github.com/limitdb/limitdb/engine/limit"
	"github.com/limitdb/limitdb/engine/window"
)

// The Limiter adapters of TB.TAKE, LB.QUEUE, FW.INCR, SW.INCR and SL.INCR.
// Each binds validated parameters to a pure algorithm in engine/bucket or
// engine/window and maps its state onto an Entry: A and B where it fits
// (no allocation per request), Ext where it does not. Their results are in
// milliseconds, rounded up (limit.CeilMillis); RetryAfter is -1 when
// admitted or when the cost can never fit. Every entry's Expire is the
// instant its state equals a new key's (a full bucket, an empty window).
//
// Apply never modifies the state of the entry it is given, Ext state
// included, so a caller may apply several limits and store none of them
// (all-or-nothing). The Ext states are written in place once stored; see
// extbox.go (and logbuf.go for the sliding log) for what that asks of
// callers.

// slidingWindowExt keeps a sliding window's sub-window counts.
var slidingWindowExt = ExtCodec{
	Append: func(b []byte, e *Entry) ([]byte, error) {
		st := extRead[window.SlidingState](e.Ext)
		if st == nil {
			return nil, fmt.Errorf("sliding window state is %T", e.Ext)
		}
		return st.AppendBinary(b), nil
	},
	Decode: func(b []byte, e *Entry) error {
		st, err := window.DecodeSliding(b)
		if err != nil {
			return err
		}
		e.Ext = newExtBox[window.SlidingState](st)
		return nil
	},
}

// slidingLogExt keeps a sliding log's ring of stamps.
var slidingLogExt = ExtCodec{
	// The serialised form is the ring's alone, A and B 0: the form
	// of every version, though A, B and C now hold part of the ring.
	Append: func(b []byte, e *Entry) ([]byte, error) {
		var r window.Ring
		if !loadRing(&r, e) {
			return nil, fmt.Errorf("sliding log state is %T", e.Ext)
		}
		e.A, e.B, e.C = 0, 0, 0
		return r.AppendBinary(b), nil
	},
	Decode: func(b []byte, e *Entry) error {
		r, err := window.DecodeRing(b)
		if err != nil {
			return err
		}
		ext, buf := newLogBuf(len(r.Words()))
		copy(buf, r.Words())
		e.A, e.B, e.C, e.Ext = r.Seen, r.State(), r.Oldest, ext
		return nil
	},
}

// result converts an algorithm's nanosecond durations to the reply's
// milliseconds.
func result(limited bool, lim, remaining, retryNs, resetNs int64) limit.Result {
	return limit.Result{
		Limited:    limited,
		Limit:      lim,
		Remaining:  remaining,
		RetryAfter: limit.CeilMillis(retryNs),
		ResetAfter: limit.CeilMillis(resetNs),
	}
}

// TokenBucket is TB.TAKE: a bucket of Capacity tokens refilled
// continuously. A = the whole nanosecond the bucket is full again, B = the
// fraction of a nanosecond beyond it, in the bucket's units.
type TokenBucket struct{ B bucket.Bucket }

// NewTokenBucket validates a bucket of capacity tokens, refilled with
// refill tokens every periodNs nanoseconds.
func NewTokenBucket(capacity, refill, periodNs int64) (TokenBucket, error) {
	b, err := bucket.New(capacity, refill, periodNs)
	return TokenBucket{b}, err
}

// Kind implements Limiter.
func (TokenBucket) Kind() Kind { return KindTokenBucket }

// Apply implements Limiter.
func (t TokenBucket) Apply(ent Entry, now, cost int64) (Entry, limit.Result, bool, error) {
	d, err := t.B.Take(bucket.State{At: ent.A, Frac: ent.B}, now, cost)
	if err != nil {
		return ent, limit.Result{}, false, err
	}
	next := Entry{Kind: KindTokenBucket, A: d.State.At, B: d.State.Frac, Expire: d.State.Expire()}
	return next, result(d.Limited, t.B.Capacity, d.Remaining, d.RetryAfter, d.ResetAfter), !d.Limited && cost > 0, nil
}

// LeakyQueue is LB.QUEUE: requests queue for a server that takes one every
// period/rate; an admitted request is told its delay (Result.Delay, -1 when
// denied). Its state is the token bucket's: when the queue will be empty.
type LeakyQueue struct{ B bucket.Bucket }

// NewLeakyQueue validates a queue of capacity requests served at rate per
// periodNs nanoseconds.
func NewLeakyQueue(capacity, rate, periodNs int64) (LeakyQueue, error) {
	b, err := bucket.New(capacity, rate, periodNs)
	return LeakyQueue{b}, err
}

// Kind implements Limiter.
func (LeakyQueue) Kind() Kind { return KindLeakyQueue }

// Apply implements Limiter.
func (q LeakyQueue) Apply(ent Entry, now, cost int64) (Entry, limit.Result, bool, error) {
	d, err := q.B.Take(bucket.State{At: ent.A, Frac: ent.B}, now, cost)
	if err != nil {
		return ent, limit.Result{}, false, err
	}
	next := Entry{Kind: KindLeakyQueue, A: d.State.At, B: d.State.Frac, Expire: d.State.Expire()}
	r := result(d.Limited, q.B.Capacity, d.Remaining, d.RetryAfter, d.ResetAfter)
	r.Delay = -1
	if !d.Limited {
		r.Delay = limit.CeilMillis(d.Wait)
	}
	return next, r, !d.Limited && cost > 0, nil
}

// FixedWindow is FW.INCR: A = the start of the window, B = its count.
type FixedWindow struct{ W window.Fixed }

// NewFixedWindow validates a fixed window of limit per windowNs
// nanoseconds, aligned to the Unix epoch.
func NewFixedWindow(limit, windowNs int64) (FixedWindow, error) {
	w, err := window.NewFixed(limit, windowNs)
	return FixedWindow{w}, err
}

// Kind implements Limiter.
func (FixedWindow) Kind() Kind { return KindFixedWindow }

// Apply implements Limiter.
func (f FixedWindow) Apply(ent Entry, now, cost int64) (Entry, limit.Result, bool, error) {
	d, st, err := f.W.Incr(window.FixedState{Start: ent.A, Count: ent.B}, now, cost)
	if err != nil {
		return ent, limit.Result{}, false, err
	}
	next := Entry{Kind: KindFixedWindow, A: st.Start, B: st.Count, Expire: f.W.Expire(st)}
	return next, result(d.Limited, f.W.Limit, d.Remaining, d.RetryAfter, d.ResetAfter), !d.Limited && cost > 0, nil
}

// SlidingWindow is SW.INCR. With precision 1 and counts below 2^32 the
// state fits the entry: A = the current window's start, B = its count in
// the low 32 bits and the previous window's in the high 32. Otherwise Ext
// holds a window.SlidingState written in place (extbox.go), and A, B are 0.
type SlidingWindow struct{ W window.Sliding }

// NewSlidingWindow validates a sliding window of limit per windowNs
// nanoseconds split into precision sub-windows (1 = Cloudflare's counter).
func NewSlidingWindow(limit, windowNs, precision int64) (SlidingWindow, error) {
	w, err := window.NewSliding(limit, windowNs, precision)
	return SlidingWindow{w}, err
}

// Kind implements Limiter.
func (SlidingWindow) Kind() Kind { return KindSlidingWindow }

// state is ent's sliding-window state, adopted by s's window: its counts
// from the entry's Ext, or unpacked from B into packed (two windows).
func (s SlidingWindow) state(ent Entry, packed *[2]int64) window.SlidingState {
	st := window.SlidingState{Start: ent.A, Counts: packed[:]}
	if x := extRead[window.SlidingState](ent.Ext); x != nil {
		st = *x
	} else {
		packed[0], packed[1] = int64(uint32(ent.B)), int64(uint64(ent.B)>>32)
	}
	return s.W.Adopt(st)
}

// Apply implements Limiter.
func (s SlidingWindow) Apply(ent Entry, now, cost int64) (Entry, limit.Result, bool, error) {
	var packed [2]int64
	st := s.state(ent, &packed)
	d, err := s.W.Decide(st, now, cost)
	if err != nil {
		return ent, limit.Result{}, false, err
	}
	r := result(d.Limited, s.W.Limit, d.Remaining, d.RetryAfter, d.ResetAfter)
	if d.Limited || cost == 0 {
		return ent, r, false, nil
	}
	if s.W.Precision == 1 {
		var out [2]int64
		ns := s.W.Record(st, now, cost, out[:])
		if out[0] <= math.MaxUint32 && out[1] <= math.MaxUint32 {
			b := int64(uint64(out[0]) | uint64(out[1])<<32)
			return Entry{Kind: KindSlidingWindow, A: ns.Start, B: b, Expire: s.W.Expire(ns)}, r, true, nil
		}
	}
	// The stage's counts are never st's: st is the box's current state,
	// an adopted copy, or a staged state whose successor gets new memory.
	dst, ext, _ := extWrite[window.SlidingState](ent.Ext)
	counts := dst.Counts
	if int64(len(counts)) != s.W.Precision+1 {
		counts = make([]int64, s.W.Precision+1)
	}
	*dst = s.W.Record(st, now, cost, counts)
	return Entry{Kind: KindSlidingWindow, Ext: ext, Expire: s.W.Expire(*dst)}, r, true, nil
}

// SlidingLog is SL.INCR: a window.Ring of the admitted requests' stamps
// (at most limit of them), kept apart (logbuf.go): A is the ring's Seen, B
// its State, C its Oldest, and Ext its buffer, written in place.
type SlidingLog struct{ L window.Log }

// NewSlidingLog validates a sliding log of limit (at most
// window.MaxLogLimit) per windowNs nanoseconds.
func NewSlidingLog(limit, windowNs int64) (SlidingLog, error) {
	l, err := window.NewLog(limit, windowNs)
	return SlidingLog{l}, err
}

// Kind implements Limiter.
func (SlidingLog) Kind() Kind { return KindSlidingLog }

// Apply implements Limiter.
func (l SlidingLog) Apply(ent Entry, now, cost int64) (Entry, limit.Result, bool, error) {
	var ring window.Ring
	if !loadRing(&ring, &ent) {
		return ent, limit.Result{}, false, fmt.Errorf("sliding log state is %T", ent.Ext)
	}
	var st window.Step
	if err := l.L.Plan(&ring, now, cost, &st); err != nil {
		return ent, limit.Result{}, false, err
	}
	r := result(st.Limited, l.L.Limit, st.Remaining, st.RetryAfter, st.ResetAfter)
	if st.Limited || cost == 0 {
		return ent, r, false, nil
	}
	var ext any
	if words := st.Words(); words > 0 {
		// The stamps move (or the key is new): to a new buffer, the
		// key's left as it was until the store replaces it.
		var buf []int64
		ext, buf = newLogBuf(words)
		l.L.Take(&ring, &st, cost, buf)
	} else if x, ok := ent.Ext.(storedLog); ok {
		// Appended past the stamps the key's state sees.
		l.L.Take(&ring, &st, cost, nil)
		ext = x.staged()
	} else {
		// Staged (the key charged twice in one RL.HITALL): ring may
		// share slots with the key's stored state, which recording on it
		// again could overwrite (window.Ring). Record on a copy, laid out
		// as ring is.
		ext = ent.Ext.(clonedExt).cloneExt()
		ring.Unpack(ring.Seen, ring.State(), ring.Oldest, ext.(storedLog).words())
		l.L.Take(&ring, &st, cost, nil)
	}
	return Entry{Kind: KindSlidingLog, A: ring.Seen, B: ring.State(), C: ring.Oldest, Ext: ext, Expire: l.L.Expire(&ring)}, r, true, nil
}
