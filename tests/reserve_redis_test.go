package tests

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestReserveSettleRacesOnRedisNotOnLimitdb makes the two failures of
// INCRBY then DECRBY happen on a real redis-server, step by step, and runs
// the same steps on limitdb:
//
//   - a retried correction (the settle timed out and was sent again, or
//     two workers both correct) gives the difference back twice, and the
//     window admits more than its limit;
//   - a correction that arrives after the window rolled over recreates the
//     counter, negative and with no expiry: that budget never resets.
func TestReserveSettleRacesOnRedisNotOnLimitdb(t *testing.T) {
	// The hand-written reserve-then-correct a team runs on Redis instead of
	// RL.RESERVE and RL.SETTLE: reserve the estimate on a fixed-window
	// counter in one script, correct it afterwards with DECRBY.
	src, err := os.ReadFile("../bench/lua/reserve.lua")
	require.NoError(t, err)
	reserveLua := string(src)

	t.Parallel()
	rc := startRedis(t)
	s := startServer(t)
	lc := s.client(t, 2)
	require.NoError(t, lc.Do(ctx, "RL.POLICY", "SET", "tpm", "fixed_window", 1000, "1m").Err())

	t.Run("retried correction", func(t *testing.T) {
		// Redis: 800 reserved, 100 used; the correction is sent twice.
		require.Equal(t, int64(1), rc.Eval(ctx, reserveLua, []string{"tpm:a"}, 800, 1000, 60000).Val())
		require.NoError(t, rc.DecrBy(ctx, "tpm:a", 700).Err())
		require.NoError(t, rc.DecrBy(ctx, "tpm:a", 700).Err()) // the retry
		used := rc.Get(ctx, "tpm:a").Val()
		require.Equal(t, "-600", used, "Redis: 100 used, the counter says -600: the window now admits 1600")
		require.Equal(t, int64(1), rc.Eval(ctx, reserveLua, []string{"tpm:a"}, 1000, 1000, 60000).Val(),
			"Redis admits a whole limit on top of what was used")

		// limitdb: the same steps; the retry changes nothing.
		id := reserve(t, lc, "tpm", "a", 800)
		require.Equal(t, int64(1), ints(t, lc.Do(ctx, "RL.SETTLE", "tpm", "a", id, 100))[5])
		require.Equal(t, int64(0), ints(t, lc.Do(ctx, "RL.SETTLE", "tpm", "a", id, 100))[5], "the retry says it settled nothing")
		require.Equal(t, int64(900), ints(t, lc.Do(ctx, "RL.HIT", "tpm", "a", 0))[2])
		require.Equal(t, int64(1), ints(t, lc.Do(ctx, "RL.HIT", "tpm", "a", 1000))[0], "limitdb denies past the limit")
	})

	t.Run("correction after the window", func(t *testing.T) {
		// Redis: a 100 ms window (the test cannot step Redis's clock);
		// the response outlives it.
		require.Equal(t, int64(1), rc.Eval(ctx, reserveLua, []string{"tpm:b"}, 800, 1000, 100).Val())
		require.Eventually(t, func() bool { return rc.Exists(ctx, "tpm:b").Val() == 0 }, 30*time.Second, 5*time.Millisecond)
		require.NoError(t, rc.DecrBy(ctx, "tpm:b", 700).Err())
		require.Equal(t, "-700", rc.Get(ctx, "tpm:b").Val())
		require.Equal(t, time.Duration(-1), rc.PTTL(ctx, "tpm:b").Val(), "Redis: the counter came back with no expiry")
		// It never resets: the script sets the expiry only on a counter
		// its own INCRBY created, so 1700 units from now the key refuses
		// every request for ever.
		require.Equal(t, int64(1), rc.Eval(ctx, reserveLua, []string{"tpm:b"}, 1000, 1000, 100).Val())
		require.Equal(t, int64(1), rc.Eval(ctx, reserveLua, []string{"tpm:b"}, 700, 1000, 100).Val())
		require.Equal(t, time.Duration(-1), rc.PTTL(ctx, "tpm:b").Val())
		require.Equal(t, int64(0), rc.Eval(ctx, reserveLua, []string{"tpm:b"}, 1, 1000, 100).Val(), "Redis: the budget is gone for good")

		// limitdb: the give-back to a window that has passed is dropped,
		// the new window holds its whole limit and the key expires.
		id := reserve(t, lc, "tpm", "b", 800)
		s.clk.Advance(time.Minute)
		require.Equal(t, []int64{0, 1000, 1000, -1, 0, 1}, ints(t, lc.Do(ctx, "RL.SETTLE", "tpm", "b", id, 100)))
		require.Equal(t, int64(0), ints(t, lc.Do(ctx, "RL.HIT", "tpm", "b", 1000))[0])
		require.Equal(t, int64(1), ints(t, lc.Do(ctx, "RL.HIT", "tpm", "b", 1))[0], "limitdb: exactly the limit")
		require.Greater(t, lc.PTTL(ctx, "rl:tpm:b").Val(), time.Duration(0), "limitdb: the key still expires")
	})
}

// TestExactReserveScriptsMatchLimitdb: bench/reserve.sh's second Redis
// side, the reserve and settle scripts written with RL.RESERVE's
// guarantees (bench/lua/reserve_exact.lua, settle_exact.lua), answer as
// RL.RESERVE and RL.SETTLE do on a fixed_window policy, step by step on
// the same instants: the same ids, the same admissions, the same budget
// left, a repeated settle that counts once, and the same refusals. It is
// what makes the benchmark compare equivalent work.
func TestExactReserveScriptsMatchLimitdb(t *testing.T) {
	load := func(name string) string {
		src, err := os.ReadFile("../bench/lua/" + name)
		require.NoError(t, err)
		return string(src)
	}
	reserveLua, settleLua := load("reserve_exact.lua"), load("settle_exact.lua")

	t.Parallel()
	rc := startRedis(t)
	s := startServer(t)
	lc := s.client(t, 2)
	const limit, window, ttl = 1000, int64(60000), int64(300000)
	require.NoError(t, lc.Do(ctx, "RL.POLICY", "SET", "tpm", "fixed_window", limit, "1m").Err())
	keys := []string{"{a}:win", "{a}:res"}
	nowMs := func() int64 { return s.clk.Now() / 1e6 }

	// Each step names a reservation by its index in ids, -1 for none.
	var ids []string
	redisRemaining := func() int64 {
		v := rc.HMGet(ctx, keys[0], "win", "used").Val()
		if v[0] == nil || v[0].(string) != strconv.FormatInt(nowMs()-nowMs()%window, 10) {
			return limit
		}
		used, err := strconv.ParseInt(v[1].(string), 10, 64)
		require.NoError(t, err)
		return limit - used
	}
	limitdbRemaining := func() int64 { return ints(t, lc.Do(ctx, "RL.HIT", "tpm", "a", 0))[2] }
	reserveBoth := func(cost int64) bool {
		rid, rerr := rc.Eval(ctx, reserveLua, keys, cost, limit, window, ttl, nowMs()).Result()
		v, err := lc.Do(ctx, "RL.RESERVE", "tpm", "a", cost, "5m").Slice()
		require.NoError(t, err)
		if v[5] == nil {
			require.ErrorIs(t, rerr, redis.Nil, "limitdb denied %d, Redis answered %v", cost, rid)
			return false
		}
		require.NoError(t, rerr)
		require.Equal(t, v[5], rid, "the same id")
		ids = append(ids, rid.(string))
		return true
	}
	settleBoth := func(id string, actual int64) (int64, string) {
		rv, rerr := rc.Eval(ctx, settleLua, keys, id, actual, window, nowMs()).Int64()
		v, err := lc.Do(ctx, "RL.SETTLE", "tpm", "a", id, actual).Slice()
		if err != nil {
			require.Error(t, rerr, "limitdb refused (%v), Redis answered %d", err, rv)
			return -1, err.Error()
		}
		require.NoError(t, rerr)
		require.Equal(t, v[5], rv, "settled flag")
		return rv, ""
	}
	same := func(step string) {
		require.Equal(t, limitdbRemaining(), redisRemaining(), "%s: the budget left", step)
	}

	require.True(t, reserveBoth(800))
	same("reserve 800")
	require.False(t, reserveBoth(300), "past the limit")
	same("denied 300")
	st, _ := settleBoth(ids[0], 100)
	require.Equal(t, int64(1), st)
	same("settle at 100")
	st, _ = settleBoth(ids[0], 100)
	require.Equal(t, int64(0), st, "a repeat settles nothing")
	same("repeated settle")
	require.True(t, reserveBoth(500))
	st, _ = settleBoth(ids[1], 900)
	require.Equal(t, int64(1), st)
	same("settle at more than the estimate")
	require.False(t, reserveBoth(1))
	_, msg := settleBoth(strconv.FormatInt(nowMs()+1000, 10)+"-77", 1)
	require.Contains(t, msg, "never issued")

	s.clk.Advance(time.Minute)
	require.True(t, reserveBoth(300))
	s.clk.Advance(time.Minute)
	st, _ = settleBoth(ids[2], 0)
	require.Equal(t, int64(1), st)
	same("a give-back to a window that has passed")
	require.True(t, reserveBoth(50))
	s.clk.Advance(6 * time.Minute)
	_, msg = settleBoth(ids[3], 10)
	require.Contains(t, msg, "expired")
	same("after the ttl")
}
