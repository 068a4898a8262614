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

// The scripts every system-design text shows, each run with the same
// instants (passed in ARGV, as such scripts often take them) on both
// servers: the same replies, and the same state left behind.
var textbookScripts = []struct {
	name, body string
	args       func(i int, now int64) []any
	state      func(c *redis.Client, key string) string
}{
	{"fixed window (INCR + EXPIRE)", `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
if n > tonumber(ARGV[2]) then return {0, n} end
return {1, n}`,
		func(i int, now int64) []any { return []any{60, 5} },
		func(c *redis.Client, key string) string {
			return fmt.Sprint(c.Get(ctx, key).Val(), " ttl ", c.TTL(ctx, key).Val())
		}},
	{"sliding log (sorted set)", `
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local n = redis.call('ZCARD', KEYS[1])
if n < limit then
  redis.call('ZADD', KEYS[1], now, now .. ':' .. n)
  redis.call('PEXPIRE', KEYS[1], window)
  return {1, limit - n - 1}
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {0, 0, oldest[1], oldest[2]}`,
		func(i int, now int64) []any { return []any{now, 1000, 4} },
		func(c *redis.Client, key string) string {
			return fmt.Sprint(c.ZRangeWithScores(ctx, key, 0, -1).Val(), " pttl ", c.PTTL(ctx, key).Val() > 0)
		}},
	{"token bucket (hash)", `
local cap, rate, now, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local b = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens, ts = tonumber(b[1]) or cap, tonumber(b[2]) or now
tokens = math.min(cap, tokens + (now - ts) * rate / 1000)
local ok = 0
if tokens >= cost then tokens = tokens - cost ok = 1 end
redis.call('HSET', KEYS[1], 'tokens', tokens, 'ts', now)
redis.call('PEXPIRE', KEYS[1], math.ceil(cap / rate * 1000))
return {ok, math.floor(tokens), tostring(tokens)}`,
		func(i int, now int64) []any { return []any{5, 2, now, 1 + i%2} },
		func(c *redis.Client, key string) string {
			return fmt.Sprint(c.HGetAll(ctx, key).Val(), " pttl ", c.PTTL(ctx, key).Val() > 0)
		}},
}

// TestTextbookScripts: a fixed window, a sliding log on a sorted set and a
// token bucket on a hash, the same on limitdb as on Redis.
func TestTextbookScripts(t *testing.T) {
	t.Parallel()
	red, lim := sideBySide(t)
	now := time.Now().UnixMilli()
	for _, s := range textbookScripts {
		t.Run(s.name, func(t *testing.T) {
			key := "tb:" + s.name
			for i := 0; i < 30; i++ {
				at := now + int64(i*137)
				want, err1 := red.Eval(ctx, s.body, []string{key}, s.args(i, at)...).Result()
				got, err2 := lim.Eval(ctx, s.body, []string{key}, s.args(i, at)...).Result()
				require.Equal(t, fmt.Sprint(err1), fmt.Sprint(err2), "call %d", i)
				require.Equal(t, want, got, "call %d", i)
				require.Equal(t, s.state(red, key), s.state(lim, key), "state after call %d", i)
			}
		})
	}
}
