package tests

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// A cluster of six, built with redis-cli --cluster create, of limitdb
// nodes or of redis-server nodes: the same test runs against both and
// requires what Redis shows.

// anyClusterNode is a node of either kind, started and killable.
type anyClusterNode struct {
	addr string
	kill func()
}

// startRedisClusterNodes starts n cluster-enabled redis-servers with the
// node timeout the limitdb clusters use.
func startRedisClusterNodes(t *testing.T, n int) []*anyClusterNode {
	t.Helper()
	bin := need(t, "redis-server")
	ports := freePorts(t, 2*n)
	out := make([]*anyClusterNode, n)
	for i := range out {
		dir := t.TempDir()
		cmd := exec.Command(bin, "--port", strconv.Itoa(ports[i]), "--cluster-port", strconv.Itoa(ports[n+i]),
			"--bind", "127.0.0.1", "--cluster-enabled", "yes", "--cluster-node-timeout", clusterNodeTimeout,
			"--cluster-config-file", dir+"/nodes.conf", "--save", "", "--appendonly", "no", "--dir", dir)
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		addr := "127.0.0.1:" + strconv.Itoa(ports[i])
		c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		eventually(t, 30*time.Second, func() bool { return c.Ping(ctx).Err() == nil }, func() string { return "redis-server at " + addr })
		c.Close()
		out[i] = &anyClusterNode{addr: addr, kill: func() { cmd.Process.Signal(syscall.SIGKILL) }}
	}
	return out
}

// sixNodeClusterOf builds three primaries with a replica each, of limitdb
// ("limitdb") or redis-server ("redis"), and waits until redis-cli
// --cluster check finds it sound.
func sixNodeClusterOf(t *testing.T, kind string) []*anyClusterNode {
	t.Helper()
	need(t, "redis-cli")
	var nodes []*anyClusterNode
	if kind == "redis" {
		nodes = startRedisClusterNodes(t, 6)
	} else {
		for _, n := range startClusterNodes(t, 6) {
			n := n
			nodes = append(nodes, &anyClusterNode{addr: n.addr(), kill: func() { n.p.cmd.Process.Signal(syscall.SIGKILL) }})
		}
	}
	args := []string{"create"}
	for _, n := range nodes {
		args = append(args, n.addr)
	}
	out, err := redisCliCluster(t, append(args, "--cluster-replicas", "1", "--cluster-yes")...)
	require.NoError(t, err, "%s", out)
	eventually(t, 60*time.Second, func() bool {
		out, err = redisCliCluster(t, "check", nodes[0].addr)
		return err == nil && !strings.Contains(out, "[WARNING]") && !strings.Contains(out, "[ERR]")
	}, func() string { return "redis-cli --cluster check:\n" + out })
	return nodes
}

// TestClusterViewAfterFailoverMatchesRedis: after kill -9 of a primary
// and the promotion of its replica, CLUSTER NODES, SLOTS and SHARDS read
// on the survivors show what Redis Cluster's show: the dead node a
// primary flagged fail, with no slots, disconnected; left out of CLUSTER
// SLOTS; a shard of its own, without slots, its health fail; its slots
// served by the promoted replica alone.
func TestClusterViewAfterFailoverMatchesRedis(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"redis", "limitdb"} {
		t.Run(kind, func(t *testing.T) {
			nodes := sixNodeClusterOf(t, kind)
			clients := make([]*redis.Client, len(nodes))
			for i, n := range nodes {
				clients[i] = redis.NewClient(&redis.Options{Addr: n.addr, MaxRetries: -1})
				t.Cleanup(func() { clients[i].Close() })
			}
			const slot = 6000 // the second primary's, as redis-cli create splits the slots
			victim := -1
			var victimID string
			for i, c := range clients {
				id := c.ClusterMyID(ctx).Val()
				if owner := slotOwner(t, c, slot); owner == nodes[i].addr {
					victim, victimID = i, id
				}
			}
			require.NotEqual(t, -1, victim)
			// The victim's replica is linked and has acknowledged its
			// stream, so Redis's replica is fit to be promoted.
			eventually(t, 30*time.Second, func() bool { return clients[victim].Do(ctx, "WAIT", 1, 1000).Val() == int64(1) },
				func() string { return nodes[victim].addr + "'s replica to acknowledge its stream" })
			survivor := (victim + 1) % len(nodes)
			nodes[victim].kill()
			sc := clients[survivor]
			var promoted string
			eventually(t, 60*time.Second, func() bool {
				promoted = slotOwner(t, sc, slot)
				return promoted != "" && promoted != nodes[victim].addr
			}, func() string { return "a replica to take the killed primary's slots" })

			// Every survivor shows the failover as Redis does (gossip may
			// take a moment to reach each Redis node).
			for i, c := range clients {
				if i == victim {
					continue
				}
				var why string
				eventually(t, 30*time.Second, func() bool {
					why = failoverViewMismatch(c, victimID, promoted, slot)
					return why == ""
				}, func() string { return fmt.Sprintf("%s on %s: %s", kind, nodes[i].addr, why) })
			}
		})
	}
}

// failoverViewMismatch is "" when c's CLUSTER NODES, SLOTS and SHARDS show
// dead as a failed primary with no slots, left out of SLOTS, alone in a
// shard without slots, and slot served by promoted alone; else what
// differs.
func failoverViewMismatch(c *redis.Client, dead, promoted string, slot int) string {
	nodes, err := c.ClusterNodes(ctx).Result()
	if err != nil {
		return err.Error()
	}
	found := false
	for _, line := range strings.Split(strings.TrimSpace(nodes), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || f[0] != dead {
			continue
		}
		found = true
		if f[2] != "master,fail" || f[3] != "-" || f[7] != "disconnected" || len(f) != 8 {
			return "CLUSTER NODES' line of the dead node: " + line
		}
	}
	if !found {
		return "CLUSTER NODES does not list the dead node:\n" + nodes
	}
	slots, err := c.ClusterSlots(ctx).Result()
	if err != nil {
		return err.Error()
	}
	for _, s := range slots {
		for _, n := range s.Nodes {
			if n.ID == dead {
				return fmt.Sprintf("CLUSTER SLOTS lists the dead node: %+v", s)
			}
		}
		if s.Start <= slot && slot <= s.End && (len(s.Nodes) != 1 || s.Nodes[0].Addr != promoted) {
			return fmt.Sprintf("CLUSTER SLOTS' range of slot %d: %+v, want %s alone", slot, s, promoted)
		}
	}
	shards, err := c.ClusterShards(ctx).Result()
	if err != nil {
		return err.Error()
	}
	found = false
	for _, sh := range shards {
		for _, n := range sh.Nodes {
			if n.ID != dead {
				continue
			}
			found = true
			if len(sh.Slots) != 0 || len(sh.Nodes) != 1 || n.Role != "master" || n.Health != "fail" {
				return fmt.Sprintf("CLUSTER SHARDS' shard of the dead node: %+v", sh)
			}
		}
	}
	if !found {
		return "CLUSTER SHARDS does not list the dead node"
	}
	return ""
}
