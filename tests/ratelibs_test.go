package tests

import (
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/node"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/throttled/throttled/v2"
	goredisstore "github.com/throttled/throttled/v2/store/goredisstore.v9"
	"github.com/throttled/throttled/v2/store/storetest"
)

// Rate-limiting libraries in Go, Node.js and Python run unchanged against
// limitdb and against redis-server side by side. Both servers read the
// real clock here: these libraries compare the server's TIME with their
// own, or let keys expire while they run, so a frozen limitdb would differ
// from Redis for reasons that are not the library's. Replies that carry a
// duration are compared to the second.

// startRealServer is startServer with the real clock.
func startRealServer(t testing.TB) *testServer {
	t.Helper()
	eng := engine.New(clock.Real(), 0)
	cfg := config.Default()
	cfg.Save = 0
	cfg.Port = 0
	cfg.Dir = t.TempDir()
	return serve(t, node.New(cfg, eng, nil), nil)
}

// sideBySideReal returns a client of redis-server (on a unix socket: its
// path is red.Options().Addr) and one of a real-clock limitdb.
func sideBySideReal(t *testing.T) (red, lim *redis.Client, ts *testServer) {
	t.Helper()
	red = startRedis(t)
	ts = startRealServer(t)
	lim = redis.NewClient(&redis.Options{Addr: ts.addr, Protocol: 2})
	t.Cleanup(func() { lim.Close() })
	return red, lim, ts
}

// TestThrottled: throttled v2.15.0's GCRA limiter with its go-redis v9
// store (pipelined TIME+GET, SETNX+EXPIRE, and an EVAL compare-and-swap
// that answers redis.error_reply for a missing key) limits the same
// requests with the same remaining counts on both servers, and the store
// passes throttled's own store conformance suite on limitdb.
func TestThrottled(t *testing.T) {
	t.Parallel()
	red, lim, _ := sideBySideReal(t)

	t.Run("storetest", func(t *testing.T) {
		st, err := goredisstore.NewCtx(lim, "storetest:")
		require.NoError(t, err)
		storetest.TestGCRAStoreCtx(t, st)
	})

	type step struct {
		key      string
		quantity int
	}
	// 10 per minute (one every 6 s), bursts of 4: five at once pass, then
	// denials that charge nothing, a quantity that can never fit, and
	// quantity 0 (a peek).
	quota := throttled.RateQuota{MaxRate: throttled.PerMin(10), MaxBurst: 4}
	var steps []step
	for i := 0; i < 7; i++ {
		steps = append(steps, step{"a", 1})
	}
	steps = append(steps, step{"a", 0}, step{"b", 3}, step{"b", 2}, step{"b", 2}, step{"b", 6}, step{"c", 5}, step{"c", 1})
	results := map[string][]string{}
	for name, c := range map[string]*redis.Client{"redis": red, "limitdb": lim} {
		st, err := goredisstore.NewCtx(c, "throttled:")
		require.NoError(t, err, name)
		rl, err := throttled.NewGCRARateLimiterCtx(st, quota)
		require.NoError(t, err, name)
		for i, s := range steps {
			limited, res, err := rl.RateLimitCtx(ctx, s.key, s.quantity)
			require.NoError(t, err, "%s: step %d %+v", name, i, s)
			results[name] = append(results[name], fmt.Sprintf("step %d %+v: limited=%v limit=%d remaining=%d retry=%v reset=%v", i, s, limited,
				res.Limit, res.Remaining, res.RetryAfter.Round(time.Second), res.ResetAfter.Round(time.Second)))
		}
	}
	require.Equal(t, results["redis"], results["limitdb"])
	t.Logf("%s", strings.Join(results["limitdb"], "\n"))
	// The state it keeps: a string (the theoretical arrival time in ns) with a TTL.
	for _, k := range []string{"throttled:a", "throttled:b", "throttled:c"} {
		require.Equal(t, red.Type(ctx, k).Val(), lim.Type(ctx, k).Val(), k)
		require.InDelta(t, red.TTL(ctx, k).Val().Seconds(), lim.TTL(ctx, k).Val().Seconds(), 1, k)
	}
	ranNatively(t, lim, "throttled.cas") // its compare-and-swap, sent with EVAL
}

// TestPythonLimits: the `limits` library (Debian python3-limits 2.8.0),
// tests/clients/python/test_limits.py: its fixed-window, elastic-expiry
// and moving-window (Redis lists) strategies answer hit/test/
// get_window_stats the same on both servers and leave the same keys;
// storage.reset() (KEYS in a script) fails on limitdb with the error that
// test pins.
func TestPythonLimits(t *testing.T) {
	t.Parallel()
	py := python(t)
	if exec.Command(py, "-c", "import limits").Run() != nil {
		missing(t, "%s has no limits (Debian: python3-limits)", py)
	}
	red, lim, ts := sideBySideReal(t)
	out := run(t, "clients/python", []string{"LIMITDB_PORT=" + ts.port(), "REDIS_SOCKET=" + red.Options().Addr, "PYTHONDONTWRITEBYTECODE=1"},
		py, "-m", "unittest", "-v", "test_limits")
	if !strings.Contains(out, "\nOK") {
		t.Fatalf("limits tests did not pass:\n%s", out)
	}
	for _, twin := range []string{"limits.incr_expire", "limits.acquire_moving_window", "limits.moving_window"} {
		ranNatively(t, lim, twin)
	}
	t.Logf("%s", lastLines(out, 12))
}

// nodeSideBySide runs a node test file against redis-server
// (REDIS_SOCKET) and a real-clock limitdb (LIMITDB_PORT), and returns its
// output and limitdb's client.
func nodeSideBySide(t *testing.T, file string) (string, *redis.Client) {
	t.Helper()
	dir := nodeDir(t)
	red, lim, ts := sideBySideReal(t)
	out := run(t, dir, []string{"LIMITDB_PORT=" + ts.port(), "REDIS_SOCKET=" + red.Options().Addr}, "node", "--test", "--test-reporter=tap", file)
	// node's runner exits non-zero on a failure; make sure tests did run.
	if !strings.Contains(out, "# fail 0") || strings.Contains(out, "# pass 0\n") {
		t.Fatalf("%s did not all pass:\n%s", file, out)
	}
	t.Logf("%s", lastLines(out, 8))
	return out, lim
}

// ranNatively fails t unless limitdb ran the native twin name: the
// library sent the exact script text the twin is for.
func ranNatively(t *testing.T, lim *redis.Client, name string) {
	t.Helper()
	require.Regexp(t, `native_`+regexp.QuoteMeta(name)+`:sha=\w+,runs=[1-9]`, lim.Info(ctx, "scripting").Val())
}

// TestExpressRateLimit: express-rate-limit 8.7.5 with rate-limit-redis
// 6.0.1, through ioredis and node-redis: the store's increment, get,
// decrement and resetKey (and its reload after NOSCRIPT) answer the same
// hits and reset times on both servers, and an express app admits the
// same requests with the same RateLimit headers
// (tests/clients/node/express-rate-limit.test.mjs).
func TestExpressRateLimit(t *testing.T) {
	t.Parallel()
	_, lim := nodeSideBySide(t, "express-rate-limit.test.mjs")
	ranNatively(t, lim, "rate-limit-redis.increment")
}

// TestRateLimiterFlexibleSideBySide: rate-limiter-flexible 11.4.0's
// RateLimiterRedis (its Lua script) through ioredis and node-redis, the
// same calls on both servers: consume to the limit and past it, penalty,
// reward, get, block, delete, a burst of 20 at a limit of 3
// (tests/clients/node/ratelimiter-sidebyside.test.mjs).
func TestRateLimiterFlexibleSideBySide(t *testing.T) {
	t.Parallel()
	_, lim := nodeSideBySide(t, "ratelimiter-sidebyside.test.mjs")
	ranNatively(t, lim, "rate-limiter-flexible.incrTtl")
}

// TestBottleneck: bottleneck 2.19.5 in clustering mode (its ioredis
// datastore and Lua scripts, a subscriber for its channels): a burst of 20
// jobs against a reservoir of 5, at most 2 at once, then the reservoir
// raised: the same jobs run at each point on both servers, with the same
// counts kept in the datastore (tests/clients/node/bottleneck.test.mjs),
// with the job's scripts run by their twins.
func TestBottleneck(t *testing.T) {
	t.Parallel()
	_, lim := nodeSideBySide(t, "bottleneck.test.mjs")
	for _, name := range []string{"init", "register_client", "submit", "register", "free"} {
		ranNatively(t, lim, "bottleneck."+name)
	}
}
