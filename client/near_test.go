package client_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/limitdb/limitdb/client"
	"github.com/redis/go-redis/v9"
)

// hit is one request of a recorded trace: the time since the previous one,
// which key, what cost.
type hit struct {
	advance time.Duration
	key     int
	cost    int64
}

// trace records n requests over keys keys: bursts (no time between
// requests) that push the keys past their limits, and pauses of every
// length around the limits' intervals, so that cached denials both hold
// and expire, and costs of 1 to maxCost, so that a larger cost follows a
// smaller one's denial and the other way round.
func trace(seed uint64, n, keys int, maxCost int64) []hit {
	rng := rand.New(rand.NewPCG(seed, 1))
	pauses := []time.Duration{0, 0, 0, 0, time.Millisecond, 7 * time.Millisecond, 150 * time.Millisecond,
		400 * time.Millisecond, 999 * time.Millisecond, time.Second, 1700 * time.Millisecond, 3 * time.Second}
	out := make([]hit, n)
	for i := range out {
		out[i] = hit{pauses[rng.IntN(len(pauses))], rng.IntN(keys), 1 + rng.Int64N(maxCost)}
	}
	return out
}

// TestNearCacheReplaysTheSameDecisions replays a recorded trace against the
// server twice at the same instants of its fake clock, once through a plain
// client and once through one with the near cache, on keys of their own:
// every decision is the same, a good share of the denials is answered
// without a round trip, and a locally answered Result is within one wire
// unit of the server's (Remaining never above it).
func TestNearCacheReplaysTheSameDecisions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	addr, clk := serve(t)
	admin := connect(t, addr, 3)
	for _, p := range []struct {
		name string
		spec client.PolicySpec
	}{
		{"near-gcra", client.PolicySpec{Algorithm: "gcra", Limit: 2, Period: 3 * time.Second, Burst: 3}},
		{"near-bucket", client.PolicySpec{Algorithm: "token_bucket", Limit: 4, Period: 5 * time.Second}},
		{"near-log", client.PolicySpec{Algorithm: "sliding_log", Limit: 3, Period: 2 * time.Second}},
	} {
		if err := admin.SetPolicy(ctx, p.name, p.spec); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name    string
		limit   client.Limit
		unit    time.Duration
		cached  bool // some denials are answered locally
		maxCost int64
	}{
		{"CL.THROTTLE", client.Throttle{MaxBurst: 2, Count: 1, Period: 4 * time.Second}, time.Second, true, 3},
		{"GCRA", client.GCRA{MaxBurst: 3, TokensPerPeriod: 1, Period: 3 * time.Second}, time.Second, true, 4},
		{"TB.TAKE", client.TokenBucket{Capacity: 4, Refill: 1, Period: 1500 * time.Millisecond}, time.Millisecond, true, 3},
		{"policy gcra", client.Policy{Name: "near-gcra"}, time.Millisecond, true, 3},
		{"policy token_bucket", client.Policy{Name: "near-bucket"}, time.Millisecond, true, 3},
		{"policy sliding_log", client.Policy{Name: "near-log"}, time.Millisecond, false, 2},
		{"SL.INCR", client.SlidingLog{Limit: 3, Window: 2 * time.Second}, time.Millisecond, false, 2},
	} {
		for _, proto := range []int{2, 3} { // RL.POLICY GET is a map in RESP3, a list in RESP2
			plain := connect(t, addr, proto)
			o := client.Options(addr)
			o.Protocol = proto
			rdb := redis.NewClient(o)
			t.Cleanup(func() { rdb.Close() })
			near := client.New(rdb, client.WithNearCache(clk))

			var denied, local int
			for i, h := range trace(uint64(len(c.name)*10+proto), 600, 3, c.maxCost) {
				clk.Advance(h.advance)
				key := fmt.Sprintf("%s/%d/%d", c.name, proto, h.key)
				want, err := plain.Take(ctx, "plain:"+key, c.limit, h.cost)
				if err != nil {
					t.Fatalf("%s resp%d step %d: %v", c.name, proto, i, err)
				}
				before := near.Stats().NearAnswered
				got, err := near.Take(ctx, "near:"+key, c.limit, h.cost)
				if err != nil {
					t.Fatalf("%s resp%d step %d: %v", c.name, proto, i, err)
				}
				if got.Limited != want.Limited || got.Limit != want.Limit {
					t.Fatalf("%s resp%d step %d (%+v): near cache %+v, server %+v", c.name, proto, i, h, got, want)
				}
				if want.Limited {
					denied++
				}
				if near.Stats().NearAnswered == before {
					if got != want {
						t.Errorf("%s resp%d step %d: asked the server and got %+v, the plain client %+v", c.name, proto, i, got, want)
					}
					continue
				}
				local++
				switch {
				case got.Remaining > want.Remaining:
					t.Errorf("%s resp%d step %d: local Remaining %d above the server's %d", c.name, proto, i, got.Remaining, want.Remaining)
				case got.RetryAfter <= 0 || got.RetryAfter >= want.RetryAfter+c.unit:
					t.Errorf("%s resp%d step %d: local RetryAfter %v, the server's %v", c.name, proto, i, got.RetryAfter, want.RetryAfter)
				case got.ResetAfter <= want.ResetAfter-c.unit || got.ResetAfter >= want.ResetAfter+c.unit:
					t.Errorf("%s resp%d step %d: local ResetAfter %v, the server's %v", c.name, proto, i, got.ResetAfter, want.ResetAfter)
				}
			}
			t.Logf("%s resp%d: %d denials, %d answered locally", c.name, proto, denied, local)
			switch {
			case denied < 100:
				t.Errorf("%s resp%d: the trace made only %d denials", c.name, proto, denied)
			case c.cached && local < denied/5: // smaller costs after a larger one's denial are asked
				t.Errorf("%s resp%d: only %d of %d denials answered locally", c.name, proto, local, denied)
			case !c.cached && local != 0:
				t.Errorf("%s resp%d: %d denials answered locally under a limit whose denials are not certain", c.name, proto, local)
			}
		}
	}
}

// TestNearCacheForgets: the client's own Reset, SetPolicy and
// DeletePolicy forget the denials they void, and a peek or a smaller cost
// is always asked.
func TestNearCacheForgets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	addr, clk := serve(t)
	rdb := redis.NewClient(client.Options(addr))
	t.Cleanup(func() { rdb.Close() })
	c := client.New(rdb, client.WithNearCache(clk))
	take := func(key string, l client.Limit, cost int64) client.Result {
		t.Helper()
		r, err := c.Take(ctx, key, l, cost)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	local := func(f func()) bool {
		before := c.Stats().NearAnswered
		f()
		return c.Stats().NearAnswered > before
	}

	cl := client.Throttle{MaxBurst: 0, Count: 1, Period: 10 * time.Second}
	take("k", cl, 1)
	if r := take("k", cl, 1); !r.Limited {
		t.Fatalf("second hit admitted: %+v", r)
	}
	if !local(func() { take("k", cl, 1) }) {
		t.Error("a repeated denial was asked again")
	}
	if local(func() { take("k", cl, 0) }) {
		t.Error("a peek was answered locally")
	}
	if ok, err := c.Reset(ctx, "k", cl); err != nil || !ok {
		t.Fatalf("Reset: %v, %v", ok, err)
	}
	if r := take("k", cl, 1); r.Limited {
		t.Errorf("after Reset: %+v, want admitted", r)
	}

	bucket := client.TokenBucket{Capacity: 3, Refill: 1, Period: 10 * time.Second}
	take("b", bucket, 3)
	take("b", bucket, 2) // denied: 0 tokens
	if local(func() { take("b", bucket, 1) }) {
		t.Error("a smaller cost than the denied one was answered locally")
	}
	if !local(func() { take("b", bucket, 3) }) {
		t.Error("a larger cost than the denied one was asked")
	}

	pol := client.Policy{Name: "forget"}
	if err := c.SetPolicy(ctx, "forget", client.PolicySpec{Algorithm: "gcra", Limit: 1, Period: time.Minute}); err != nil {
		t.Fatal(err)
	}
	take("p", pol, 1)
	take("p", pol, 1)
	if !local(func() { take("p", pol, 1) }) {
		t.Error("a gcra policy's denial was asked again")
	}
	if err := c.SetPolicy(ctx, "forget", client.PolicySpec{Algorithm: "gcra", Limit: 100, Period: time.Second, Burst: 100}); err != nil {
		t.Fatal(err)
	}
	if r := take("p", pol, 1); r.Limited {
		t.Errorf("after SetPolicy raised the limit: %+v, want admitted", r)
	}
	if err := c.SetPolicy(ctx, "forget", client.PolicySpec{Algorithm: "gcra", Limit: 1, Period: time.Minute}); err != nil {
		t.Fatal(err)
	}
	take("q", pol, 1)
	take("q", pol, 1)
	if _, err := c.DeletePolicy(ctx, "forget"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Take(ctx, "q", pol, 1); err == nil {
		t.Error("a deleted policy's denial was answered locally")
	}

	clk.Advance(time.Minute)
	take("z", cl, 1)
	take("z", cl, 1)
	c.ForgetNear()
	if local(func() { take("z", cl, 1) }) {
		t.Error("ForgetNear kept a denial")
	}
}

// TestBatchingCoalescesConcurrentCalls: concurrent Take calls share
// pipelines and each gets its own reply: every key is charged exactly its
// calls, and fewer round trips are made than calls.
func TestBatchingCoalescesConcurrentCalls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	addr, _ := serve(t)
	o := client.Options(addr)
	o.ReadTimeout = 30 * time.Second // a loaded machine
	o.WriteTimeout = 30 * time.Second
	rdb := redis.NewClient(o)
	t.Cleanup(func() { rdb.Close() })
	c := client.New(rdb, client.WithBatching(2))
	const workers, calls = 32, 40
	l := client.TokenBucket{Capacity: calls, Refill: 1, Period: time.Hour}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprint("batch:", w)
			for i := int64(0); i < calls; i++ {
				r, err := c.Take(ctx, key, l, 1)
				if err == nil && (r.Limited || r.Remaining != calls-1-i) {
					err = fmt.Errorf("worker %d call %d: %+v, want admitted with %d remaining", w, i, r, calls-1-i)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st := c.Stats()
	t.Logf("%d commands in %d pipelines", st.Commands, st.Pipelines)
	if st.Commands != workers*calls || st.Pipelines >= st.Commands || st.Pipelines == 0 {
		t.Errorf("stats %+v: want %d commands in fewer pipelines", st, workers*calls)
	}
	for w := 0; w < workers; w++ {
		r, err := c.Take(ctx, fmt.Sprint("batch:", w), l, 0)
		if err != nil || r.Remaining != 0 {
			t.Errorf("key %d after its calls: %+v, %v; want 0 remaining", w, r, err)
		}
	}
}

// TestBatchingHonoursTheCallersContext: a caller whose context ends while
// its command waits in a pipeline returns at once with the context's error.
func TestBatchingHonoursTheCallersContext(t *testing.T) {
	t.Parallel()
	addr := hungServer(t)
	o := client.Options(addr)
	o.ReadTimeout = time.Minute
	rdb := redis.NewClient(o)
	t.Cleanup(func() { rdb.Close() })
	c := client.New(rdb, client.WithBatching(1))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Take(ctx, "k", client.Throttle{MaxBurst: 1, Count: 1, Period: time.Second}, 1)
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Take: %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Take did not return after its context was cancelled")
	}
}

// hungServer accepts connections and never answers.
func hungServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { conn.Close() })
		}
	}()
	return ln.Addr().String()
}
