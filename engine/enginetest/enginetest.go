// Package enginetest is the conformance suite every limiting algorithm
// runs, through its engine.Limiter adapter and the engine's keyspace: the
// promises the commands make, checked the same way for each algorithm.
//
//   - a fresh key admits exactly the limit, and a cost above it never fits;
//   - a peek (cost 0) writes nothing and creates no key;
//   - a denial charges nothing;
//   - the entry survives its serialised form (Entry.AppendBinary and
//     engine.DecodeEntry, the snapshot's) and behaves identically after;
//   - the entry expires exactly when its state equals a new key's;
//   - time going backwards admits nothing extra;
//   - zero, negative and huge parameters are errors, never overflows;
//   - retry_after is honest: the request fits then, and not a unit before.
//
// Keyspace serves the tests of the packages that copy a keyspace (a
// replica's, a loaded file's): two engines compared entry for entry.
//
// enginetest imports engine and the standard library; never resp.
package enginetest

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/engine/limit"
)

// Keyspace is every live key of e at now with its serialised entry.
func Keyspace(t testing.TB, e *engine.Engine, now int64) map[string]string {
	t.Helper()
	out := map[string]string{}
	for i := 0; i < e.Shards(); i++ {
		e.RangeShard(i, now, func(key string, ent *engine.Entry) bool {
			b, err := ent.AppendBinary(nil)
			if err != nil {
				t.Fatal(err)
			}
			out[key] = string(b)
			return true
		})
	}
	return out
}

// Algorithm describes one algorithm to the suite.
type Algorithm struct {
	Name string
	// New returns the algorithm with parameters under which a fresh key
	// admits exactly limit units at one instant, and refills or slides at
	// the time scale Period.
	New func(limit int64) (engine.Limiter, error)
	// Period is the algorithm's time scale in nanoseconds: the window, or
	// the time to regain the whole limit.
	Period int64
	// Unit is the nanoseconds in one unit of the reply's durations.
	Unit int64
	// ExactRetry is set when retry_after is rounded up from the exact
	// instant (every millisecond command); CL.THROTTLE rounds as
	// redis-cell does and may answer up to a millisecond early.
	ExactRetry bool
	// Invalid are constructions that must fail.
	Invalid map[string]func() error
}

// t0 is an arbitrary instant, not aligned to anything in particular.
const t0 = int64(1_767_225_600_123_456_789)

// Run runs the suite on a.
func Run(t *testing.T, a Algorithm) {
	t.Run("FreshKeyAdmitsExactlyTheLimit", func(t *testing.T) { freshExact(t, a) })
	t.Run("PeekWritesNothing", func(t *testing.T) { peekWritesNothing(t, a) })
	t.Run("DenialChargesNothing", func(t *testing.T) { denialChargesNothing(t, a) })
	t.Run("SerialisedRoundTrip", func(t *testing.T) { roundTrip(t, a) })
	t.Run("ExpiresExactlyWhenFresh", func(t *testing.T) { expiresWhenFresh(t, a) })
	t.Run("TimeBackwardsAdmitsNothingExtra", func(t *testing.T) { timeBackwards(t, a) })
	t.Run("BadParameters", func(t *testing.T) { badParameters(t, a) })
	t.Run("RetryAfterIsHonest", func(t *testing.T) { retryHonest(t, a) })
	t.Run("LimitChangesOnALiveKey", func(t *testing.T) { limitChanges(t, a) })
}

func mustNew(t *testing.T, a Algorithm, limit int64) engine.Limiter {
	t.Helper()
	l, err := a.New(limit)
	if err != nil {
		t.Fatalf("New(%d): %v", limit, err)
	}
	return l
}

// encode is the entry's serialised form; states compare by it.
func encode(t *testing.T, ent engine.Entry) []byte {
	t.Helper()
	b, err := ent.AppendBinary(nil)
	if err != nil {
		t.Fatalf("AppendBinary(%+v): %v", ent, err)
	}
	return b
}

func apply(t *testing.T, l engine.Limiter, ent engine.Entry, now, cost int64) (engine.Entry, limit.Result, bool) {
	t.Helper()
	next, r, write, err := l.Apply(ent, now, cost)
	if err != nil {
		t.Fatalf("Apply(cost %d at t0%+d): %v", cost, now-t0, err)
	}
	if r.Limited || cost == 0 {
		if write {
			t.Fatalf("cost %d at t0%+d: limited=%v but asked to write", cost, now-t0, r.Limited)
		}
		return ent, r, false
	}
	if !write {
		t.Fatalf("cost %d at t0%+d: admitted but not written", cost, now-t0)
	}
	return next, r, true
}

// walk drives a key through random traffic (seeded, so reproducible), the
// clock stepping back now and then, and calls visit with the entry and
// instant before each request.
func walk(t *testing.T, a Algorithm, l engine.Limiter, limit int64, seed uint64, steps int, visit func(ent engine.Entry, now int64)) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	var ent engine.Entry
	now := t0
	for i := 0; i < steps; i++ {
		if ent.Kind != engine.KindNone && ent.Expire != 0 && ent.Expire <= now {
			ent = engine.Entry{} // the engine would have dropped it
		}
		if visit != nil {
			visit(ent, now)
		}
		cost := []int64{0, 1, 1, 1, 2, limit / 2, limit}[rng.IntN(7)]
		ent, _, _ = apply(t, l, ent, now, cost)
		now += rng.Int64N(a.Period/max(limit, 1)*3 + 1)
		if rng.IntN(8) == 0 {
			now -= rng.Int64N(a.Period) // the clock steps back now and then
		}
	}
}

func freshExact(t *testing.T, a Algorithm) {
	for _, lim := range []int64{1, 3, 10, 100} {
		l := mustNew(t, a, lim)
		e := engine.New(clock.NewFake(t0), 1)
		key := []byte("k")
		for i := int64(0); i < lim; i++ {
			r, err := engine.Limit(e, key, t0, l, 1)
			if err != nil || r.Limited || r.Remaining != lim-1-i || r.Limit != lim || r.RetryAfter != -1 {
				t.Fatalf("limit %d, request %d: %+v %v", lim, i, r, err)
			}
		}
		r, _ := engine.Limit(e, key, t0, l, 1)
		if !r.Limited || r.Remaining != 0 || r.RetryAfter < 0 {
			t.Errorf("limit %d, request %d: %+v, want limited with a retry", lim, lim, r)
		}
		// The whole limit at once fits a fresh key; one more never fits.
		_, r, _ = apply(t, l, engine.Entry{}, t0, lim)
		if r.Limited {
			t.Errorf("limit %d: cost %d denied on a fresh key", lim, lim)
		}
		_, r, _ = apply(t, l, engine.Entry{}, t0, lim+1)
		if !r.Limited || r.RetryAfter != -1 || r.Remaining != lim {
			t.Errorf("limit %d: cost %d on a fresh key: %+v, want limited, retry -1", lim, lim+1, r)
		}
	}
}

func peekWritesNothing(t *testing.T, a Algorithm) {
	l := mustNew(t, a, 5)
	e := engine.New(clock.NewFake(t0), 1)
	key := []byte("k")
	r, err := engine.Limit(e, key, t0, l, 0)
	if err != nil || r.Limited || r.Remaining != 5 || r.RetryAfter != -1 || r.ResetAfter != 0 {
		t.Errorf("peek of a new key: %+v %v", r, err)
	}
	if e.Len() != 0 {
		t.Fatal("a peek created the key")
	}
	walk(t, a, l, 5, 1, 300, func(ent engine.Entry, now int64) {
		before := encode(t, ent)
		// A peek may answer limited: after the clock stepped back a state
		// can be over the limit, and a peek says so. It never writes.
		next, r, write, err := l.Apply(ent, now, 0)
		if err != nil || write {
			t.Fatalf("peek at t0%+d: %+v write=%v %v", now-t0, r, write, err)
		}
		if !bytes.Equal(encode(t, ent), before) {
			t.Fatal("a peek changed the entry it was given")
		}
		_ = next
	})
}

func denialChargesNothing(t *testing.T, a Algorithm) {
	l := mustNew(t, a, 4)
	walk(t, a, l, 4, 2, 400, func(ent engine.Entry, now int64) {
		for _, cost := range []int64{1, 3, 4, 5, math.MaxInt64} {
			before := encode(t, ent)
			_, r, write, err := l.Apply(ent, now, cost)
			if err != nil && cost == math.MaxInt64 {
				continue // refusing a cost that overflows is fine too
			}
			if err != nil {
				t.Fatalf("cost %d: %v", cost, err)
			}
			if !bytes.Equal(encode(t, ent), before) {
				t.Fatalf("cost %d at t0%+d changed the entry it was given", cost, now-t0)
			}
			if r.Limited && write {
				t.Fatalf("cost %d at t0%+d: denied but asked to write", cost, now-t0)
			}
			if r.Limited && cost <= 4 && r.RetryAfter < 0 {
				t.Fatalf("cost %d at t0%+d: denied with retry %d, but it fits in time", cost, now-t0, r.RetryAfter)
			}
			if cost > 4 && (!r.Limited || r.RetryAfter != -1) {
				t.Fatalf("cost %d above the limit: %+v", cost, r)
			}
		}
	})
}

func roundTrip(t *testing.T, a Algorithm) {
	l := mustNew(t, a, 7)
	rng := rand.New(rand.NewPCG(3, 3))
	walk(t, a, l, 7, 3, 500, func(ent engine.Entry, now int64) {
		if ent.Kind == engine.KindNone {
			return
		}
		b := encode(t, ent)
		got, n, err := engine.DecodeEntry(b)
		if err != nil || n != len(b) {
			t.Fatalf("DecodeEntry(%x): n=%d %v", b, n, err)
		}
		if !bytes.Equal(encode(t, got), b) {
			t.Fatalf("re-encoded %x, want %x", encode(t, got), b)
		}
		// Both copies answer the next request alike and move alike.
		later := now + rng.Int64N(a.Period)
		cost := rng.Int64N(9)
		n1, r1, w1 := apply(t, l, ent, later, cost)
		n2, r2, w2 := apply(t, l, got, later, cost)
		if r1 != r2 || w1 != w2 || !bytes.Equal(encode(t, n1), encode(t, n2)) {
			t.Fatalf("after a round trip: %+v (write %v), want %+v (write %v)", r2, w2, r1, w1)
		}
	})
}

func expiresWhenFresh(t *testing.T, a Algorithm) {
	const lim = 6
	l := mustNew(t, a, lim)
	walk(t, a, l, lim, 4, 400, func(ent engine.Entry, now int64) {
		if ent.Kind == engine.KindNone {
			return
		}
		if ent.Expire <= now {
			t.Fatalf("stored an entry already expired at t0%+d", now-t0)
		}
		// At Expire the key answers exactly as a new key does.
		for _, cost := range []int64{0, 1, lim} {
			_, r1, _ := apply(t, l, ent, ent.Expire, cost)
			_, r2, _ := apply(t, l, engine.Entry{}, ent.Expire, cost)
			if r1 != r2 {
				t.Fatalf("at its expiry, cost %d: %+v, a new key answers %+v", cost, r1, r2)
			}
		}
		// A nanosecond before, it still remembers something.
		if ent.Expire-1 >= now {
			if _, r, _ := apply(t, l, ent, ent.Expire-1, lim); !r.Limited {
				t.Fatalf("1ns before its expiry (t0%+d) the whole limit fits: the key could have expired earlier", ent.Expire-1-t0)
			}
		}
	})
	// Through the engine, the key disappears at that instant.
	e := engine.New(clock.NewFake(t0), 1)
	key := []byte("k")
	if _, err := engine.Limit(e, key, t0, l, 2); err != nil {
		t.Fatal(err)
	}
	ent, ok := e.Get(key, t0)
	if !ok || ent.Expire <= t0 {
		t.Fatalf("after a request: %+v ok=%v", ent, ok)
	}
	if _, ok := e.Get(key, ent.Expire-1); !ok {
		t.Error("gone before its expiry")
	}
	if _, ok := e.Get(key, ent.Expire); ok {
		t.Error("still there at its expiry")
	}
}

func timeBackwards(t *testing.T, a Algorithm) {
	const lim = 5
	l := mustNew(t, a, lim)
	// Exhausted at now, every earlier instant is exhausted too.
	walk(t, a, l, lim, 5, 200, func(ent engine.Entry, now int64) {
		for {
			next, r, _ := apply(t, l, ent, now, 1)
			if r.Limited {
				break
			}
			ent = next
		}
		for _, back := range []int64{1, a.Period / 7, a.Period / 2, a.Period, 3 * a.Period, now - t0 + a.Period} {
			if _, r, _ := apply(t, l, ent, now-back, 1); !r.Limited {
				t.Fatalf("exhausted at t0%+d, but admitted %dns earlier", now-t0, back)
			}
		}
	})
	// From any state, being earlier never admits what now denies.
	rng := rand.New(rand.NewPCG(6, 6))
	walk(t, a, l, lim, 6, 400, func(ent engine.Entry, now int64) {
		for _, cost := range []int64{1, 2, lim} {
			_, rNow, _ := apply(t, l, ent, now, cost)
			back := rng.Int64N(2*a.Period) + 1
			_, rBack, _ := apply(t, l, ent, now-back, cost)
			if rNow.Limited && !rBack.Limited {
				t.Fatalf("cost %d denied at t0%+d but admitted %dns earlier", cost, now-t0, back)
			}
		}
		back := rng.Int64N(2*a.Period) + 1
		_, rNow, _ := apply(t, l, ent, now, 0)
		_, rBack, _ := apply(t, l, ent, now-back, 0)
		if rBack.Remaining > rNow.Remaining {
			t.Fatalf("remaining %d at t0%+d but %d, more, %dns earlier", rNow.Remaining, now-t0, rBack.Remaining, back)
		}
	})
}

func badParameters(t *testing.T, a Algorithm) {
	for _, lim := range []int64{0, -1, math.MinInt64} {
		if _, err := a.New(lim); err == nil {
			t.Errorf("New(%d) succeeded", lim)
		}
	}
	for name, f := range a.Invalid {
		if err := f(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// The largest limit either fails cleanly or answers sanely.
	l, err := a.New(math.MaxInt64)
	if err != nil {
		return
	}
	ent := engine.Entry{}
	for _, cost := range []int64{math.MaxInt64, 1, math.MaxInt64, 0} {
		next, r, write, err := l.Apply(ent, t0, cost)
		if err != nil {
			continue
		}
		if r.Remaining < 0 || r.ResetAfter < 0 || r.Limit != math.MaxInt64 {
			t.Errorf("limit MaxInt64, cost %d: %+v", cost, r)
		}
		if write {
			ent = next
		}
	}
	// Negative costs are errors, and so are instants past the time range.
	l = mustNew(t, a, 3)
	if _, _, _, err := l.Apply(engine.Entry{}, t0, -1); err == nil {
		t.Error("cost -1: no error")
	}
	for _, now := range []int64{math.MaxInt64, math.MaxInt64 - a.Period} {
		if _, r, write, err := l.Apply(engine.Entry{}, now, 1); err == nil && write && r.ResetAfter < 0 {
			t.Errorf("at %d: %+v", now, r)
		}
	}
}

func retryHonest(t *testing.T, a Algorithm) {
	const lim = 8
	l := mustNew(t, a, lim)
	walk(t, a, l, lim, 8, 600, func(ent engine.Entry, now int64) {
		for _, cost := range []int64{1, 3, lim} {
			_, r, _ := apply(t, l, ent, now, cost)
			if !r.Limited {
				continue
			}
			at := now + r.RetryAfter*a.Unit
			if _, r2, _ := apply(t, l, ent, at, cost); r2.Limited && a.ExactRetry {
				t.Fatalf("cost %d denied at t0%+d with retry %d; still denied then: %+v", cost, now-t0, r.RetryAfter, r2)
			}
			if a.ExactRetry && r.RetryAfter > 0 {
				if _, r3, _ := apply(t, l, ent, at-a.Unit, cost); !r3.Limited {
					t.Fatalf("cost %d denied at t0%+d with retry %d; admitted a unit earlier", cost, now-t0, r.RetryAfter)
				}
			}
		}
	})
}

// limitChanges applies a smaller and then a larger limit to a key built
// under another: the state is read under the new parameters, the reply
// stays within them and the entry still serialises.
func limitChanges(t *testing.T, a Algorithm) {
	big, small := mustNew(t, a, 12), mustNew(t, a, 3)
	rng := rand.New(rand.NewPCG(10, 10))
	walk(t, a, big, 12, 10, 300, func(ent engine.Entry, now int64) {
		for _, l := range []engine.Limiter{small, big} {
			lim := int64(3)
			if l == big {
				lim = 12
			}
			cost := rng.Int64N(4)
			next, r, write, err := l.Apply(ent, now, cost)
			if err != nil {
				t.Fatalf("limit %d, cost %d: %v", lim, cost, err)
			}
			if r.Limit != lim || r.Remaining < 0 || r.Remaining > lim || r.ResetAfter < 0 {
				t.Fatalf("limit %d, cost %d at t0%+d: %+v", lim, cost, now-t0, r)
			}
			if write {
				if _, _, err := engine.DecodeEntry(encode(t, next)); err != nil {
					t.Fatalf("limit %d: the new state does not decode: %v", lim, err)
				}
			}
		}
	})
}

// String names the algorithm in failures.
func (a Algorithm) String() string { return fmt.Sprintf("%s (period %dns)", a.Name, a.Period) }
