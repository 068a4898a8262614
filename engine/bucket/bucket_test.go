package bucket

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"
)

const ms = int64(time.Millisecond)

func TestTokenBucketSteps(t *testing.T) {
	t.Parallel()
	b, err := New(10, 1, int64(time.Second)) // TB.TAKE tb 10 1 1s
	if err != nil {
		t.Fatal(err)
	}
	start := int64(1_700_000_000) * int64(time.Second)
	steps := []struct {
		at                      int64 // ms after start
		n                       int64
		limited                 bool
		remaining, retry, reset int64 // ns; retry -1 for none
	}{
		{0, 1, false, 9, -1, 1000 * ms},
		{0, 9, false, 0, -1, 10000 * ms},
		{0, 1, true, 0, 1000 * ms, 10000 * ms},
		{250, 1, true, 0, 750 * ms, 9750 * ms},
		{250, 0, false, 0, -1, 9750 * ms}, // peek
		{1000, 1, false, 0, -1, 10000 * ms},
		{1000, 11, true, 0, -1, 10000 * ms}, // more than the bucket holds
		{4500, 3, false, 0, -1, 9500 * ms},  // 3.5 tokens, half a token left
		{4500, 0, false, 0, -1, 9500 * ms},
		{20000, 10, false, 0, -1, 10000 * ms}, // full again: the whole bucket
	}
	var s State
	for i, st := range steps {
		d, err := b.Take(s, start+st.at*ms, st.n)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if d.Limited != st.limited || d.Remaining != st.remaining || d.RetryAfter != st.retry || d.ResetAfter != st.reset {
			t.Errorf("step %d: limited=%v remaining=%d retry=%d reset=%d, want %v %d %d %d",
				i, d.Limited, d.Remaining, d.RetryAfter, d.ResetAfter, st.limited, st.remaining, st.retry, st.reset)
		}
		if !d.Limited && st.n > 0 {
			s = d.State
		}
	}
}

func TestLeakyQueueDelays(t *testing.T) {
	t.Parallel()
	// LB.QUEUE capacity 3, 10 per second: delays 0, 100, 200 ms, then denied.
	b, _ := New(3, 10, int64(time.Second))
	now := int64(1e18)
	var s State
	for i, want := range []int64{0, 100 * ms, 200 * ms} {
		d, _ := b.Take(s, now, 1)
		if d.Limited || d.Wait != want {
			t.Fatalf("request %d: limited=%v wait=%d, want %d", i, d.Limited, d.Wait, want)
		}
		s = d.State
	}
	d, _ := b.Take(s, now, 1)
	if !d.Limited || d.RetryAfter != 100*ms {
		t.Errorf("fourth: limited=%v retry=%d, want denied, 100ms", d.Limited, d.RetryAfter)
	}
}

// model is the token bucket in exact rational arithmetic, straight from
// its definition: the level grows at refill/period up to capacity.
type model struct {
	capacity, refill, period int64
	level                    *big.Rat
	at                       int64
}

func (m *model) levelAt(now int64) *big.Rat {
	l := new(big.Rat).Mul(big.NewRat(m.refill, m.period), new(big.Rat).SetInt64(now-m.at))
	l.Add(l, m.level)
	if c := new(big.Rat).SetInt64(m.capacity); l.Cmp(c) > 0 {
		return c
	}
	return l
}

func floorRat(r *big.Rat) int64 { return new(big.Int).Div(r.Num(), r.Denom()).Int64() }
func ceilRat(r *big.Rat) int64 {
	return -floorRat(new(big.Rat).Neg(r))
}

// TestAgainstExactModel replays random traffic through the bucket and the
// rational model with awkward rates (refill not dividing period) and checks
// every field, including that retry_after is the exact nanosecond.
func TestAgainstExactModel(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 200; round++ {
		capacity, refill, period := rng.Int64N(6)+1, rng.Int64N(9)+1, rng.Int64N(40)+1
		b, err := New(capacity, refill, period)
		if err != nil {
			t.Fatal(err)
		}
		now := int64(1000)
		m := &model{capacity, refill, period, big.NewRat(capacity, 1), now}
		var s State
		for step := 0; step < 60; step++ {
			now += rng.Int64N(3*period/refill + 2)
			n := rng.Int64N(capacity + 2)
			d, err := b.Take(s, now, n)
			if err != nil {
				t.Fatal(err)
			}
			level := m.levelAt(now)
			admit := level.Cmp(new(big.Rat).SetInt64(n)) >= 0 && n <= capacity
			if d.Limited == admit {
				t.Fatalf("round %d step %d (cap %d, %d per %dns, n %d): limited=%v, level %v", round, step, capacity, refill, period, n, d.Limited, level)
			}
			after := new(big.Rat).Set(level)
			if admit {
				after.Sub(after, new(big.Rat).SetInt64(n))
			}
			missing := new(big.Rat).Sub(new(big.Rat).SetInt64(capacity), after)
			resetNs := ceilRat(new(big.Rat).Mul(missing, big.NewRat(period, refill)))
			if d.Remaining != floorRat(after) || d.ResetAfter != resetNs {
				t.Fatalf("round %d step %d: remaining=%d reset=%d, want %d %d", round, step, d.Remaining, d.ResetAfter, floorRat(after), resetNs)
			}
			if admit {
				if n > 0 {
					m.level, m.at = after, now
					s = d.State
				}
				continue
			}
			if n > capacity {
				if d.RetryAfter != -1 {
					t.Fatalf("n %d > capacity: retry %d", n, d.RetryAfter)
				}
				continue
			}
			// Exact: admitted at now+retry, not a nanosecond before.
			if d2, _ := b.Take(s, now+d.RetryAfter, n); d2.Limited {
				t.Fatalf("round %d step %d: still denied after retry %d", round, step, d.RetryAfter)
			}
			if d.RetryAfter > 0 {
				if d2, _ := b.Take(s, now+d.RetryAfter-1, n); !d2.Limited {
					t.Fatalf("round %d step %d: admitted 1ns before retry %d", round, step, d.RetryAfter)
				}
			}
		}
	}
}

func TestParameters(t *testing.T) {
	t.Parallel()
	bad := []struct {
		name                     string
		capacity, refill, period int64
	}{
		{"zero capacity", 0, 1, 1},
		{"negative capacity", -1, 1, 1},
		{"zero refill", 1, 0, 1},
		{"zero period", 1, 1, 0},
		{"negative period", 1, 1, -1},
		{"fills in centuries", math.MaxInt64, 1, 1},
		{"fills in centuries too", 1 << 40, 1, 1 << 30},
	}
	for _, c := range bad {
		if _, err := New(c.capacity, c.refill, c.period); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	// Huge but sane: every product goes through 128 bits.
	b, err := New(math.MaxInt64, math.MaxInt64, 1)
	if err != nil {
		t.Fatal(err)
	}
	d, err := b.Take(State{}, 1e18, math.MaxInt64)
	if err != nil || d.Limited || d.Remaining != 0 || d.ResetAfter != 1 {
		t.Errorf("huge bucket: %+v %v", d, err)
	}
	if _, err := b.Take(State{}, 1e18, -1); err == nil {
		t.Error("negative cost: no error")
	}
}

// BenchmarkTake is one TB.TAKE step: refill, decide, new state.
func BenchmarkTake(b *testing.B) {
	bk, _ := New(100, 7, int64(time.Second))
	var s State
	now := int64(1e18)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		now += 10 * ms
		d, _ := bk.Take(s, now, 1)
		if !d.Limited {
			s = d.State
		}
	}
}
