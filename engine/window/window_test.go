package window

import (
	"encoding/binary"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"
)

const (
	ms  = int64(time.Millisecond)
	sec = int64(time.Second)
)

// start is a whole second, so windows of seconds begin there.
const start = int64(1_700_000_000) * sec

type step struct {
	at                      int64 // ms after start
	cost                    int64
	limited                 bool
	remaining, retry, reset int64 // ns; retry -1 for none
}

func check(t *testing.T, i int, d Decision, s step) {
	t.Helper()
	if d.Limited != s.limited || d.Remaining != s.remaining || d.RetryAfter != s.retry || d.ResetAfter != s.reset {
		t.Errorf("step %d: limited=%v remaining=%d retry=%d reset=%d, want %v %d %d %d",
			i, d.Limited, d.Remaining, d.RetryAfter, d.ResetAfter, s.limited, s.remaining, s.retry, s.reset)
	}
}

func TestFixedSteps(t *testing.T) {
	t.Parallel()
	f, _ := NewFixed(3, sec)
	steps := []step{
		{0, 2, false, 1, -1, 1000 * ms},
		{400, 1, false, 0, -1, 600 * ms},
		{400, 1, true, 0, 600 * ms, 600 * ms},
		{400, 4, true, 0, -1, 600 * ms},
		{999, 0, false, 0, -1, 1 * ms},
		{1000, 3, false, 0, -1, 1000 * ms}, // the boundary burst: 6 in 601 ms
		{2500, 0, false, 3, -1, 0},
	}
	var s FixedState
	for i, st := range steps {
		d, next, err := f.Incr(s, start+st.at*ms, st.cost)
		if err != nil {
			t.Fatal(err)
		}
		check(t, i, d, st)
		s = next
	}
}

func TestSlidingSteps(t *testing.T) {
	t.Parallel()
	w, _ := NewSliding(10, sec, 1)
	steps := []step{
		{0, 10, false, 0, -1, 2000 * ms},
		{1000, 1, true, 0, 100 * ms, 1000 * ms}, // 10 x 1.0
		{1250, 1, false, 1, -1, 1750 * ms},      // 1 + 10 x 0.75 = 8.5
		{1250, 2, true, 1, 50 * ms, 1750 * ms},  // needs 10 x (1-e) <= 7
		{1500, 0, false, 4, -1, 1500 * ms},      // 1 + 5
		{2000, 0, false, 9, -1, 1000 * ms},      // 0 + 1 x 1.0
		{3000, 0, false, 10, -1, 0},
	}
	var s SlidingState
	s.Counts = make([]int64, 2)
	for i, st := range steps {
		d, err := w.Decide(s, start+st.at*ms, st.cost)
		if err != nil {
			t.Fatal(err)
		}
		check(t, i, d, st)
		if !d.Limited && st.cost > 0 {
			s = w.Record(s, start+st.at*ms, st.cost, make([]int64, 2))
		}
	}
}

func TestLogSteps(t *testing.T) {
	t.Parallel()
	l, _ := NewLog(3, sec)
	steps := []step{
		{0, 1, false, 2, -1, 1000 * ms},
		{300, 1, false, 1, -1, 1000 * ms},
		{600, 1, false, 0, -1, 1000 * ms},
		{600, 1, true, 0, 400 * ms, 1000 * ms},
		{600, 2, true, 0, 700 * ms, 1000 * ms},
		{600, 3, true, 0, 1000 * ms, 1000 * ms},
		{600, 4, true, 0, -1, 1000 * ms},
		{1000, 1, false, 0, -1, 1000 * ms},
		{1300, 0, false, 1, -1, 700 * ms},
		{2600, 0, false, 3, -1, 0},
	}
	r := &Ring{}
	for i, st := range steps {
		d, err := l.Decide(r, start+st.at*ms, st.cost)
		if err != nil {
			t.Fatal(err)
		}
		check(t, i, d, st)
		if !d.Limited && st.cost > 0 {
			next := l.Record(r, start+st.at*ms, st.cost)
			r = &next
		}
	}
}

// request is one admitted request, for the reference models.
type request struct{ at, cost int64 }

// exactEstimate is the sliding-window counter's estimate straight from its
// definition, in rationals: the full sub-windows plus the oldest weighted
// by its share still inside the window.
func exactEstimate(s Sliding, log []request, now int64) *big.Rat {
	cur := floorTo(now, s.width)
	e := now - cur
	est := new(big.Rat)
	for _, r := range log {
		j := (cur - floorTo(r.at, s.width)) / s.width
		switch {
		case j < s.Precision:
			est.Add(est, new(big.Rat).SetInt64(r.cost))
		case j == s.Precision:
			est.Add(est, big.NewRat(r.cost*(s.width-e), s.width))
		}
	}
	return est
}

// TestSlidingAgainstDefinition replays random traffic with tiny windows
// (so every nanosecond can be tried) through the counter and its
// definition, and checks every decision, remaining, reset, and that
// retry_after is the first nanosecond at which the request fits.
func TestSlidingAgainstDefinition(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 300; round++ {
		precision := rng.Int64N(4) + 1
		window := precision * (rng.Int64N(9) + 1)
		limit := rng.Int64N(8) + 1
		s, err := NewSliding(limit, window, precision)
		if err != nil {
			t.Fatal(err)
		}
		st := SlidingState{Counts: make([]int64, precision+1)}
		var log []request
		now := int64(1_000_003)
		decide := func(at, cost int64) Decision {
			d, err := s.Decide(st, at, cost)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		for k := 0; k < 80; k++ {
			now += rng.Int64N(window/2 + 1)
			cost := rng.Int64N(limit + 2)
			d := decide(now, cost)
			est := exactEstimate(s, log, now)
			fits := new(big.Rat).Add(est, new(big.Rat).SetInt64(cost)).Cmp(new(big.Rat).SetInt64(limit)) <= 0
			if d.Limited == fits {
				t.Fatalf("round %d (%d per %dns, precision %d) step %d, cost %d: limited=%v, estimate %v", round, limit, window, precision, k, cost, d.Limited, est)
			}
			after := new(big.Rat).Set(est)
			if fits {
				after.Add(after, new(big.Rat).SetInt64(cost))
			}
			wantRem := max(limit-ceilRat(after), 0)
			if d.Remaining != wantRem {
				t.Fatalf("round %d step %d: remaining %d, want %d (estimate %v)", round, k, d.Remaining, wantRem, after)
			}
			if fits {
				if cost > 0 {
					log = append(log, request{now, cost})
					st = s.Record(st, now, cost, make([]int64, precision+1))
				}
			} else if cost > limit {
				if d.RetryAfter != -1 {
					t.Fatalf("cost above the limit: retry %d", d.RetryAfter)
				}
			} else {
				at := now
				for decide(at, cost).Limited {
					at++
				}
				if d.RetryAfter != at-now {
					t.Fatalf("round %d step %d: retry %d, first fit after %d", round, k, d.RetryAfter, at-now)
				}
			}
			// reset: the first instant the estimate is zero for good.
			at := now
			for exp := s.Expire(st); at < exp || exactEstimate(s, log, at).Sign() != 0; at++ {
			}
			if d.ResetAfter != at-now && !(len(log) == 0 && d.ResetAfter == 0) {
				t.Fatalf("round %d step %d: reset %d, estimate zero after %d", round, k, d.ResetAfter, at-now)
			}
			if exp := s.Expire(st); exp != 0 && exp > now && exactEstimate(s, log, exp-1).Sign() == 0 {
				t.Fatalf("round %d step %d: expires at %d but empty at %d", round, k, exp, exp-1)
			}
		}
	}
}

func ceilRat(r *big.Rat) int64 {
	q := new(big.Int).Div(r.Num(), r.Denom())
	if new(big.Rat).SetInt(q).Cmp(r) < 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.Int64()
}

// TestLogAgainstDefinition checks the sliding log against the plain list
// of admitted requests, every retry to the nanosecond, and that the ring
// never holds more stamps than the limit.
func TestLogAgainstDefinition(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	for round := 0; round < 300; round++ {
		window, limit := rng.Int64N(30)+1, rng.Int64N(12)+1
		l, _ := NewLog(limit, window)
		r := &Ring{}
		var log []request
		now := int64(1_000_000)
		inWindow := func(at int64) (sum int64) {
			for _, q := range log {
				if q.at > at-window {
					sum += q.cost
				}
			}
			return sum
		}
		for k := 0; k < 100; k++ {
			now += rng.Int64N(window/3 + 1)
			cost := rng.Int64N(limit/2 + 2)
			d, _ := l.Decide(r, now, cost)
			fits := inWindow(now)+cost <= limit
			if d.Limited == fits {
				t.Fatalf("round %d step %d: limited=%v with %d in the window, cost %d, limit %d", round, k, d.Limited, inWindow(now), cost, limit)
			}
			if fits && cost > 0 {
				next := l.Record(r, now, cost)
				if next.Oldest != next.at(0).At {
					t.Fatalf("round %d step %d: Oldest %d, oldest stamp at %d", round, k, next.Oldest, next.at(0).At)
				}
				// Kept apart and rebuilt, as the engine keeps it.
				next.Unpack(next.Seen, next.State(), next.Oldest, next.Words())
				r = &next
				log = append(log, request{now, cost})
			}
			if want := limit - inWindow(now); d.Remaining != want {
				t.Fatalf("round %d step %d: remaining %d, want %d", round, k, d.Remaining, want)
			}
			// Reset: when the window holds nothing once more.
			var newest int64
			for _, q := range log {
				if q.at > now-window {
					newest = q.at + window - now
				}
			}
			if d.ResetAfter != newest {
				t.Fatalf("round %d step %d: reset %d, want %d", round, k, d.ResetAfter, newest)
			}
			if len(log) > 0 && l.Expire(r) != log[len(log)-1].at+window {
				t.Fatalf("round %d step %d: expire %d, want %d", round, k, l.Expire(r), log[len(log)-1].at+window)
			}
			if !fits && cost <= limit {
				at := now
				for inWindow(at)+cost > limit {
					at++
				}
				if d.RetryAfter != at-now {
					t.Fatalf("round %d step %d: retry %d, want %d", round, k, d.RetryAfter, at-now)
				}
			}
			if int64(r.Len()) > limit || int64(r.Cap()) > max(limit+1, 4) {
				t.Fatalf("round %d step %d: %d stamps in %d slots for limit %d", round, k, r.Len(), r.Cap(), limit)
			}
		}
	}
}

// TestRecordLeavesTheOldRingIntact is what lets a caller drop a recorded
// state: the ring it came from still answers the same.
func TestRecordLeavesTheOldRingIntact(t *testing.T) {
	t.Parallel()
	l, _ := NewLog(4, 100)
	r := &Ring{}
	now := int64(1000)
	for k := 0; k < 50; k++ {
		now += 30
		before := r.AppendBinary(nil)
		dropped := l.Record(r, now, 1) // recorded, then dropped
		_ = dropped
		if string(r.AppendBinary(nil)) != string(before) {
			t.Fatalf("step %d: Record changed the ring it was given", k)
		}
		if d, _ := l.Decide(r, now, 1); !d.Limited {
			next := l.Record(r, now, 1)
			r = &next
		}
	}
}

// TestAdd checks that Add moves the stamps to the buffer it is given
// exactly when Record would move them, and records the same; that Plan
// and Take are Decide, Regrow and Add at once; and that a ring is narrow
// whenever it moves with every stamp costing 1.
func TestAdd(t *testing.T) {
	t.Parallel()
	l, _ := NewLog(40, 100)
	r := &Ring{}
	now := int64(1000)
	moves, widths := 0, 0
	for k := 0; k < 1000; k++ {
		now += 2 + int64(k/100%2)*30 // dense, sparse, dense...
		cost := int64(1)
		if k%29 == 5 {
			cost = 2
		}
		d, _ := l.Decide(r, now, cost)
		var st Step
		if err := l.Plan(r, now, cost, &st); err != nil || st.Decision != d {
			t.Fatalf("step %d: Plan decided %+v (%v), Decide %+v", k, st.Decision, err, d)
		}
		if d.Limited {
			continue
		}
		words := l.Regrow(r, now, cost)
		if st.Words() != words {
			t.Fatalf("step %d: Plan says %d words, Regrow %d", k, st.Words(), words)
		}
		before := r.AppendBinary(nil)
		taken := *r
		l.Take(&taken, &st, cost, make([]int64, words))
		want := l.Record(r, now, cost)
		buf := make([]int64, words)
		got := *r
		l.Add(&got, now, cost, buf)
		if string(r.AppendBinary(nil)) != string(before) {
			t.Fatalf("step %d: Add changed what the ring before it reads", k)
		}
		if string(got.AppendBinary(nil)) != string(want.AppendBinary(nil)) {
			t.Fatalf("step %d: Add left %x, Record %x", k, got.AppendBinary(nil), want.AppendBinary(nil))
		}
		if taken.State() != got.State() || string(taken.AppendBinary(nil)) != string(want.AppendBinary(nil)) {
			t.Fatalf("step %d: Take left %x, Record %x", k, taken.AppendBinary(nil), want.AppendBinary(nil))
		}
		inBuf := len(buf) > 0 && &got.buf[0] == &buf[0]
		if inBuf != (words > 0) {
			t.Fatalf("step %d: Regrow %d words, stamps moved to the buffer given: %v", k, words, inBuf)
		}
		if words > 0 {
			moves++
			if len(want.buf) != words {
				t.Fatalf("step %d: Regrow said %d words, Record made %d", k, words, len(want.buf))
			}
			if allOnes := got.sum == int64(got.n); got.wide == allOnes {
				t.Fatalf("step %d: moved with costs totalling %d over %d stamps, wide: %v", k, got.sum, got.n, got.wide)
			}
		}
		if got.wide != r.wide {
			widths++
		}
		r = &got
	}
	if moves < 4 || widths < 2 {
		t.Fatalf("the stamps moved %d times, changed width %d times: the test proves little", moves, widths)
	}
}

func TestCodecs(t *testing.T) {
	t.Parallel()
	l, _ := NewLog(5, 100)
	r := &Ring{}
	for now := int64(1000); now < 1300; now += 17 {
		if d, _ := l.Decide(r, now, 2); !d.Limited {
			next := l.Record(r, now, 2)
			r = &next
		}
	}
	b := r.AppendBinary(nil)
	got, err := DecodeRing(b)
	if err != nil || string(got.AppendBinary(nil)) != string(b) {
		t.Fatalf("ring round trip: %v", err)
	}
	// {10, 1, 1, 1}: Seen 5, one stamp 1ns before it. Record leaves the
	// newest stamp at Seen, and Decide relies on it. heavy: two stamps
	// costing MaxLogLimit each, more than any limit admits.
	one := binary.AppendUvarint([]byte{0, 1, 0}, MaxLogLimit)
	if _, err := DecodeRing(one); err != nil {
		t.Fatalf("one stamp costing MaxLogLimit: %v", err)
	}
	heavy := binary.AppendUvarint([]byte{0, 2, 0}, MaxLogLimit)
	heavy = binary.AppendUvarint(append(heavy, 0), MaxLogLimit)
	for _, bad := range [][]byte{nil, {2}, append(b, 0), b[:len(b)-1], {0, 1, 0, 0}, {10, 1, 1, 1}, heavy} {
		if _, err := DecodeRing(bad); err == nil {
			t.Errorf("DecodeRing(%v) accepted", bad)
		}
	}
	st := &SlidingState{Start: 5000, Counts: []int64{3, 0, 7}}
	b = st.AppendBinary(nil)
	got2, err := DecodeSliding(b)
	if err != nil || string(got2.AppendBinary(nil)) != string(b) {
		t.Fatalf("sliding round trip: %v", err)
	}
	for _, bad := range [][]byte{nil, {2}, {2, 0}, append(b, 1), b[:len(b)-1]} {
		if _, err := DecodeSliding(bad); err == nil {
			t.Errorf("DecodeSliding(%v) accepted", bad)
		}
	}
}

func TestParameters(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		err  error
	}{
		{"fixed zero limit", func() error { _, err := NewFixed(0, sec); return err }()},
		{"fixed zero window", func() error { _, err := NewFixed(1, 0); return err }()},
		{"fixed huge window", func() error { _, err := NewFixed(1, math.MaxInt64); return err }()},
		{"sliding negative limit", func() error { _, err := NewSliding(-1, sec, 1); return err }()},
		{"sliding zero precision", func() error { _, err := NewSliding(1, sec, 0); return err }()},
		{"sliding uneven precision", func() error { _, err := NewSliding(1, sec, 3); return err }()},
		{"sliding precision too fine", func() error { _, err := NewSliding(1, sec, MaxPrecision+1); return err }()},
		{"log huge limit", func() error { _, err := NewLog(MaxLogLimit+1, sec); return err }()},
		{"log zero window", func() error { _, err := NewLog(1, 0); return err }()},
	}
	for _, c := range cases {
		if c.err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	f, _ := NewFixed(1, sec)
	if _, _, err := f.Incr(FixedState{}, math.MaxInt64, 1); err == nil {
		t.Error("instant past the time range: no error")
	}
}

// Benchmarks: one request's step per algorithm, state in hand.

func BenchmarkFixedIncr(b *testing.B) {
	f, _ := NewFixed(1000, sec)
	var s FixedState
	now := start
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		now += ms
		d, next, _ := f.Incr(s, now, 1)
		if !d.Limited {
			s = next
		}
	}
}

func benchSliding(b *testing.B, precision int64) {
	w, _ := NewSliding(1000, sec, precision)
	s := SlidingState{Counts: make([]int64, precision+1)}
	buf := make([]int64, precision+1)
	now := start
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		now += ms
		if d, _ := w.Decide(s, now, 1); !d.Limited {
			s = w.Record(s, now, 1, buf)
		}
	}
}

func BenchmarkSlidingIncr(b *testing.B)            { benchSliding(b, 1) }
func BenchmarkSlidingIncrPrecision10(b *testing.B) { benchSliding(b, 10) }

func BenchmarkLogIncr(b *testing.B) {
	l, _ := NewLog(1000, sec)
	r := &Ring{}
	now := start
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		now += ms
		if d, _ := l.Decide(r, now, 1); !d.Limited {
			next := l.Record(r, now, 1)
			r = &next
		}
	}
}
