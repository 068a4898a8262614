package gcra

import (
	"testing"
	"time"
)

// TestRedisCellVectors replays redis-cell's own test table (src/cell/mod.rs,
// it_rate_limits): 1 request per second with max_burst 4, so limit 5.
func TestRedisCellVectors(t *testing.T) {
	t.Parallel()
	l, err := CellLimit(4, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	const ms = int64(time.Millisecond)
	start := int64(1_700_000_000) * 1e9
	steps := []struct {
		at         int64 // ms after start
		quantity   int64
		limited    bool
		remaining  int64
		resetAfter int64 // ns
		retryAfter int64 // ns, -1 for none
	}{
		{0, 6, true, 5, 0, -1}, // larger than the whole burst: never fits
		{0, 1, false, 4, 1000 * ms, -1},
		{0, 1, false, 3, 2000 * ms, -1},
		{0, 1, false, 2, 3000 * ms, -1},
		{0, 1, false, 1, 4000 * ms, -1},
		{0, 1, false, 0, 5000 * ms, -1},
		{0, 1, true, 0, 5000 * ms, 1000 * ms},
		{3000, 1, false, 2, 3000 * ms, -1},
		{3100, 1, false, 1, 3900 * ms, -1},
		{4000, 1, false, 1, 4000 * ms, -1},
		{8000, 1, false, 4, 1000 * ms, -1},
		{9500, 1, false, 4, 1000 * ms, -1},
		{9500, 0, false, 4, 1000 * ms, -1}, // peek
		{9500, 2, false, 2, 3000 * ms, -1},
		{9500, 5, true, 2, 3000 * ms, 3000 * ms},
	}
	var tat int64
	for i, s := range steps {
		now := start + s.at*ms
		d, err := Decide(tat, now, l, s.quantity)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if d.Limited != s.limited {
			t.Errorf("step %d: limited = %v, want %v", i, d.Limited, s.limited)
		}
		if got := cellRemaining(d.Next, l.Interval); got != s.remaining {
			t.Errorf("step %d: remaining = %d, want %d", i, got, s.remaining)
		}
		if d.TTL != s.resetAfter {
			t.Errorf("step %d: reset_after = %d, want %d", i, d.TTL, s.resetAfter)
		}
		if d.RetryAfter != s.retryAfter {
			t.Errorf("step %d: retry_after = %d, want %d", i, d.RetryAfter, s.retryAfter)
		}
		if !d.Limited && s.quantity > 0 {
			tat = d.TAT
		}
	}
}

func TestThrottleRoundsToSeconds(t *testing.T) {
	t.Parallel()
	l, _ := CellLimit(4, 1, 1)
	now := int64(1e18)
	cases := []struct {
		name string
		tat  int64
		q    int64
		want Reply
	}{
		{"fresh", 0, 1, Reply{Limited: false, Limit: 5, Remaining: 4, RetryAfter: -1, ResetAfter: 1}},
		{"fraction of a ms is dropped", now + 4*1e9 + 999_999, 1, Reply{Limited: true, Limit: 5, Remaining: 0, RetryAfter: 0, ResetAfter: 4}},
		{"one ms rounds up", now + 3*1e9 + 1e6, 1, Reply{Limited: false, Limit: 5, Remaining: 0, RetryAfter: -1, ResetAfter: 5}},
		{"too large never fits", 0, 6, Reply{Limited: true, Limit: 5, Remaining: 5, RetryAfter: -1, ResetAfter: 0}},
		{"peek of fresh key", 0, 0, Reply{Limited: false, Limit: 5, Remaining: 5, RetryAfter: -1, ResetAfter: 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, _, _, err := Throttle(c.tat, now, l, c.q)
			if err != nil {
				t.Fatal(err)
			}
			if r != c.want {
				t.Errorf("reply = %+v, want %+v", r, c.want)
			}
		})
	}
}

func TestThrottleWritesOnlyAdmittedNonPeek(t *testing.T) {
	t.Parallel()
	l, _ := CellLimit(0, 1, 10)
	now := int64(5e18)
	_, tat, write, _ := Throttle(0, now, l, 1)
	if !write || tat != now+10e9 {
		t.Fatalf("admitted: write=%v tat=%d", write, tat)
	}
	if _, _, write, _ := Throttle(tat, now, l, 1); write {
		t.Error("denied request asked to write")
	}
	if _, _, write, _ := Throttle(0, now, l, 0); write {
		t.Error("peek asked to write")
	}
}

func TestTimeGoingBackwardsAdmitsNothingExtra(t *testing.T) {
	t.Parallel()
	l, _ := CellLimit(2, 1, 1)
	now := int64(1e18)
	var tat int64
	admitted := 0
	for i := 0; i < 10; i++ {
		at := now - int64(i)*int64(time.Second) // the clock runs backwards
		d, _ := Decide(tat, at, l, 1)
		if !d.Limited {
			admitted++
			tat = d.TAT
		}
	}
	if admitted > 3 {
		t.Errorf("admitted %d with a backwards clock, want at most 3", admitted)
	}
}

func TestParameterErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name                    string
		burst, count, periodSec int64
		want                    error
	}{
		{"zero count", 1, 0, 1, ErrZeroRate},
		{"zero period", 1, 1, 0, ErrZeroRate},
		{"negative burst", -1, 1, 1, ErrOverflow},
		{"period overflows nanoseconds", 1, 1, 1 << 40, ErrOverflow},
		{"tolerance overflows", 1 << 40, 1, 1 << 20, ErrOverflow},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := CellLimit(c.burst, c.count, c.periodSec); err != c.want {
				t.Errorf("err = %v, want %v", err, c.want)
			}
		})
	}
	l, _ := CellLimit(1, 1, 1)
	if _, err := Decide(0, 1, l, 1<<62); err != ErrOverflow {
		t.Errorf("huge quantity: err = %v, want overflow", err)
	}
}

func TestRedisGCRA(t *testing.T) {
	t.Parallel()
	// 10 tokens per 1.5 s with max_burst 2: interval 150 ms, limit 3.
	l, err := RedisLimit(2, 10, 1.5)
	if err != nil {
		t.Fatal(err)
	}
	if l.Interval != 150_000 {
		t.Fatalf("interval = %d us, want 150000", l.Interval)
	}
	now := int64(1_700_000_000_000_000)
	steps := []struct {
		at   int64 // us after now
		want Reply
	}{
		{0, Reply{Limited: false, Limit: 3, Remaining: 2, RetryAfter: -1, ResetAfter: 1}},
		{0, Reply{Limited: false, Limit: 3, Remaining: 1, RetryAfter: -1, ResetAfter: 1}},
		{0, Reply{Limited: false, Limit: 3, Remaining: 0, RetryAfter: -1, ResetAfter: 1}},
		{0, Reply{Limited: true, Limit: 3, Remaining: 0, RetryAfter: 1, ResetAfter: 1}},
		{150_000, Reply{Limited: false, Limit: 3, Remaining: 0, RetryAfter: -1, ResetAfter: 1}},
	}
	var tat int64
	for i, s := range steps {
		r, nt, write, err := RedisGCRA(tat, now+s.at, l, 1)
		if err != nil {
			t.Fatal(err)
		}
		if r != s.want {
			t.Errorf("step %d: %+v, want %+v", i, r, s.want)
		}
		if write {
			tat = nt
		}
	}
}
