package tests

import (
	"strconv"
	"strings"
	"testing"
)

// The cluster clients' scripts of cluster_test.go, run again against six
// limitdb processes that redis-cli --cluster create made three primaries
// with a replica each: the scripts assert the topology the client
// discovered, that keys land on every primary, and reads on replicas.

// startClientsCluster starts six nodes, builds the cluster and defines
// the policies api (5 a minute) and login (2 a minute) on every primary.
// It returns the environment of the clients' scripts: the port of one
// node, found by the client like any seed address, and the number of
// primaries they must discover.
func startClientsCluster(t *testing.T) []string {
	t.Helper()
	nodes, cc := sixNodeCluster(t)
	setPolicies(t, cc)
	return []string{"LIMITDB_PORT=" + strconv.Itoa(nodes[len(nodes)-1].port), "LIMITDB_PRIMARIES=3"}
}

// TestClusterNodesRedisPy runs redis-py's RedisCluster
// (clients/python/test_cluster.py) against three primaries.
func TestClusterNodesRedisPy(t *testing.T) {
	t.Parallel()
	py := python(t)
	env := startClientsCluster(t)
	out := run(t, "clients/python", append(env, "PYTHONDONTWRITEBYTECODE=1"), py, "-m", "unittest", "-v", "test_cluster")
	if !strings.Contains(out, "\nOK") {
		t.Fatalf("redis-py cluster tests did not pass:\n%s", out)
	}
	t.Logf("%s", lastLines(out, 4))
}

// TestClusterNodesIORedis runs ioredis's Cluster
// (clients/node/cluster.test.mjs) against three primaries.
func TestClusterNodesIORedis(t *testing.T) {
	t.Parallel()
	dir := nodeDir(t)
	env := startClientsCluster(t)
	out := run(t, dir, env, "node", "--test", "--test-reporter=tap", "cluster.test.mjs")
	if !strings.Contains(out, "# fail 0") || strings.Contains(out, "# pass 0\n") {
		t.Fatalf("ioredis cluster tests did not all pass:\n%s", out)
	}
	t.Logf("%s", lastLines(out, 8))
}
