package tests

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestClusterAdminMatchesRedis sends the CLUSTER subcommands that change a
// cluster, right and wrong, to one cluster-enabled redis-server and to one
// limitdb node, and requires the same replies. MYID stands for the node's
// own id in the steps, OTHER for an id no node has.
func TestClusterAdminMatchesRedis(t *testing.T) {
	skipUnderRace(t)
	t.Parallel()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed")
	}
	ports := freePorts(t, 3)
	dir := t.TempDir()
	rcmd := exec.Command(bin, "--port", strconv.Itoa(ports[0]), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
		"--cluster-config-file", dir+"/nodes.conf", "--save", "", "--appendonly", "no", "--dir", dir)
	require.NoError(t, rcmd.Start())
	t.Cleanup(func() { rcmd.Process.Kill(); rcmd.Wait() })
	rc := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", ports[0]), Protocol: 2})
	t.Cleanup(func() { rc.Close() })
	require.Eventually(t, func() bool { return rc.Ping(ctx).Err() == nil }, 30*time.Second, 20*time.Millisecond)

	n := &clusterNode{dir: t.TempDir(), port: ports[1], bus: ports[2]}
	n.start(t)
	lc := n.client(t)

	const other = "0123456789012345678901234567890123456789"
	steps := [][]string{
		{"CLUSTER", "ADDSLOTS", "0", "1", "2"},
		{"CLUSTER", "ADDSLOTS", "2"},
		{"CLUSTER", "ADDSLOTS", "16384"},
		{"CLUSTER", "ADDSLOTS", "-1"},
		{"CLUSTER", "ADDSLOTS", "x"},
		{"CLUSTER", "ADDSLOTS", "5", "5"},
		{"CLUSTER", "ADDSLOTSRANGE", "10", "5"},
		{"CLUSTER", "ADDSLOTSRANGE", "10"},
		{"CLUSTER", "ADDSLOTSRANGE", "10", "20"},
		{"CLUSTER", "DELSLOTS", "3"},
		{"CLUSTER", "DELSLOTS", "0"},
		{"CLUSTER", "DELSLOTSRANGE", "10", "20"},
		{"CLUSTER", "SETSLOT", "1", "MIGRATING", other},
		{"CLUSTER", "SETSLOT", "100", "MIGRATING", "MYID"},
		{"CLUSTER", "SETSLOT", "1", "IMPORTING", "MYID"},
		{"CLUSTER", "SETSLOT", "1", "STABLE"},
		{"CLUSTER", "SETSLOT", "1", "FOO", "MYID"},
		{"CLUSTER", "SETSLOT", "16384", "STABLE"},
		{"CLUSTER", "SETSLOT", "1", "NODE", other},
		{"CLUSTER", "SETSLOT", "1", "NODE", "MYID"},
		{"CLUSTER", "REPLICATE", "MYID"},
		{"CLUSTER", "REPLICATE", other},
		{"CLUSTER", "FAILOVER"},
		{"CLUSTER", "FAILOVER", "FOO"},
		{"CLUSTER", "FORGET", "MYID"},
		{"CLUSTER", "FORGET", other},
		{"CLUSTER", "COUNT-FAILURE-REPORTS", "MYID"},
		{"CLUSTER", "COUNT-FAILURE-REPORTS", other},
		{"CLUSTER", "SET-CONFIG-EPOCH", "-1"},
		{"CLUSTER", "SET-CONFIG-EPOCH", "5"},
		{"CLUSTER", "SET-CONFIG-EPOCH", "6"},
		{"CLUSTER", "BUMPEPOCH"},
		{"CLUSTER", "MEET", "1.2.3", "5"},
		{"CLUSTER", "MEET", "127.0.0.1", "x"},
		{"CLUSTER", "INFO"},
		{"CLUSTER", "SAVECONFIG"},
		{"REPLICAOF", "127.0.0.1", "1"},
		{"CLUSTER", "RESET", "FOO"},
		{"CLUSTER", "RESET", "SOFT"},
		{"CLUSTER", "INFO"},
	}
	ask := func(c *redis.Client, step []string) string {
		id, err := c.ClusterMyID(ctx).Result()
		require.NoError(t, err)
		args := make([]any, len(step))
		for i, a := range step {
			args[i] = strings.ReplaceAll(a, "MYID", id)
		}
		v, err := c.Do(context.Background(), args...).Result()
		out := fmt.Sprint(v)
		if err != nil {
			out = "error: " + err.Error()
		}
		out = strings.ReplaceAll(out, id, "MYID")
		// The lines that say what the steps did. Not cluster_size: Redis
		// recounts it only once its state may change, at the earliest 2 s
		// after start-up, so its answer depends on when the test runs.
		if step[1] == "INFO" {
			var keep []string
			for _, l := range strings.Split(out, "\r\n") {
				if strings.HasPrefix(l, "cluster_slots_assigned:") || strings.HasPrefix(l, "cluster_my_epoch:") ||
					strings.HasPrefix(l, "cluster_known_nodes:") {
					keep = append(keep, l)
				}
			}
			out = strings.Join(keep, " ")
		}
		return out
	}
	for _, step := range steps {
		require.Equal(t, ask(rc, step), ask(lc, step), "%q", step)
	}
}
