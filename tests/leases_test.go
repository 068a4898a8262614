package tests

import (
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// acquire runs CL.ACQUIRE and returns its reply's six fields, the lease id
// "" when none was given.
func acquire(t *testing.T, c *redis.Client, args ...any) (limited bool, remaining, retry int64, id string) {
	t.Helper()
	v, err := c.Do(ctx, append([]any{"CL.ACQUIRE"}, args...)...).Slice()
	require.NoError(t, err)
	require.Len(t, v, 6)
	if v[5] != nil {
		id = v[5].(string)
	}
	return v[0].(int64) == 1, v[2].(int64), v[3].(int64), id
}

// TestHandWrittenLeaseScriptRaces runs the semaphore teams write by hand
// on a sorted set (bench/lua/lease_acquire.lua, redis-semaphore's pattern)
// on redis-server, and shows each of its races admitting two holders of a
// one-slot semaphore, or dropping a live lease; then the same steps with
// CL.ACQUIRE on limitdb, where they do not happen. The steps are explicit:
// the script takes its instant from the caller, so each race is one
// argument, no timing.
func TestHandWrittenLeaseScriptRaces(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("../bench/lua/lease_acquire.lua")
	require.NoError(t, err)
	script := redis.NewScript(string(src))
	rc := startRedis(t)
	ls := startServer(t)
	lc := ls.client(t, 2)
	const base = int64(1_767_225_600_000) // ms: the callers' clocks
	lua := func(key string, limit int, id string, ttlMs, nowMs int64) int64 {
		t.Helper()
		n, err := script.Run(ctx, rc, []string{key}, limit, id, ttlMs, nowMs).Int64()
		require.NoError(t, err)
		return n
	}

	t.Run("ShortTTLReclaimsALongLease", func(t *testing.T) {
		// A long job takes the only slot for a minute; two seconds later a
		// caller with a one-second ttl reclaims it with its own ttl.
		require.Equal(t, int64(1), lua("sem:ttl", 1, "long-job", 60_000, base))
		require.Equal(t, int64(1), lua("sem:ttl", 1, "short-job", 1_000, base+2_000),
			"redis-server: the short job was denied; the race did not happen")
		members, err := rc.ZRange(ctx, "sem:ttl", 0, -1).Result()
		require.NoError(t, err)
		require.Equal(t, []string{"short-job"}, members, "redis-server: long-job's live lease was dropped; both now run")

		limited, _, _, id := acquire(t, lc, "sem:ttl", 1, "60s", "long-job")
		require.False(t, limited)
		require.Equal(t, "long-job", id)
		ls.clk.Advance(2 * time.Second)
		limited, _, retry, _ := acquire(t, lc, "sem:ttl", 1, "1s", "short-job")
		require.True(t, limited, "limitdb: each lease keeps its own expiry, so the short job waits")
		require.Equal(t, int64(58_000), retry, "until long-job's lease expires")
	})

	t.Run("ClockSkewReclaimsALiveLease", func(t *testing.T) {
		// Same ttl for everyone, but the second caller's clock runs ten
		// seconds ahead (a paused VM, NTP stepping): the script trusts it.
		require.Equal(t, int64(1), lua("sem:skew", 1, "worker-a", 10_000, base))
		require.Equal(t, int64(1), lua("sem:skew", 1, "worker-b", 10_000, base+10_001),
			"redis-server: the skewed worker was denied; the race did not happen")
		n, err := rc.ZCard(ctx, "sem:skew").Result()
		require.NoError(t, err)
		require.Equal(t, int64(1), n, "redis-server: worker-a's live lease was dropped")

		// limitdb reads one clock, its own: a caller cannot move it.
		require.False(t, first(acquire(t, lc, "sem:skew", 1, "10s", "worker-a")))
		limited, _, retry, _ := acquire(t, lc, "sem:skew", 1, "10s", "worker-b")
		require.True(t, limited)
		require.Equal(t, int64(10_000), retry)
	})

	t.Run("KeyExpiryDropsALongLease", func(t *testing.T) {
		// Two slots, both taken legitimately; the short acquire sets the
		// whole key to expire with its own ttl, long-job's lease with it.
		require.Equal(t, int64(1), lua("sem:pexpire", 2, "long-job", 60_000, base))
		require.Equal(t, int64(1), lua("sem:pexpire", 2, "short-job", 1_000, base))
		pttl, err := rc.PTTL(ctx, "sem:pexpire").Result()
		require.NoError(t, err)
		require.LessOrEqual(t, pttl, time.Second, "redis-server: the key outlives the short lease; the leak did not happen")

		acquire(t, lc, "sem:pexpire", 2, "60s", "long-job")
		acquire(t, lc, "sem:pexpire", 2, "1s", "short-job")
		ms, err := lc.PTTL(ctx, "sem:pexpire").Result()
		require.NoError(t, err)
		require.Equal(t, time.Minute, ms, "limitdb: the key lives as long as its latest lease")
		ls.clk.Advance(2 * time.Second)
		require.False(t, first(acquire(t, lc, "sem:pexpire", 2, "1s", "after-short")), "short-job's slot is free")
		limited, _, _, _ := acquire(t, lc, "sem:pexpire", 2, "1s", "third")
		require.True(t, limited, "long-job still holds its slot after the short lease expired")
	})
}

func first(limited bool, _, _ int64, _ string) bool { return limited }

// TestLeaseKeyspace: a lease key in the keyspace's commands: TYPE, PTTL
// (the latest lease), EXPIRE refused as on every limiter, WRONGTYPE both
// ways, DUMP and RESTORE, and MEMORY USAGE growing with the leases.
func TestLeaseKeyspace(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.client(t, 2)
	_, _, _, a := acquire(t, c, "pool", 3, "30s")
	require.Len(t, a, 32)
	acquire(t, c, "pool", 3, "10s", "b")
	require.Equal(t, "lease", c.Type(ctx, "pool").Val())
	require.Equal(t, 30*time.Second, c.PTTL(ctx, "pool").Val())
	require.Error(t, c.Expire(ctx, "pool", time.Hour).Err())
	require.EqualError(t, c.Do(ctx, "ZADD", "pool", 1, "x").Err(), "WRONGTYPE Operation against a key holding the wrong kind of value")
	require.NoError(t, c.Set(ctx, "str", "v", 0).Err())
	require.EqualError(t, c.Do(ctx, "CL.ACQUIRE", "str", 1, 1).Err(), "WRONGTYPE Operation against a key holding the wrong kind of value")
	one, err := c.MemoryUsage(ctx, "pool").Result()
	require.NoError(t, err)
	acquire(t, c, "pool", 3, "10s", "c")
	more, _ := c.MemoryUsage(ctx, "pool").Result()
	require.Greater(t, more, one, "MEMORY USAGE counts the leases")

	require.True(t, first(acquire(t, c, "pool", 3, "10s")), "full")
	require.Equal(t, "admitted=3,denied=1", infoOf(t, c, "limits", "limit_cl.acquire"), "INFO limits counts CL.ACQUIRE's decisions")

	dump, err := c.Dump(ctx, "pool").Result()
	require.NoError(t, err)
	require.NoError(t, c.Restore(ctx, "copy", 30*time.Second, dump).Err())
	require.Equal(t, int64(1), c.Do(ctx, "CL.RELEASE", "copy", a).Val(), "the copy holds a")
	require.Equal(t, int64(1), c.Do(ctx, "CL.RELEASE", "pool", a).Val(), "the original still holds a")
	s.clk.Advance(10 * time.Second)
	require.Equal(t, int64(0), c.Do(ctx, "CL.RELEASE", "copy", "b").Val(), "b expired on the copy at its own instant")
	require.Equal(t, int64(0), c.Exists(ctx, "pool").Val(), "pool's last lease expired")
}

// TestLeasesSurviveReplicationAndFailover: leases reach a replica with
// their absolute expiries; promoted, it releases and renews them, and a
// lease nobody released frees its slot on it at the instant it would have
// on the primary.
func TestLeasesSurviveReplicationAndFailover(t *testing.T) {
	t.Parallel()
	p, r := startServer(t), startServer(t)
	pc, rc := p.client(t, 2), r.client(t, 2)
	_, _, _, early := acquire(t, pc, "jobs", 3, "1m")
	replicate(t, rc, p)
	_, _, _, late := acquire(t, pc, "jobs", 3, "2m")
	acquire(t, pc, "jobs", 3, "30s", "crashed-worker")
	require.NoError(t, pc.Do(ctx, "RL.POLICY", "SET", "inflight", "concurrency", 1, "1m").Err())
	v, err := pc.Do(ctx, "RL.HIT", "inflight", "u").Slice()
	require.NoError(t, err)
	polID := v[5].(string)
	n, err := pc.Do(ctx, "WAIT", 1, 5000).Int()
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, keyspaceOf(t, p.srv.Engine()), keyspaceOf(t, r.srv.Engine()))

	require.NoError(t, rc.Do(ctx, "REPLICAOF", "NO", "ONE").Err())
	require.Equal(t, 2*time.Minute, rc.PTTL(ctx, "jobs").Val())
	limited, _, retry, _ := acquire(t, rc, "jobs", 3, "1m")
	require.True(t, limited, "the promoted replica holds the primary's three leases")
	require.Equal(t, int64(30_000), retry, "until crashed-worker's lease expires")
	require.Equal(t, int64(1), rc.Do(ctx, "CL.RELEASE", "jobs", early).Val())
	require.Equal(t, int64(90_000), rc.Do(ctx, "CL.RENEW", "jobs", late, "90s").Val())
	require.Equal(t, int64(1), rc.Do(ctx, "RL.RELEASE", "inflight", "u", polID).Val())
	r.clk.Advance(30 * time.Second) // crashed-worker never released: its slot frees now
	for i := 0; i < 2; i++ {
		require.False(t, first(acquire(t, rc, "jobs", 3, "1m")), "acquire %d after the crash's lease expired", i)
	}
	require.True(t, first(acquire(t, rc, "jobs", 3, "1m")))
}

// TestLeasesSurviveAOFAndRestart: leases logged to the append-only file
// (appendfsync always) are held after kill -9 and a restart, with their
// expiries.
func TestLeasesSurviveAOFAndRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := mustStart(t, dir, "--save", "0", "--appendonly", "yes", "--appendfsync", "always")
	c := p.client(t)
	waitRewrite(t, c)
	var ids []string
	for i := 0; i < 2; i++ {
		_, _, _, id := acquire(t, c, "jobs", 2, "1h")
		ids = append(ids, id)
	}
	acquire(t, c, "jobs", 2, "1h", ids[0]) // a renewal, logged too
	p.kill9(t)

	p = mustStart(t, dir, "--save", "0", "--appendonly", "yes")
	c = p.client(t)
	require.True(t, first(acquire(t, c, "jobs", 2, "1h")), "both leases are held after the restart")
	pttl := c.PTTL(ctx, "jobs").Val()
	require.True(t, pttl > 59*time.Minute && pttl <= time.Hour, "PTTL %v", pttl)
	for _, id := range ids {
		require.Equal(t, int64(1), c.Do(ctx, "CL.RELEASE", "jobs", id).Val(), id)
	}
	require.Equal(t, int64(0), c.Exists(ctx, "jobs").Val())
}
