package ratelimit_test

import (
	"fmt"
	"io"
	"log"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/command/ratelimit"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestReserveSteps walks RL.RESERVE and RL.SETTLE through time on each
// algorithm that takes reservations, and the refusals of those that take
// none: each step's reply, exactly. The clock starts at 1_700_000_000 s,
// 20 s into an epoch-aligned minute; a reservation's id is its deadline in
// ms (now + ttl, 5 minutes by default) and its number on the key.
func TestReserveSteps(t *testing.T) {
	t.Parallel()
	type step struct {
		advance time.Duration
		args    []string
		want    string
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"gcra", []step{
			{0, []string{"RL.POLICY", "SET", "p", "gcra", "10", "1m"}, "+OK\r\n"},
			// One unit every 6 s, a burst of 10: 4 reserved, 6 left.
			{0, []string{"RL.RESERVE", "p", "u", "4"}, "*6\r\n:0\r\n:10\r\n:6\r\n:-1\r\n:24000\r\n$15\r\n1700000300000-1\r\n"},
			// Actual 1: 3 given back, the TAT moves back 18 s.
			{0, []string{"RL.SETTLE", "p", "u", "1700000300000-1", "1"}, "*6\r\n:0\r\n:10\r\n:9\r\n:-1\r\n:6000\r\n:1\r\n"},
			// The same settle again changes nothing and says so.
			{0, []string{"RL.SETTLE", "p", "u", "1700000300000-1", "1"}, "*6\r\n:0\r\n:10\r\n:9\r\n:-1\r\n:6000\r\n:0\r\n"},
			{0, []string{"RL.RESERVE", "p", "u", "5", "10s"}, "*6\r\n:0\r\n:10\r\n:4\r\n:-1\r\n:36000\r\n$15\r\n1700000010000-2\r\n"},
			// Actual 20: 15 more charged, 126 s of TAT, 66 s over the 60 s
			// tolerance: over the limit, reported.
			{0, []string{"RL.SETTLE", "p", "u", "1700000010000-2", "20"}, "*6\r\n:1\r\n:10\r\n:0\r\n:66000\r\n:126000\r\n:1\r\n"},
			{0, []string{"RL.HIT", "p", "u"}, "*5\r\n:1\r\n:10\r\n:0\r\n:72000\r\n:126000\r\n"},
			// Denied: no id.
			{0, []string{"RL.RESERVE", "p", "u", "1"}, "*6\r\n:1\r\n:10\r\n:0\r\n:72000\r\n:126000\r\n$-1\r\n"},
			{0, []string{"RL.SETTLE", "p", "u", "1700000010000-3", "20"}, "-ERR reservation '1700000010000-3': was never issued on this key\r\n"},
			{0, []string{"RL.SETTLE", "p", "u", "1600000010000-1", "20"}, "-ERR reservation '1600000010000-1': expired: its ttl passed and it settled at its estimate\r\n"},
			{0, []string{"RL.SETTLE", "p", "u", "x-3", "20"}, "-ERR invalid reservation id 'x-3': RL.RESERVE answers ids of the form <deadline-ms>-<seq>\r\n"},
			{0, []string{"RL.SETTLE", "p", "u", "1700000300000-1", "-1"}, "-ERR actual_cost must be at least 0, got -1\r\n"},
			{0, []string{"RL.RESERVE", "p", "u", "1", "0"}, "-ERR invalid ttl '0': must be positive\r\n"},
			{0, []string{"RL.RESERVE", "nope", "u", "1"}, "-ERR unknown policy 'nope'\r\n"},
		}},
		{"token_bucket", []step{
			{0, []string{"RL.POLICY", "SET", "p", "token_bucket", "10", "10s"}, "+OK\r\n"},
			{0, []string{"RL.RESERVE", "p", "u", "8", "1s"}, "*6\r\n:0\r\n:10\r\n:2\r\n:-1\r\n:8000\r\n$15\r\n1700000001000-1\r\n"},
			// Actual 2: 6 tokens back.
			{0, []string{"RL.SETTLE", "p", "u", "1700000001000-1", "2"}, "*6\r\n:0\r\n:10\r\n:8\r\n:-1\r\n:2000\r\n:1\r\n"},
			{0, []string{"RL.RESERVE", "p", "u", "8", "1s"}, "*6\r\n:0\r\n:10\r\n:0\r\n:-1\r\n:10000\r\n$15\r\n1700000001000-2\r\n"},
			// Actual 13: 5 more, a debt of 5 tokens: over, back within
			// the limit in 5 s.
			{0, []string{"RL.SETTLE", "p", "u", "1700000001000-2", "13"}, "*6\r\n:1\r\n:10\r\n:0\r\n:5000\r\n:15000\r\n:1\r\n"},
			// An unsettled reservation settles at its estimate at its ttl.
			{0, []string{"RL.RESERVE", "p", "u", "0", "1s"}, "*6\r\n:0\r\n:10\r\n:0\r\n:-1\r\n:15000\r\n$15\r\n1700000001000-3\r\n"},
			{time.Second, []string{"RL.SETTLE", "p", "u", "1700000001000-3", "0"}, "-ERR reservation '1700000001000-3': expired: its ttl passed and it settled at its estimate\r\n"},
		}},
		{"fixed_window", []step{
			{0, []string{"RL.POLICY", "SET", "p", "fixed_window", "10", "1m"}, "+OK\r\n"},
			{0, []string{"RL.RESERVE", "p", "u", "4"}, "*6\r\n:0\r\n:10\r\n:6\r\n:-1\r\n:40000\r\n$15\r\n1700000300000-1\r\n"},
			{0, []string{"RL.RESERVE", "p", "u", "8"}, "*6\r\n:1\r\n:10\r\n:6\r\n:40000\r\n:40000\r\n$-1\r\n"},
			{0, []string{"RL.SETTLE", "p", "u", "1700000300000-1", "0"}, "*6\r\n:0\r\n:10\r\n:10\r\n:-1\r\n:0\r\n:1\r\n"},
			{0, []string{"RL.RESERVE", "p", "u", "8"}, "*6\r\n:0\r\n:10\r\n:2\r\n:-1\r\n:40000\r\n$15\r\n1700000300000-2\r\n"},
			// The window it was charged in has passed: the give-back is
			// lost with it; the next window starts empty.
			{40 * time.Second, []string{"RL.SETTLE", "p", "u", "1700000300000-2", "1"}, "*6\r\n:0\r\n:10\r\n:10\r\n:-1\r\n:0\r\n:1\r\n"},
			{0, []string{"RL.RESERVE", "p", "u", "3"}, "*6\r\n:0\r\n:10\r\n:7\r\n:-1\r\n:60000\r\n$15\r\n1700000340000-3\r\n"},
			// A larger cost is charged to the current window, over it.
			{0, []string{"RL.SETTLE", "p", "u", "1700000340000-3", "12"}, "*6\r\n:1\r\n:10\r\n:0\r\n:60000\r\n:60000\r\n:1\r\n"},
		}},
		{"sliding_window", []step{
			{0, []string{"RL.POLICY", "SET", "p", "sliding_window", "10", "1m"}, "+OK\r\n"},
			{0, []string{"RL.RESERVE", "p", "u", "6"}, "*6\r\n:0\r\n:10\r\n:4\r\n:-1\r\n:100000\r\n$15\r\n1700000300000-1\r\n"},
			// 20 s into the next window: the previous one still counts
			// 40/60 of its 6.
			{60 * time.Second, []string{"RL.HIT", "p", "u", "0"}, "*5\r\n:0\r\n:10\r\n:6\r\n:-1\r\n:40000\r\n"},
			// Given back 6 in the previous window: nothing counted now.
			{0, []string{"RL.SETTLE", "p", "u", "1700000300000-1", "0"}, "*6\r\n:0\r\n:10\r\n:10\r\n:-1\r\n:0\r\n:1\r\n"},
		}},
		{"refused", []step{
			{0, []string{"RL.POLICY", "SET", "q", "leaky_queue", "10", "1m"}, "+OK\r\n"},
			{0, []string{"RL.RESERVE", "q", "u", "4"}, "-ERR policy 'q' is leaky_queue, which takes no reservations: giving cost back would serve later requests ahead of those already queued behind it; use token_bucket\r\n"},
			{0, []string{"RL.POLICY", "SET", "l", "sliding_log", "10", "1m"}, "+OK\r\n"},
			{0, []string{"RL.SETTLE", "l", "u", "1700000300000-1", "0"}, "-ERR policy 'l' is sliding_log, which takes no reservations: it keeps one stamp per unit, at most limit of them, and giving cost back would remove stamps from the middle of its ring; use sliding_window\r\n"},
			{0, []string{"RL.POLICY", "SET", "m", "fixed_window", "10", "month", "TZ", "Europe/Paris"}, "+OK\r\n"},
			{0, []string{"RL.RESERVE", "m", "u", "4"}, "-ERR policy 'm' counts in calendar windows, and a calendar period takes no reservations: use a period of fixed length\r\n"},
		}},
		{"shadow", []step{
			{0, []string{"RL.POLICY", "SET", "p", "fixed_window", "2", "1m", "SHADOW"}, "+OK\r\n"},
			{0, []string{"RL.RESERVE", "p", "u", "2"}, "*6\r\n:0\r\n:2\r\n:0\r\n:-1\r\n:40000\r\n$15\r\n1700000300000-1\r\n"},
			// Would be denied: admitted, charging nothing.
			{0, []string{"RL.RESERVE", "p", "u", "2"}, "*6\r\n:0\r\n:2\r\n:0\r\n:-1\r\n:40000\r\n$15\r\n1700000300000-2\r\n"},
			// Its settle charges what it cost; the reply is never limited.
			{0, []string{"RL.SETTLE", "p", "u", "1700000300000-2", "1"}, "*6\r\n:0\r\n:2\r\n:0\r\n:-1\r\n:40000\r\n:1\r\n"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, clk, f := newLocal(t)
			_ = f
			for i, st := range tc.steps {
				clk.Advance(st.advance)
				got := string(c.DoString(st.args...))
				if st.want == "" {
					continue
				}
				if got != st.want {
					t.Errorf("step %d: %q = %q, want %q", i, st.args, got, st.want)
				}
			}
		})
	}
}

// TestReserveSettleConcurrent: goroutines reserve and settle on one key
// at once; the key ends charged exactly the sum of the actual costs, and
// every reservation settles exactly once however often it is settled.
func TestReserveSettleConcurrent(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(1_700_000_000e9)
	s := command.New(config.Default(), engine.New(clk, 0), log.New(io.Discard, "", 0), ratelimit.New())
	if err := s.Prepare(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	srv := s.NewLocalClient()
	if got := string(srv.DoString("RL.POLICY", "SET", "p", "fixed_window", "1000000", "1h")); got != "+OK\r\n" {
		t.Fatal(got)
	}
	const workers, each = 8, 200
	var wg sync.WaitGroup
	settled := make([]int, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			srv := s.NewLocalClient()
			for i := range each {
				r := string(srv.DoString("RL.RESERVE", "p", "u", "10"))
				id := r[strings.LastIndex(r[:len(r)-2], "\n")+1 : len(r)-2]
				actual := fmt.Sprint(i % 7)
				for range 2 { // every settle sent twice: a client's retry
					s := string(srv.DoString("RL.SETTLE", "p", "u", id, actual))
					if strings.HasSuffix(s, ":1\r\n") {
						settled[w]++
					}
				}
			}
		}()
	}
	wg.Wait()
	want := 0
	for i := range each {
		want += i % 7
	}
	want *= workers
	for w, n := range settled {
		if n != each {
			t.Errorf("worker %d: %d settles applied, want %d", w, n, each)
		}
	}
	got := string(srv.DoString("RL.HIT", "p", "u", "0"))
	if wantReply := fmt.Sprintf(":%d\r\n", 1000000-want); !strings.Contains(got, wantReply) {
		t.Errorf("after every settle: %q, want remaining %d", got, 1000000-want)
	}
}
