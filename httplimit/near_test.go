package httplimit_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/limitdb/limitdb/client"
	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/httplimit"
	"github.com/limitdb/limitdb/node"
	"github.com/redis/go-redis/v9"
)

// serveClock starts a limitdb server on a free loopback port and returns
// its fake clock, for tests that step the server and the middleware
// together.
func serveClock(t *testing.T) (string, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(t0.UnixNano())
	cfg := config.Default()
	cfg.Save = 0
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

// TestNearCacheBehindTheMiddleware: a hot API key hammering a gcra policy
// every 50 ms for a minute gets the same statuses through a middleware
// whose client keeps denials (client.WithNearCache) as through one that
// asks limitdb every time, Retry-After within a second of it, and at least
// 90% of its denials are answered without a round trip.
func TestNearCacheBehindTheMiddleware(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	addr, clk := serveClock(t)
	rdb := redis.NewClient(client.Options(addr))
	t.Cleanup(func() { rdb.Close() })
	plain := client.New(rdb)
	near := client.New(rdb, client.WithNearCache(clk))
	if err := plain.SetPolicy(ctx, "api", client.PolicySpec{Algorithm: "gcra", Limit: 5, Period: 10 * time.Second, Burst: 5}); err != nil {
		t.Fatal(err)
	}
	pol := client.Policy{Name: "api"}
	hp := newHandler(t, httplimit.Options{Limiter: httplimit.Remote{Client: plain, Limit: pol}, Prefix: "plain:", Clock: clk})
	hn := newHandler(t, httplimit.Options{Limiter: httplimit.Remote{Client: near, Limit: pol}, Prefix: "near:", Clock: clk})
	denied := 0
	for i := 0; i < 1200; i++ {
		clk.Advance(50 * time.Millisecond)
		wp, wn := get(hp, "hot"), get(hn, "hot")
		if wp.Code != wn.Code {
			t.Fatalf("request %d: near cache %d, limitdb %d", i, wn.Code, wp.Code)
		}
		if wp.Code == 429 {
			denied++
		}
		rp, _ := strconv.Atoi(wp.Header().Get("Retry-After"))
		rn, _ := strconv.Atoi(wn.Header().Get("Retry-After"))
		if d := rn - rp; d < -1 || d > 1 {
			t.Errorf("request %d: Retry-After %d through the near cache, %d from limitdb", i, rn, rp)
		}
	}
	st := near.Stats()
	t.Logf("%d denials, %d answered locally, %d asked", denied, st.NearAnswered, st.NearAsked)
	if denied < 1000 || st.NearAnswered*10 < int64(denied)*9 {
		t.Errorf("%d of %d denials answered locally; want at least 90%%", st.NearAnswered, denied)
	}
	if got := fmt.Sprint(st.NearAnswered + st.NearAsked); got != "1200" {
		t.Errorf("the near cache saw %s requests, want 1200", got)
	}
}
