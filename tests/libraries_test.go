package tests

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	limiter "github.com/ulule/limiter/v3"
	redisstore "github.com/ulule/limiter/v3/drivers/store/redis"
)

// Limiter libraries that send Lua scripts run unchanged against limitdb
// and against redis-server side by side, with the same traffic: they
// must admit the same requests and leave the same replies.

// sideBySide returns a client of redis-server and one of limitdb.
func sideBySide(t *testing.T) (red, lim *redis.Client) {
	t.Helper()
	red = startRedis(t)
	ts := startServer(t)
	lim = redis.NewClient(&redis.Options{Addr: ts.addr, Protocol: 2})
	t.Cleanup(func() { lim.Close() })
	return red, lim
}

// TestRedisRate: go-redis/redis_rate v10 (GCRA in Lua: EVALSHA, falling
// back to EVAL) on both servers: Allow, AllowN, AllowAtMost and Reset
// admit the same requests with the same remaining counts.
func TestRedisRate(t *testing.T) {
	t.Parallel()
	red, lim := sideBySide(t)
	type step struct {
		op  string
		n   int
		key string
	}
	limit := redis_rate.PerMinute(10)
	steps := []step{{"allow", 1, "a"}, {"allowN", 3, "a"}, {"allowN", 20, "a"}, {"allowAtMost", 20, "a"},
		{"allow", 1, "a"}, {"reset", 0, "a"}, {"allow", 1, "a"}, {"allowN", 0, "b"}, {"allowAtMost", 4, "b"}}
	for i := 0; i < 12; i++ {
		steps = append(steps, step{"allow", 1, "c"})
	}
	results := map[string][]string{}
	for name, c := range map[string]*redis.Client{"redis": red, "limitdb": lim} {
		rl := redis_rate.NewLimiter(c)
		for _, s := range steps {
			var res *redis_rate.Result
			var err error
			switch s.op {
			case "allow":
				res, err = rl.Allow(ctx, s.key, limit)
			case "allowN":
				res, err = rl.AllowN(ctx, s.key, limit, s.n)
			case "allowAtMost":
				res, err = rl.AllowAtMost(ctx, s.key, limit, s.n)
			case "reset":
				err = rl.Reset(ctx, s.key)
			}
			require.NoError(t, err, "%s: %+v", name, s)
			if res != nil {
				// RetryAfter and ResetAfter depend on the instant: compare to the second.
				results[name] = append(results[name], fmt.Sprintf("%+v allowed=%d remaining=%d retry=%v reset=%v", s, res.Allowed, res.Remaining,
					res.RetryAfter.Round(time.Second), res.ResetAfter.Round(time.Second)))
			}
		}
	}
	require.Equal(t, results["redis"], results["limitdb"])
	// The same keys are left behind, with the same kind of value.
	for _, k := range []string{"rate:a", "rate:b", "rate:c"} {
		require.Equal(t, red.Type(ctx, k).Val(), lim.Type(ctx, k).Val(), k)
		require.InDelta(t, red.TTL(ctx, k).Val().Seconds(), lim.TTL(ctx, k).Val().Seconds(), 1, k)
	}
}

// TestUluleLimiter: ulule/limiter v3 with its redis store (SCRIPT LOAD at
// creation, then EVALSHA) on both servers.
func TestUluleLimiter(t *testing.T) {
	t.Parallel()
	red, lim := sideBySide(t)
	rate := limiter.Rate{Period: time.Minute, Limit: 5}
	results := map[string][]string{}
	for name, c := range map[string]*redis.Client{"redis": red, "limitdb": lim} {
		store, err := redisstore.NewStoreWithOptions(c, limiter.StoreOptions{Prefix: "ulule", MaxRetry: 1})
		require.NoError(t, err, name)
		l := limiter.New(store, rate)
		for i := 0; i < 8; i++ {
			ctxv, err := l.Get(ctx, "user")
			require.NoError(t, err, name)
			results[name] = append(results[name], fmt.Sprintf("get limit=%d remaining=%d reached=%v", ctxv.Limit, ctxv.Remaining, ctxv.Reached))
		}
		ctxv, err := l.Peek(ctx, "user")
		require.NoError(t, err, name)
		results[name] = append(results[name], fmt.Sprintf("peek remaining=%d reached=%v", ctxv.Remaining, ctxv.Reached))
		ctxv, err = l.Increment(ctx, "other", 3)
		require.NoError(t, err, name)
		results[name] = append(results[name], fmt.Sprintf("increment remaining=%d", ctxv.Remaining))
		ctxv, err = l.Reset(ctx, "user")
		require.NoError(t, err, name)
		results[name] = append(results[name], fmt.Sprintf("reset remaining=%d", ctxv.Remaining))
	}
	require.Equal(t, results["redis"], results["limitdb"])
}
