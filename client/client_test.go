package client_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/client"
	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/node"
	"github.com/redis/go-redis/v9"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()

// serve starts a limitdb server on a free loopback port with a fake clock.
func serve(t *testing.T) (addr string, clk *clock.Fake) {
	t.Helper()
	clk = clock.NewFake(t0)
	cfg := config.Default()
	cfg.Save = 0 // the test steps the clock, which would run automatic snapshots
	cfg.Port = 0
	cfg.Dir = t.TempDir()
	srv := node.New(cfg, engine.New(clk, 0), nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), clk
}

func connect(t *testing.T, addr string, protocol int) *client.Client {
	t.Helper()
	o := client.Options(addr)
	o.Protocol = protocol
	rdb := redis.NewClient(o)
	t.Cleanup(func() { rdb.Close() })
	return client.New(rdb)
}

type step struct {
	advance time.Duration
	cost    int64
	want    client.Result
}

// walk applies l to key at each step and compares the whole Result.
func walk(t *testing.T, c *client.Client, clk *clock.Fake, key string, l client.Limit, steps []step) {
	t.Helper()
	for i, s := range steps {
		clk.Advance(s.advance)
		got, err := c.Take(context.Background(), key, l, s.cost)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got != s.want {
			t.Errorf("step %d: %+v, want %+v", i, got, s.want)
		}
	}
}

const (
	s  = time.Second
	ms = time.Millisecond
)

func TestTypedCalls(t *testing.T) {
	t.Parallel()
	addr, clk := serve(t)
	for _, proto := range []int{2, 3} {
		c := connect(t, addr, proto)
		t.Run(fmt.Sprint("CL.THROTTLE/resp", proto), func(t *testing.T) {
			// redis-cell's README limit: burst 15, 30 per minute.
			walk(t, c, clk, fmt.Sprint("throttle", proto), client.Throttle{MaxBurst: 15, Count: 30, Period: time.Minute}, []step{
				{0, 1, client.Result{Limit: 16, Remaining: 15, ResetAfter: 2 * s}},
				{0, 0, client.Result{Limit: 16, Remaining: 15, ResetAfter: 2 * s}},
				{0, 15, client.Result{Limit: 16, Remaining: 0, ResetAfter: 32 * s}},
				{0, 1, client.Result{Limited: true, Limit: 16, RetryAfter: 2 * s, ResetAfter: 32 * s}},
				{0, 17, client.Result{Limited: true, Limit: 16, RetryAfter: client.Never, ResetAfter: 32 * s}},
				{2 * s, 1, client.Result{Limit: 16, Remaining: 0, ResetAfter: 32 * s}},
			})
		})
		t.Run(fmt.Sprint("GCRA/resp", proto), func(t *testing.T) {
			// GCRA as Redis proposed it: burst 2, 1 token per 0.5 s.
			walk(t, c, clk, fmt.Sprint("gcra", proto), client.GCRA{MaxBurst: 2, TokensPerPeriod: 1, Period: 500 * time.Millisecond}, []step{
				{0, 1, client.Result{Limit: 3, Remaining: 2, ResetAfter: 1 * s}},
				{0, 2, client.Result{Limit: 3, Remaining: 0, ResetAfter: 2 * s}},
				{0, 1, client.Result{Limited: true, Limit: 3, RetryAfter: 1 * s, ResetAfter: 2 * s}},
				{500 * time.Millisecond, 1, client.Result{Limit: 3, Remaining: 0, ResetAfter: 2 * s}},
			})
		})
		t.Run(fmt.Sprint("TB.TAKE/resp", proto), func(t *testing.T) {
			walk(t, c, clk, fmt.Sprint("tb", proto), client.TokenBucket{Capacity: 10, Refill: 1, Period: s}, []step{
				{0, 1, client.Result{Limit: 10, Remaining: 9, ResetAfter: s}},
				{0, 9, client.Result{Limit: 10, Remaining: 0, ResetAfter: 10 * s}},
				{0, 1, client.Result{Limited: true, Limit: 10, RetryAfter: s, ResetAfter: 10 * s}},
				{500 * ms, 1, client.Result{Limited: true, Limit: 10, RetryAfter: 500 * ms, ResetAfter: 9500 * ms}},
				{0, 0, client.Result{Limit: 10, Remaining: 0, ResetAfter: 9500 * ms}},
				{0, 11, client.Result{Limited: true, Limit: 10, RetryAfter: client.Never, ResetAfter: 9500 * ms}},
			})
		})
		t.Run(fmt.Sprint("LB.QUEUE/resp", proto), func(t *testing.T) {
			walk(t, c, clk, fmt.Sprint("lb", proto), client.LeakyQueue{Capacity: 3, Rate: 10, Period: s}, []step{
				{0, 1, client.Result{Limit: 3, Remaining: 2, ResetAfter: 100 * ms}},
				{0, 1, client.Result{Limit: 3, Remaining: 1, ResetAfter: 200 * ms, Delay: 100 * ms}},
				{0, 1, client.Result{Limit: 3, Remaining: 0, ResetAfter: 300 * ms, Delay: 200 * ms}},
				{0, 1, client.Result{Limited: true, Limit: 3, RetryAfter: 100 * ms, ResetAfter: 300 * ms}},
			})
		})
		// The fake clock may sit anywhere in a window: start each window
		// test at a whole second.
		clk.Set((clk.Now()/int64(s) + 1) * int64(s))
		t.Run(fmt.Sprint("FW.INCR/resp", proto), func(t *testing.T) {
			walk(t, c, clk, fmt.Sprint("fw", proto), client.FixedWindow{Limit: 3, Window: s}, []step{
				{0, 1, client.Result{Limit: 3, Remaining: 2, ResetAfter: s}},
				{0, 2, client.Result{Limit: 3, Remaining: 0, ResetAfter: s}},
				{0, 1, client.Result{Limited: true, Limit: 3, RetryAfter: s, ResetAfter: s}},
				{999 * ms, 1, client.Result{Limited: true, Limit: 3, RetryAfter: ms, ResetAfter: ms}},
				{ms, 1, client.Result{Limit: 3, Remaining: 2, ResetAfter: s}},
			})
		})
		clk.Set((clk.Now()/int64(s) + 1) * int64(s))
		t.Run(fmt.Sprint("SW.INCR/resp", proto), func(t *testing.T) {
			walk(t, c, clk, fmt.Sprint("sw", proto), client.SlidingWindow{Limit: 10, Window: s}, []step{
				{0, 10, client.Result{Limit: 10, Remaining: 0, ResetAfter: 2 * s}},
				{s, 1, client.Result{Limited: true, Limit: 10, RetryAfter: 100 * ms, ResetAfter: s}},
				{100 * ms, 1, client.Result{Limit: 10, Remaining: 0, ResetAfter: 1900 * ms}},
			})
		})
		clk.Set((clk.Now()/int64(s) + 1) * int64(s))
		t.Run(fmt.Sprint("SW.INCR PRECISION/resp", proto), func(t *testing.T) {
			walk(t, c, clk, fmt.Sprint("swp", proto), client.SlidingWindow{Limit: 10, Window: s, Precision: 10}, []step{
				{0, 10, client.Result{Limit: 10, Remaining: 0, ResetAfter: 1100 * ms}},
				{s, 1, client.Result{Limited: true, Limit: 10, RetryAfter: 10 * ms, ResetAfter: 100 * ms}},
			})
		})
		// Calendar windows end where New York's calendar says: the next
		// midnight and the next 1st, from wherever the clock is.
		ny, _ := time.LoadLocation("America/New_York")
		now := time.Unix(0, clk.Now()).In(ny)
		toMonth := time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, ny).Sub(now).Truncate(ms)
		toDay := time.Date(now.Year(), now.Month(), now.Day()+2, 0, 0, 0, 0, ny).Sub(now).Truncate(ms)
		t.Run(fmt.Sprint("FW.INCR month/resp", proto), func(t *testing.T) {
			walk(t, c, clk, fmt.Sprint("fwc", proto), client.FixedWindow{Limit: 3, Calendar: client.Calendar{Unit: "month", TZ: "America/New_York"}}, []step{
				{0, 3, client.Result{Limit: 3, Remaining: 0, ResetAfter: toMonth}},
				{0, 1, client.Result{Limited: true, Limit: 3, RetryAfter: toMonth, ResetAfter: toMonth}},
			})
		})
		t.Run(fmt.Sprint("SW.INCR day/resp", proto), func(t *testing.T) {
			walk(t, c, clk, fmt.Sprint("swc", proto), client.SlidingWindow{Limit: 2, Calendar: client.Calendar{Unit: "day", TZ: "America/New_York"}}, []step{
				{0, 2, client.Result{Limit: 2, Remaining: 0, ResetAfter: toDay}},
			})
		})
		t.Run(fmt.Sprint("SL.INCR/resp", proto), func(t *testing.T) {
			walk(t, c, clk, fmt.Sprint("sl", proto), client.SlidingLog{Limit: 3, Window: s}, []step{
				{0, 1, client.Result{Limit: 3, Remaining: 2, ResetAfter: s}},
				{300 * ms, 1, client.Result{Limit: 3, Remaining: 1, ResetAfter: s}},
				{300 * ms, 1, client.Result{Limit: 3, Remaining: 0, ResetAfter: s}},
				{0, 1, client.Result{Limited: true, Limit: 3, RetryAfter: 400 * ms, ResetAfter: s}},
				{0, 4, client.Result{Limited: true, Limit: 3, RetryAfter: client.Never, ResetAfter: s}},
			})
		})
	}
}

func TestServerErrorsPassThrough(t *testing.T) {
	t.Parallel()
	addr, _ := serve(t)
	c := connect(t, addr, 3)
	_, err := c.Take(context.Background(), "k", client.Throttle{MaxBurst: 1, Count: 0, Period: s}, 1)
	if err == nil || !strings.Contains(err.Error(), "count must be at least 1") {
		t.Fatalf("err = %v, want the server's count error", err)
	}
	_, err = c.Take(context.Background(), "k", client.GCRA{MaxBurst: 1, TokensPerPeriod: 1, Period: s}, 0)
	if err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Fatalf("GCRA with 0 tokens: err = %v, want out of range", err)
	}
}

func TestThrottleNeedsWholeSeconds(t *testing.T) {
	t.Parallel()
	c := client.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}))
	_, err := c.Take(context.Background(), "k", client.Throttle{MaxBurst: 1, Count: 1, Period: 1500 * time.Millisecond}, 1)
	if err == nil || !strings.Contains(err.Error(), "not whole seconds") {
		t.Fatalf("err = %v", err)
	}
}

func TestApprox(t *testing.T) {
	t.Parallel()
	cases := []struct {
		l    client.Limit
		want client.Rate
	}{
		{client.Throttle{MaxBurst: 15, Count: 30, Period: time.Minute}, client.Rate{Burst: 15, Interval: 2 * s}},
		{client.GCRA{MaxBurst: 0, TokensPerPeriod: 4, Period: s}, client.Rate{Burst: 0, Interval: 250 * time.Millisecond}},
		{client.TokenBucket{Capacity: 10, Refill: 5, Period: s}, client.Rate{Burst: 9, Interval: 200 * time.Millisecond}},
		{client.LeakyQueue{Capacity: 3, Rate: 1, Period: s}, client.Rate{Burst: 2, Interval: s}},
		{client.FixedWindow{Limit: 100, Window: time.Minute}, client.Rate{Burst: 99, Interval: 600 * time.Millisecond}},
		{client.SlidingWindow{Limit: 10, Window: 10 * s}, client.Rate{Burst: 9, Interval: s}},
		{client.SlidingLog{Limit: 1, Window: s}, client.Rate{Burst: 0, Interval: s}},

		{client.FixedWindow{Limit: 30, Calendar: client.Calendar{Unit: "month"}}, client.Rate{Burst: 29, Interval: 24 * time.Hour}},
		{client.SlidingWindow{Limit: 24, Calendar: client.Calendar{Unit: "day", TZ: "Europe/Paris"}}, client.Rate{Burst: 23, Interval: time.Hour}},
	}
	for _, tc := range cases {
		if got := tc.l.Approx(); got != tc.want {
			t.Errorf("%T: %+v, want %+v", tc.l, got, tc.want)
		}
	}
}
