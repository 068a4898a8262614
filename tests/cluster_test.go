package tests

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/cluster"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/node"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// startClusterServer is startServer with cluster-enabled yes, and the
// policies api (5 a minute) and login (2 a minute) that the cluster
// clients' scripts hit.
func startClusterServer(t *testing.T) *testServer {
	t.Helper()
	clk := clock.NewFake(t0)
	cfg := config.Default()
	cfg.Save = 0
	cfg.Port = 0
	cfg.Dir = t.TempDir()
	cfg.ClusterEnabled = "emulated"
	ts := serve(t, node.New(cfg, engine.New(clk, 0), nil), clk)
	c := ts.client(t, 2)
	for _, p := range [][]any{{"api", "gcra", 5, "1m"}, {"login", "gcra", 2, "1m"}} {
		require.NoError(t, c.Do(context.Background(), append([]any{"RL.POLICY", "SET"}, p...)...).Err())
	}
	return ts
}

// TestClusterGoRedis: go-redis's ClusterClient discovers the node, routes
// limiter commands on keys across many slots to it, runs RL.HITALL on
// hash-tagged keys, and gets CROSSSLOT for keys in several slots.
func TestClusterGoRedis(t *testing.T) {
	t.Parallel()
	ts := startClusterServer(t)
	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{ts.addr}})
	t.Cleanup(func() { cc.Close() })

	slots := map[int]bool{}
	for i := 0; i < 300; i++ {
		key := fmt.Sprintf("user:%d", i)
		slots[cluster.Slot([]byte(key))] = true
		require.Equal(t, []int64{0, 2, 1, -1, 30}, ints(t, cc.Do(ctx, "CL.THROTTLE", key, 1, 2, 60)), key)
		require.Equal(t, []int64{0, 5, 4, -1, 12000}, ints(t, cc.Do(ctx, "RL.HIT", "api", key)), key)
		require.NoError(t, cc.Set(ctx, "v:"+key, i, 0).Err())
		require.Equal(t, fmt.Sprint(i), cc.Get(ctx, "v:"+key).Val())
	}
	require.Greater(t, len(slots), 250, "the keys should spread over many slots")

	hitAll := func(keys ...string) (any, error) {
		return cc.Do(ctx, "RL.HITALL", 2, "api", keys[0], "login", keys[1]).Result()
	}
	for i, want := range []int64{0, 0, 1} {
		reply, err := hitAll("{user:42}:api", "{user:42}:login")
		require.NoError(t, err, "RL.HITALL %d", i)
		require.Equal(t, want, reply.([]any)[0], "RL.HITALL %d: limited", i)
	}
	_, err := hitAll("user:1", "user:2")
	require.EqualError(t, err, "CROSSSLOT Keys in request don't hash to the same slot")
	require.EqualError(t, cc.Do(ctx, "MSET", "a", 1, "b", 2).Err(), "CROSSSLOT Keys in request don't hash to the same slot")
	require.NoError(t, cc.MSet(ctx, "{a}1", 1, "{a}2", 2).Err())

	info, err := cc.ClusterInfo(ctx).Result()
	require.NoError(t, err)
	require.Contains(t, info, "cluster_state:ok\r\n")
}

// TestClusterRedisCli: redis-cli -c runs limiter commands and strings.
func TestClusterRedisCli(t *testing.T) {
	t.Parallel()
	cli := need(t, "redis-cli")
	ts := startClusterServer(t)
	for _, st := range []struct {
		args []string
		want string
	}{
		{[]string{"SET", "user:7", "x"}, "OK"},
		{[]string{"GET", "user:7"}, "x"},
		{[]string{"CL.THROTTLE", "user:8", "1", "2", "60"}, "0\n2\n1\n-1\n30"},
		{[]string{"RL.HIT", "api", "user:9"}, "0\n5\n4\n-1\n12000"},
		{[]string{"CLUSTER", "KEYSLOT", "{user:42}:api"}, "15880"},
		{[]string{"MGET", "user:7", "user:8"}, "CROSSSLOT Keys in request don't hash to the same slot"},
	} {
		out, err := exec.Command(cli, append([]string{"-c", "-h", "127.0.0.1", "-p", ts.port()}, st.args...)...).CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Equal(t, st.want, strings.TrimSpace(string(out)), "%q", st.args)
	}
}

// TestClusterRedisPy runs redis-py's RedisCluster (clients/python/test_cluster.py).
func TestClusterRedisPy(t *testing.T) {
	t.Parallel()
	py := python(t)
	ts := startClusterServer(t)
	out := run(t, "clients/python", []string{"LIMITDB_PORT=" + ts.port(), "PYTHONDONTWRITEBYTECODE=1"}, py, "-m", "unittest", "-v", "test_cluster")
	if !strings.Contains(out, "\nOK") {
		t.Fatalf("redis-py cluster tests did not pass:\n%s", out)
	}
	t.Logf("%s", lastLines(out, 4))
}

// TestClusterIORedis runs ioredis's Cluster (clients/node/cluster.test.mjs).
func TestClusterIORedis(t *testing.T) {
	t.Parallel()
	dir := nodeDir(t)
	ts := startClusterServer(t)
	out := run(t, dir, []string{"LIMITDB_PORT=" + ts.port()}, "node", "--test", "--test-reporter=tap", "cluster.test.mjs")
	if !strings.Contains(out, "# fail 0") || strings.Contains(out, "# pass 0\n") {
		t.Fatalf("ioredis cluster tests did not all pass:\n%s", out)
	}
	t.Logf("%s", lastLines(out, 8))
}
