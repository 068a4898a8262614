package tests

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// step is one command at an instant: the clock advances, then args run on
// the table's key and the reply must equal want.
type step struct {
	advance time.Duration
	args    []any
	want    []int64
}

func runSteps(t *testing.T, ts *testServer, proto int, cmd, key string, steps []step) {
	t.Helper()
	c := ts.client(t, proto)
	for i, s := range steps {
		ts.clk.Advance(s.advance)
		args := append([]any{cmd, key}, s.args...)
		got := ints(t, c.Do(ctx, args...))
		if !slices.Equal(got, s.want) {
			t.Errorf("step %d %v: %v, want %v", i, args, got, s.want)
		}
	}
}

func TestLimiterCommands(t *testing.T) {
	t.Parallel()
	const ms = time.Millisecond
	cases := []struct {
		cmd   string
		steps []step
	}{
		{"TB.TAKE", []step{ // 10 tokens, 1 per second
			{0, []any{10, 1, "1s"}, []int64{0, 10, 9, -1, 1000}}, // docs/algorithms.md's example
			{0, []any{10, 1, "1s", 9}, []int64{0, 10, 0, -1, 10000}},
			{0, []any{10, 1, "1s"}, []int64{1, 10, 0, 1000, 10000}},
			{500 * ms, []any{10, 1, "1s"}, []int64{1, 10, 0, 500, 9500}},
			{0, []any{10, 1, "1s", 0}, []int64{0, 10, 0, -1, 9500}}, // peek
			{500 * ms, []any{10, 1, "1s"}, []int64{0, 10, 0, -1, 10000}},
			{0, []any{10, 1, "1s", 11}, []int64{1, 10, 0, -1, 10000}}, // never fits
			{2500 * ms, []any{10, 1, 1, 2}, []int64{0, 10, 0, -1, 9500}},
			{9500 * ms, []any{10, 1, "1s", 0}, []int64{0, 10, 10, -1, 0}}, // full again
		}},
		{"TB.TAKE", []step{ // 3 per 10 ms refill: a third of a token per 1.111 ms
			{0, []any{3, 3, "10ms", 3}, []int64{0, 3, 0, -1, 10}},
			{3 * ms, []any{3, 3, "10ms"}, []int64{1, 3, 0, 1, 7}}, // 0.9 tokens: 1/3 ms short
			{ms, []any{3, 3, "10ms"}, []int64{0, 3, 0, -1, 10}},   // 1.2 - 1 tokens: 9.33 ms short of full
		}},
		{"LB.QUEUE", []step{ // docs/algorithms.md's example: capacity 3, 10 per second
			{0, []any{3, 10, "1s"}, []int64{0, 3, 2, -1, 100, 0}},
			{0, []any{3, 10, "1s"}, []int64{0, 3, 1, -1, 200, 100}},
			{0, []any{3, 10, "1s"}, []int64{0, 3, 0, -1, 300, 200}},
			{0, []any{3, 10, "1s"}, []int64{1, 3, 0, 100, 300, -1}},
			{0, []any{3, 10, "1s", 0}, []int64{0, 3, 0, -1, 300, 300}}, // peek: the wait now
			{100 * ms, []any{3, 10, "1s"}, []int64{0, 3, 0, -1, 300, 200}},
			{50 * ms, []any{3, 10, "1s", 2}, []int64{1, 3, 0, 150, 250, -1}},
			{0, []any{3, 10, "1s", 4}, []int64{1, 3, 0, -1, 250, -1}}, // never fits
		}},
		{"FW.INCR", []step{ // t0 is a whole second
			{0, []any{3, "1s"}, []int64{0, 3, 2, -1, 1000}},
			{0, []any{3, "1s", 2}, []int64{0, 3, 0, -1, 1000}},
			{0, []any{3, "1s"}, []int64{1, 3, 0, 1000, 1000}},
			{999 * ms, []any{3, "1s"}, []int64{1, 3, 0, 1, 1}},
			{ms, []any{3, "1s"}, []int64{0, 3, 2, -1, 1000}}, // the next window
			{0, []any{3, "1s", 4}, []int64{1, 3, 2, -1, 1000}},
			{250 * ms, []any{3, "1s", 0}, []int64{0, 3, 2, -1, 750}},
		}},
		{"SW.INCR", []step{ // 10 per second, Cloudflare's weighting
			{0, []any{10, "1s", 10}, []int64{0, 10, 0, -1, 2000}},
			{time.Second, []any{10, "1s"}, []int64{1, 10, 0, 100, 1000}}, // previous x 1.0
			{100 * ms, []any{10, "1s"}, []int64{0, 10, 0, -1, 1900}},     // 1 + 10 x 0.9
			{0, []any{10, "1s"}, []int64{1, 10, 0, 100, 1900}},
			{400 * ms, []any{10, "1s", 0}, []int64{0, 10, 4, -1, 1500}}, // 1 + 10 x 0.5 = 6
			{0, []any{10, "1s", 11}, []int64{1, 10, 4, -1, 1500}},       // never fits
		}},
		{"SW.INCR", []step{ // PRECISION 10: sub-windows of 100 ms
			{0, []any{10, "1s", 10, "PRECISION", 10}, []int64{0, 10, 0, -1, 1100}},
			{time.Second, []any{10, "1s", "PRECISION", 10}, []int64{1, 10, 0, 10, 100}},
			{10 * ms, []any{10, "1s", "PRECISION", 10, 1}, []int64{0, 10, 0, -1, 1090}},
			{90 * ms, []any{10, "1s", "precision", 10, 0}, []int64{0, 10, 9, -1, 1000}},
		}},
		{"SL.INCR", []step{ // 3 per second, exact
			{0, []any{3, "1s"}, []int64{0, 3, 2, -1, 1000}},
			{300 * ms, []any{3, "1s"}, []int64{0, 3, 1, -1, 1000}},
			{300 * ms, []any{3, "1s"}, []int64{0, 3, 0, -1, 1000}},
			{0, []any{3, "1s"}, []int64{1, 3, 0, 400, 1000}},
			{0, []any{3, "1s", 2}, []int64{1, 3, 0, 700, 1000}},
			{400 * ms, []any{3, "1s"}, []int64{0, 3, 0, -1, 1000}},
			{0, []any{3, "1s", 4}, []int64{1, 3, 0, -1, 1000}},
			{300 * ms, []any{3, "1s", 0}, []int64{0, 3, 1, -1, 700}},
		}},
	}
	for i, tc := range cases {
		for _, proto := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s-%d-resp%d", tc.cmd, i, proto), func(t *testing.T) {
				ts := startServer(t)
				runSteps(t, ts, proto, tc.cmd, "k", tc.steps)
			})
		}
	}
}

func TestLimiterTypesAndExpiry(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args   []any
		typ    string
		expire time.Duration // until the state equals a new key's
	}{
		{[]any{"TB.TAKE", "k", 10, 1, "1s", 3}, "tbucket", 3 * time.Second},
		{[]any{"LB.QUEUE", "k", 3, 10, "1s", 2}, "lbqueue", 200 * time.Millisecond},
		{[]any{"FW.INCR", "k", 10, "1m"}, "fwindow", time.Minute},
		{[]any{"SW.INCR", "k", 10, "1m"}, "swindow", 2 * time.Minute},
		{[]any{"SW.INCR", "k", 10, "1m", "PRECISION", 4}, "swindow", 75 * time.Second},
		{[]any{"SL.INCR", "k", 10, "1m"}, "slog", time.Minute},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.args[0], tc.args[len(tc.args)-1]), func(t *testing.T) {
			ts := startServer(t)
			c := ts.client(t, 2)
			ints(t, c.Do(ctx, tc.args...))
			if typ := c.Type(ctx, "k").Val(); typ != tc.typ {
				t.Errorf("TYPE = %q, want %q", typ, tc.typ)
			}
			if pttl := c.PTTL(ctx, "k").Val(); pttl != tc.expire {
				t.Errorf("PTTL = %v, want %v", pttl, tc.expire)
			}
			ts.clk.Advance(tc.expire - 1)
			if c.Exists(ctx, "k").Val() != 1 {
				t.Error("gone before its state was fresh")
			}
			ts.clk.Advance(1)
			if c.Exists(ctx, "k").Val() != 0 {
				t.Error("still there once fresh")
			}
		})
	}
}

func TestLimiterPeekCreatesNoKey(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c := ts.client(t, 2)
	for _, args := range [][]any{
		{"TB.TAKE", "a", 10, 1, "1s", 0},
		{"LB.QUEUE", "b", 10, 1, "1s", 0},
		{"FW.INCR", "c", 10, "1s", 0},
		{"SW.INCR", "d", 10, "1s", 0},
		{"SW.INCR", "d", 10, "1s", 0, "PRECISION", 5},
		{"SL.INCR", "e", 10, "1s", 0},
	} {
		got := ints(t, c.Do(ctx, args...))
		wantRemaining := int64(10)
		if got[0] != 0 || got[2] != wantRemaining || got[3] != -1 || got[4] != 0 {
			t.Errorf("%v on a new key: %v", args, got)
		}
	}
	if n := c.DBSize(ctx).Val(); n != 0 {
		t.Errorf("peeks created %d keys", n)
	}
}

func TestLimiterErrors(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c := ts.client(t, 2)
	c.Do(ctx, "FW.INCR", "fw", 10, "1s")
	cases := []errCase{
		{[]any{"TB.TAKE", "k", 10, 1}, "ERR wrong number of arguments for 'tb.take' command"},
		{[]any{"TB.TAKE", "k", 10, 1, "1s", 1, 1}, "ERR wrong number of arguments for 'tb.take' command"},
		{[]any{"TB.TAKE", "k", 0, 1, "1s"}, "ERR capacity must be at least 1, got 0"},
		{[]any{"TB.TAKE", "k", -5, 1, "1s"}, "ERR capacity must be at least 1, got -5"},
		{[]any{"TB.TAKE", "k", "ten", 1, "1s"}, "ERR capacity must be an integer, got 'ten'"},
		{[]any{"TB.TAKE", "k", 10, 0, "1s"}, "ERR refill must be at least 1, got 0"},
		{[]any{"TB.TAKE", "k", 10, "1.5", "1s"}, "ERR refill must be an integer, got '1.5'"},
		{[]any{"TB.TAKE", "k", 10, 1, "1fortnight"}, "ERR invalid period '1fortnight': unknown unit"},
		{[]any{"TB.TAKE", "k", 10, 1, 0}, "ERR invalid period '0': must be positive"},
		{[]any{"TB.TAKE", "k", 10, 1, "-1s"}, "ERR invalid period '-1s': must be positive"},
		{[]any{"TB.TAKE", "k", 10, 1, "1s", -1}, "ERR tokens must be at least 0, got -1"},
		{[]any{"TB.TAKE", "k", 10, 1, "1s", "x"}, "ERR tokens must be an integer, got 'x'"},
		{[]any{"TB.TAKE", "k", "9223372036854775807", 1, "1d"}, "ERR token bucket too large"},
		{[]any{"TB.TAKE", "k", "9223372036854775808", 1, "1d"}, "ERR capacity must be an integer"},
		{[]any{"TB.TAKE", "fw", 10, 1, "1s"}, "WRONGTYPE"},
		{[]any{"LB.QUEUE", "k", 3, 10}, "ERR wrong number of arguments for 'lb.queue' command"},
		{[]any{"LB.QUEUE", "k", 3, 0, "1s"}, "ERR rate must be at least 1, got 0"},
		{[]any{"LB.QUEUE", "k", 0, 10, "1s"}, "ERR capacity must be at least 1, got 0"},
		{[]any{"LB.QUEUE", "k", 3, 10, "1s", -1}, "ERR cost must be at least 0, got -1"},
		{[]any{"LB.QUEUE", "k", 3, 10, "1y"}, "ERR invalid period '1y': unknown unit"},
		{[]any{"FW.INCR", "k", 10}, "ERR wrong number of arguments for 'fw.incr' command"},
		{[]any{"FW.INCR", "k", 10, "1s", 1, 1}, "ERR syntax error"},
		{[]any{"FW.INCR", "k", 10, "month", 1, "TZ", "UTC", 1}, "ERR wrong number of arguments for 'fw.incr' command"},
		{[]any{"FW.INCR", "k", 0, "1s"}, "ERR limit must be at least 1, got 0"},
		{[]any{"FW.INCR", "k", -1, "1s"}, "ERR limit must be at least 1, got -1"},
		{[]any{"FW.INCR", "k", 10, "0ms"}, "ERR invalid window '0ms': must be positive"},
		{[]any{"FW.INCR", "k", 10, "soon"}, "ERR invalid window 'soon': unknown unit"},
		{[]any{"FW.INCR", "k", 10, "100000d"}, "ERR window limit too large"},
		{[]any{"FW.INCR", "k", 10, "1s", "1.0"}, "ERR cost must be an integer, got '1.0'"},
		{[]any{"SW.INCR", "k", 10}, "ERR wrong number of arguments for 'sw.incr' command"},
		{[]any{"SW.INCR", "k", 0, "1s"}, "ERR limit must be at least 1, got 0"},
		{[]any{"SW.INCR", "k", 10, "1s", "PRECISION"}, "ERR syntax error"},
		{[]any{"SW.INCR", "k", 10, "1s", "PRECISION", 0}, "ERR precision must be at least 1, got 0"},
		{[]any{"SW.INCR", "k", 10, "1s", "PRECISION", 1001}, "ERR invalid window limit: precision must be between 1 and 1000"},
		{[]any{"SW.INCR", "k", 10, "1s", "PRECISION", 7}, "ERR invalid window limit: window of 1000000000ns does not split into 7 equal sub-windows"},
		{[]any{"SW.INCR", "k", 10, "1s", 1, 2}, "ERR syntax error"},
		{[]any{"SW.INCR", "k", 10, "1s", -3}, "ERR cost must be at least 0, got -3"},
		{[]any{"SL.INCR", "k", 10}, "ERR wrong number of arguments for 'sl.incr' command"},
		{[]any{"SL.INCR", "k", 10, "1s", 1, 1}, "ERR wrong number of arguments for 'sl.incr' command"},
		{[]any{"SL.INCR", "k", 0, "1s"}, "ERR limit must be at least 1, got 0"},
		{[]any{"SL.INCR", "k", 2000000, "1s"}, "ERR invalid window limit: a sliding log keeps one stamp per request"},
		{[]any{"SL.INCR", "k", 10, "1h30m"}, "ERR invalid window '1h30m'"},
		{[]any{"SL.INCR", "fw", 10, "1s"}, "WRONGTYPE"},
	}
	expectErrors(t, c, cases, 1)
}

// TestLimiterHugeCosts sends the largest costs and limits the protocol
// carries: answers, never overflows.
func TestLimiterHugeCosts(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c := ts.client(t, 2)
	const max = "9223372036854775807"
	cases := []struct {
		args []any
		want []int64
	}{
		{[]any{"TB.TAKE", "a", 10, 1, "1s", max}, []int64{1, 10, 10, -1, 0}},
		{[]any{"LB.QUEUE", "b", 10, 1, "1s", max}, []int64{1, 10, 10, -1, 0, -1}},
		{[]any{"FW.INCR", "c", 10, "1s", max}, []int64{1, 10, 10, -1, 0}},
		{[]any{"SW.INCR", "d", 10, "1s", max}, []int64{1, 10, 10, -1, 0}},
		{[]any{"SL.INCR", "e", 10, "1s", max}, []int64{1, 10, 10, -1, 0}},
		{[]any{"FW.INCR", "f", max, "1s", max}, []int64{0, 1<<63 - 1, 0, -1, 1000}},
		{[]any{"FW.INCR", "f", max, "1s", 1}, []int64{1, 1<<63 - 1, 0, 1000, 1000}},
		{[]any{"SW.INCR", "g", max, "1s", max}, []int64{0, 1<<63 - 1, 0, -1, 2000}},
		{[]any{"SW.INCR", "g", max, "1s", 1}, []int64{1, 1<<63 - 1, 0, 1001, 2000}}, // 1 ns into the next window
		{[]any{"TB.TAKE", "h", max, max, "1ms", max}, []int64{0, 1<<63 - 1, 0, -1, 1}},
	}
	for _, tc := range cases {
		got := ints(t, c.Do(ctx, tc.args...))
		if !slices.Equal(got, tc.want) {
			t.Errorf("%v: %v, want %v", tc.args, got, tc.want)
		}
	}
}
