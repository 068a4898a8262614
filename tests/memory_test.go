package tests

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/node"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// startServerShards is startServer with a chosen shard count.
func startServerShards(t *testing.T, shards int) *testServer {
	t.Helper()
	clk := clock.NewFake(t0)
	cfg := config.Default()
	cfg.Port, cfg.Dir, cfg.Save = 0, t.TempDir(), 0
	srv := node.New(cfg, engine.New(clk, shards), nil)
	return serve(t, srv, clk)
}

func infoValue(t *testing.T, c *redis.Client, section, field string) string {
	t.Helper()
	for _, line := range strings.Split(c.Info(ctx, section).Val(), "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	t.Fatalf("INFO %s has no %s", section, field)
	return ""
}

func TestMaxmemoryNoeviction(t *testing.T) {
	t.Parallel()
	ts := startServerShards(t, 4)
	c := ts.client(t, 2)
	require.NoError(t, c.ConfigSet(ctx, "maxmemory", "16kb").Err())
	if got := infoValue(t, c, "memory", "maxmemory_policy"); got != "noeviction" {
		t.Fatalf("default policy %q", got)
	}
	n := 0
	var oom error
	for ; n < 5000; n++ {
		if oom = c.Do(ctx, "CL.THROTTLE", fmt.Sprint("user:", n), 9, 10, 60).Err(); oom != nil {
			break
		}
	}
	if oom == nil || oom.Error() != "OOM command not allowed when used memory > 'maxmemory'." {
		t.Fatalf("after %d keys: %v, want the OOM error", n, oom)
	}
	if n < 100 {
		t.Fatalf("OOM after only %d keys under 16kb", n)
	}
	// Clients that exist keep being limited; reads and deletes still work.
	for i := 0; i < 12; i++ {
		r := ints(t, c.Do(ctx, "CL.THROTTLE", "user:0", 9, 10, 60))
		if i == 11 && r[0] != 1 {
			t.Fatalf("existing key not limited after 12 requests: %v", r)
		}
	}
	if err := c.Do(ctx, "CL.THROTTLE", "fresh", 9, 10, 60).Err(); err == nil {
		t.Fatal("a new key was admitted over maxmemory")
	}
	require.NoError(t, c.Del(ctx, "user:1", "user:2").Err())
	if err := c.Do(ctx, "CL.THROTTLE", "fresh", 9, 10, 60).Err(); err != nil {
		t.Fatalf("new key after DEL freed room: %v", err)
	}
	require.NoError(t, c.ConfigSet(ctx, "maxmemory", "0").Err())
	if err := c.Do(ctx, "CL.THROTTLE", "fresh2", 9, 10, 60).Err(); err != nil {
		t.Fatalf("maxmemory 0 still refuses: %v", err)
	}
	if err := c.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err(); err == nil {
		t.Fatal("unsupported policy accepted")
	}
	if err := c.ConfigSet(ctx, "maxmemory", "lots").Err(); err == nil {
		t.Fatal("bad size accepted")
	}
}

func TestMaxmemoryVolatileTTLEvictsSoonestToExpire(t *testing.T) {
	t.Parallel()
	ts := startServerShards(t, 4)
	c := ts.client(t, 2)
	fill := func(prefix string, n, period int) {
		for i := 0; i < n; i++ {
			// burst 0, one per period: the key lives for period seconds.
			if err := c.Do(ctx, "CL.THROTTLE", fmt.Sprint(prefix, i), 0, 1, period).Err(); err != nil {
				t.Fatalf("%s%d: %v", prefix, i, err)
			}
		}
	}
	fill("long:", 200, 3600)
	fill("short:", 200, 60)
	require.NoError(t, c.ConfigSet(ctx, "maxmemory", fmt.Sprint(ts.srv.Engine().UsedBytes())).Err())
	require.NoError(t, c.ConfigSet(ctx, "maxmemory-policy", "volatile-ttl").Err())
	fill("new:", 200, 1800) // never refused: room is made
	count := func(prefix string) int {
		n := 0
		for i := 0; i < 200; i++ {
			if c.Exists(ctx, fmt.Sprint(prefix, i)).Val() == 1 {
				n++
			}
		}
		return n
	}
	long, short, fresh := count("long:"), count("short:"), count("new:")
	if long < 190 || short > 40 {
		t.Fatalf("after eviction: %d long-lived, %d short-lived, %d new keys; want the short-lived ones gone first", long, short, fresh)
	}
	if ev := infoValue(t, c, "stats", "evicted_keys"); ev == "0" {
		t.Fatal("evicted_keys is 0")
	}
	// Room is made before a command runs, so the last new key may overshoot
	// by its own cost, as in Redis.
	if used, max := ts.srv.Engine().UsedBytes(), mustInt(t, infoValue(t, c, "memory", "maxmemory")); used > max+100 {
		t.Fatalf("used %d over maxmemory %d", used, max)
	}
}

// TestMaxmemoryInTransactions: over maxmemory, a script's write to a new
// key answers OOM and a transaction with one is discarded, as in Redis,
// and the server goes on serving: the check that lets writes to existing keys
// through reads them through the transaction that holds their shards, and
// eviction waits for a command outside one.
func TestMaxmemoryInTransactions(t *testing.T) {
	t.Parallel()
	for _, policy := range []string{"noeviction", "volatile-ttl"} {
		t.Run(policy, func(t *testing.T) {
			t.Parallel()
			ts := startServer(t)
			c := ts.client(t, 2)
			require.NoError(t, c.Set(ctx, "old", "1", 0).Err())
			require.NoError(t, c.ConfigSet(ctx, "maxmemory-policy", policy).Err())
			require.NoError(t, c.ConfigSet(ctx, "maxmemory", "1").Err())
			quick := redis.NewClient(&redis.Options{Addr: ts.addr, MaxRetries: -1, ReadTimeout: 2 * time.Second})
			t.Cleanup(func() { quick.Close() })
			err := quick.Eval(ctx, "return redis.call('INCR', KEYS[1])", []string{"new"}).Err()
			require.ErrorContains(t, err, "OOM command not allowed")
			require.Equal(t, int64(2), quick.Eval(ctx, "return redis.call('INCR', KEYS[1])", []string{"old"}).Val())
			_, err = quick.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Incr(ctx, "old")
				p.Incr(ctx, "new2")
				return nil
			})
			require.ErrorContains(t, err, "EXECABORT") // INCR new2 was refused when queued, as in Redis
			require.NoError(t, quick.Ping(ctx).Err())
		})
	}
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err)
	return n
}

// MEMORY USAGE answers as Redis's does: bytes for a key, nil for an absent
// one, SAMPLES accepted; a sliding log's grows with its stamps.
func TestMemoryUsage(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c := ts.client(t, 2)
	require.NoError(t, c.Do(ctx, "CL.THROTTLE", "g", 9, 10, 60).Err())
	gcra, err := c.MemoryUsage(ctx, "g").Result()
	if err != nil || gcra <= 0 || gcra > 100 {
		t.Errorf("MEMORY USAGE of a GCRA key = %d, %v", gcra, err)
	}
	if n, err := c.MemoryUsage(ctx, "g", 5).Result(); err != nil || n != gcra {
		t.Errorf("with SAMPLES 5: %d, %v; want %d", n, err, gcra)
	}
	if err := c.MemoryUsage(ctx, "absent").Err(); err != redis.Nil {
		t.Errorf("absent key: %v, want nil", err)
	}
	for range 50 {
		require.NoError(t, c.Do(ctx, "SL.INCR", "s", 100, 60).Err())
	}
	if n, err := c.MemoryUsage(ctx, "s").Result(); err != nil || n < gcra+50*8 {
		t.Errorf("a sliding log of 50 stamps: %d, %v; want over %d", n, err, gcra+50*8)
	}
	expectErrors(t, c, []errCase{
		{args: []any{"MEMORY", "USAGE", "g", "SAMPLES", "x"}, want: "ERR value is not an integer"},
		{args: []any{"MEMORY", "USAGE", "g", "BOGUS", "1"}, want: "ERR syntax error"},
		{args: []any{"MEMORY", "USAGE", "g", "SAMPLES"}, want: "ERR syntax error"},
		{args: []any{"MEMORY", "NOPE"}, want: "ERR unknown subcommand"},
	}, 2)
}
