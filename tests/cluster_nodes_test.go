package tests

import (
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/limitdb/limitdb/cluster"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// A cluster of limitdb processes built and checked with the real
// redis-cli --cluster, used through go-redis's ClusterClient and
// redis-cli -c. The node timeout is short so that failovers take seconds,
// and long enough that a busy machine (tests/loaded.sh), whose processes
// can wait hundreds of milliseconds for a core, causes no election: raft's
// heartbeat timeout and lease are half of it (cluster.TimingsFor).

const clusterNodeTimeout = "3000" // ms

// clusterNode is one limitdb process of a cluster, on fixed ports so that
// it can be restarted at the address the others know.
type clusterNode struct {
	p         *proc
	dir       string
	port, bus int
}

func (n *clusterNode) addr() string { return "127.0.0.1:" + strconv.Itoa(n.port) }

func (n *clusterNode) start(t *testing.T, extra ...string) {
	t.Helper()
	n.p = mustStart(t, n.dir, n.args(extra...)...)
}

// args are the node's flags, extra ones after.
func (n *clusterNode) args(extra ...string) []string {
	return append([]string{"--port", strconv.Itoa(n.port), "--cluster-port", strconv.Itoa(n.bus),
		"--cluster-enabled", "yes", "--cluster-node-timeout", clusterNodeTimeout, "--save", "0"}, extra...)
}

func (n *clusterNode) client(t *testing.T) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: n.addr(), MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// freePorts returns n loopback ports nothing listens on now.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var out []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out
}

// startClusterNodes starts n cluster-enabled nodes, each a cluster of one.
func startClusterNodes(t *testing.T, n int) []*clusterNode {
	t.Helper()
	ports := freePorts(t, 2*n)
	nodes := make([]*clusterNode, n)
	for i := range nodes {
		nodes[i] = &clusterNode{dir: t.TempDir(), port: ports[i], bus: ports[n+i]}
		nodes[i].startFirst(t)
	}
	return nodes
}

// startFirst starts a node for the first time. A port found free a moment
// ago can be taken since, by another test's server or by a connection's
// own ephemeral port: the node then gets two other ports (a restart, by
// contrast, must keep its ports, which the cluster knows).
func (n *clusterNode) startFirst(t *testing.T) {
	t.Helper()
	for try := 0; ; try++ {
		p, err := startProc(t, n.dir, n.args()...)
		if err == nil {
			// The bus port is bound after the node logs that it listens:
			// it serves, and answers, only once that worked.
			c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
			err = c.Ping(ctx).Err()
			c.Close()
			if err == nil {
				n.p = p
				return
			}
			select {
			case e := <-p.done: // it exited: its log says why
				p.done <- e
			case <-time.After(5 * time.Second):
			}
			err = fmt.Errorf("PING: %v\n%s", err, p.log)
		}
		if try == 4 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatal(err)
		}
		ports := freePorts(t, 2)
		n.port, n.bus = ports[0], ports[1]
	}
}

// redisCliCluster runs redis-cli --cluster and returns its output without
// colour codes.
func redisCliCluster(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cli := need(t, "redis-cli")
	out, err := exec.Command(cli, append([]string{"--cluster"}, args...)...).CombinedOutput()
	return regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(string(out), ""), err
}

// createCluster builds a cluster of the nodes with redis-cli --cluster
// create, one replica per primary.
func createCluster(t *testing.T, nodes []*clusterNode) {
	t.Helper()
	args := []string{"create"}
	for _, n := range nodes {
		args = append(args, n.addr())
	}
	out, err := redisCliCluster(t, append(args, "--cluster-replicas", "1", "--cluster-yes")...)
	require.NoError(t, err, "%s", out)
	require.Contains(t, out, "[OK] All 16384 slots covered.", out)
	requireClusterCheck(t, nodes[0])
}

// requireClusterCheck asserts that redis-cli --cluster check finds every
// node agreeing, no open slot and every slot covered.
func requireClusterCheck(t *testing.T, n *clusterNode) {
	t.Helper()
	var out string
	eventually(t, 60*time.Second, func() bool {
		var err error
		out, err = redisCliCluster(t, "check", n.addr())
		return err == nil && strings.Contains(out, "[OK] All nodes agree about slots configuration.") &&
			strings.Contains(out, "[OK] All 16384 slots covered.") && !strings.Contains(out, "[WARNING]") && !strings.Contains(out, "[ERR]")
	}, func() string { return "redis-cli --cluster check:\n" + out })
}

// clusterClient is a go-redis ClusterClient that keeps retrying through a
// failover.
func clusterClient(t *testing.T, n *clusterNode) *redis.ClusterClient {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{n.addr()}, MaxRedirects: 16, MaxRetries: 20,
		MinRetryBackoff: 20 * time.Millisecond, MaxRetryBackoff: 200 * time.Millisecond})
	t.Cleanup(func() { cc.Close() })
	return cc
}

// setPolicies defines the policies on every primary: the policy table is
// each node's own, and replicas receive it in the replication stream.
func setPolicies(t *testing.T, cc *redis.ClusterClient) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		for _, p := range [][]any{{"api", "gcra", 5, "1m"}, {"login", "gcra", 2, "1m"}} {
			if err := c.Do(ctx, append([]any{"RL.POLICY", "SET"}, p...)...).Err(); err != nil {
				return err
			}
		}
		return nil
	}))
}

// slotOwner is the address of the primary serving slot, from the CLUSTER
// SLOTS of the node c talks to.
func slotOwner(t *testing.T, c redis.UniversalClient, slot int) string {
	t.Helper()
	slots, err := c.ClusterSlots(context.Background()).Result()
	if err != nil {
		return ""
	}
	for _, s := range slots {
		if s.Start <= slot && slot <= s.End {
			return s.Nodes[0].Addr
		}
	}
	return ""
}

// sixNodeCluster builds three primaries with a replica each with
// redis-cli --cluster create, and a ClusterClient for it. A failed test
// shows the end of each node's log.
func sixNodeCluster(t *testing.T) ([]*clusterNode, *redis.ClusterClient) {
	t.Helper()
	need(t, "redis-cli")
	nodes := startClusterNodes(t, 6)
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range nodes {
				t.Logf("node %s:\n%s", n.addr(), lastLines(n.p.log.String(), 30))
			}
		}
	})
	createCluster(t, nodes)
	return nodes, clusterClient(t, nodes[0])
}

// requireReplicaOf waits for the node c talks to to replicate addr, as
// ROLE says.
func requireReplicaOf(t *testing.T, c *redis.Client, addr string) {
	t.Helper()
	eventually(t, 60*time.Second, func() bool {
		r, err := c.Do(ctx, "ROLE").Slice()
		return err == nil && len(r) > 2 && r[0] == "slave" && fmt.Sprintf("127.0.0.1:%v", r[2]) == addr
	}, func() string { r, err := c.Do(ctx, "ROLE").Result(); return fmt.Sprintf("ROLE %v %v", r, err) })
}

// TestClusterBuiltWithRedisCli: six nodes become three primaries with a
// replica each through redis-cli --cluster create; go-redis and redis-cli
// -c run limiter commands on keys across every slot, RL.HITALL on
// hash-tagged keys, and reads on replicas after READONLY.
func TestClusterBuiltWithRedisCli(t *testing.T) {
	skipUnderRace(t)
	t.Parallel()
	nodes, cc := sixNodeCluster(t)
	ctx := context.Background()
	setPolicies(t, cc)

	served := map[string]int{}
	for i := 0; i < 600; i++ {
		key := fmt.Sprintf("user:%d", i)
		require.Equal(t, []int64{0, 2, 1, -1, 30}, ints(t, cc.Do(ctx, "CL.THROTTLE", key, 1, 2, 60)), key)
		require.Equal(t, []int64{0, 5, 4, -1, 12000}, ints(t, cc.Do(ctx, "RL.HIT", "api", key)), key)
		served[slotOwner(t, cc, cluster.Slot([]byte(key)))]++
	}
	require.Len(t, served, 3, "the keys should be served by all three primaries: %v", served)

	for i, want := range []int64{0, 0, 1} {
		reply, err := cc.Do(ctx, "RL.HITALL", 2, "api", "{user:42}:api", "login", "{user:42}:login").Result()
		require.NoError(t, err, "RL.HITALL %d", i)
		require.Equal(t, want, reply.([]any)[0], "RL.HITALL %d: limited", i)
	}
	_, err := cc.Do(ctx, "RL.HITALL", 2, "api", "user:1", "api", "user:2").Result()
	require.EqualError(t, err, "CROSSSLOT Keys in request don't hash to the same slot")

	// A node that does not serve a key's slot answers MOVED to the one that does.
	key := "user:7"
	owner := slotOwner(t, cc, cluster.Slot([]byte(key)))
	for _, n := range nodes {
		if n.addr() == owner {
			continue
		}
		err := n.client(t).Do(ctx, "CL.THROTTLE", key, 1, 2, 60).Err()
		require.EqualError(t, err, fmt.Sprintf("MOVED %d %s", cluster.Slot([]byte(key)), owner))
		stats, err := n.client(t).Info(ctx, "commandstats").Result()
		require.NoError(t, err)
		require.Regexp(t, `cmdstat_cl\.throttle:calls=\d+,[^\r]*rejected_calls=1,`, stats, "Redis counts a redirected command as rejected")
		break
	}

	// redis-cli -c follows MOVED from any node.
	cli := need(t, "redis-cli")
	for _, n := range nodes {
		out, err := exec.Command(cli, "-c", "-p", strconv.Itoa(n.port), "CL.THROTTLE", "cli:"+strconv.Itoa(n.port), "1", "2", "60").CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Equal(t, "0\n2\n1\n-1\n30", strings.TrimSpace(string(out)))
	}

	// After READONLY a replica serves reads and peeks of its primary's slots.
	require.NoError(t, cc.Set(ctx, "ro:key", "v", 0).Err())
	roOwner := slotOwner(t, cc, cluster.Slot([]byte("ro:key")))
	slots, err := cc.ClusterSlots(ctx).Result()
	require.NoError(t, err)
	var replica string
	for _, s := range slots {
		if s.Nodes[0].Addr == roOwner && len(s.Nodes) > 1 {
			replica = s.Nodes[1].Addr
		}
	}
	require.NotEmpty(t, replica)
	rc := redis.NewClient(&redis.Options{Addr: replica, MaxRetries: -1, OnConnect: func(ctx context.Context, c *redis.Conn) error {
		return c.ReadOnly(ctx).Err()
	}})
	defer rc.Close()
	eventually(t, 30*time.Second, func() bool { return rc.Get(ctx, "ro:key").Val() == "v" }, func() string { return "replica read" })
	require.ErrorContains(t, rc.Set(ctx, "ro:key", "w", 0).Err(), "MOVED")

	info, err := cc.ClusterInfo(ctx).Result()
	require.NoError(t, err)
	require.Contains(t, info, "cluster_state:ok\r\n")
	require.Contains(t, info, "cluster_known_nodes:6\r\n")
	require.Contains(t, info, "cluster_size:3\r\n")
}

// TestClusterFailsOverAPrimary: kill -9 of a primary promotes its replica
// without an operator; the clients follow MOVED to it and every slot is
// served again; the old primary, restarted, comes back as a replica of
// the new one, and redis-cli --cluster check is clean.
func TestClusterFailsOverAPrimary(t *testing.T) {
	skipUnderRace(t)
	t.Parallel()
	nodes, cc := sixNodeCluster(t)
	ctx := context.Background()

	// 3 a day: the state does not drift back during the test.
	keys := make([]string, 300)
	for i := range keys {
		keys[i] = fmt.Sprintf("fo:%d", i)
		require.Equal(t, []int64{0, 3, 2, -1, 28800}, ints(t, cc.Do(ctx, "CL.THROTTLE", keys[i], 2, 3, 86400)))
	}
	victimAddr := slotOwner(t, cc, cluster.Slot([]byte(keys[0])))
	var victim *clusterNode
	for _, n := range nodes {
		if n.addr() == victimAddr {
			victim = n
		}
	}
	require.NotNil(t, victim)
	id, err := victim.client(t).ClusterMyID(ctx).Result()
	require.NoError(t, err)
	// The replicas have every write: WAIT on the primary.
	acked, err := victim.client(t).Do(ctx, "WAIT", 1, 30000).Int()
	require.NoError(t, err)
	require.Equal(t, 1, acked, "the primary's replica acknowledges its writes")

	require.NoError(t, victim.p.cmd.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	var promoted string
	var survivor *redis.Client
	for _, n := range nodes {
		if n != victim {
			survivor = n.client(t)
			break
		}
	}
	eventually(t, 60*time.Second, func() bool {
		promoted = slotOwner(t, survivor, cluster.Slot([]byte(keys[0])))
		return promoted != "" && promoted != victimAddr
	}, func() string { return "a replica to take the killed primary's slots" })
	t.Logf("replica %s promoted %.1fs after kill -9", promoted, time.Since(killed).Seconds())

	// The client may still route a key to the dead node until it reloads
	// its slot map, as against Redis Cluster: a peek (quantity 0 writes
	// nothing) per key until each reaches a live owner. A dead node answers
	// no MOVED, and go-redis reloads its map on its own only on MOVED or
	// once the map is a minute old; a reload that raced the gossip can keep
	// the old owner. After a failed peek the test reloads it, as clients
	// that refresh on connection errors do.
	for _, k := range keys {
		var last error
		eventually(t, 30*time.Second, func() bool {
			if last = cc.Do(ctx, "CL.THROTTLE", k, 2, 3, 86400, 0).Err(); last != nil {
				cc.ReloadState(ctx)
			}
			return last == nil
		}, func() string {
			return fmt.Sprintf("the client to reach %s's new owner (last: %v; the survivor's view: %q)", k, last,
				survivor.ClusterNodes(ctx).Val())
		})
	}
	// Every key answers from its state: the second hit of each.
	for _, k := range keys {
		require.Equal(t, []int64{0, 3, 1, -1}, ints(t, cc.Do(ctx, "CL.THROTTLE", k, 2, 3, 86400))[:4], k)
	}
	nodesOut, err := cc.ClusterNodes(ctx).Result()
	require.NoError(t, err)
	require.Regexp(t, regexp.MustCompile(id+` \S+ master,fail - `), nodesOut, "as in Redis, a failed primary stays a primary, without slots, until it is back")

	// The old primary comes back as a replica of the promoted one.
	victim.start(t)
	requireReplicaOf(t, victim.client(t), promoted)
	requireClusterCheck(t, nodes[0])
}

// TestClusterReshardUnderLoad: redis-cli --cluster reshard moves 1000
// slots between primaries while clients keep hitting CL.THROTTLE limits on
// keys in those slots; every key admits exactly its limit, once, across
// the move.
func TestClusterReshardUnderLoad(t *testing.T) {
	skipUnderRace(t)
	t.Parallel()
	nodes, cc := sixNodeCluster(t)
	ctx := context.Background()

	from, to := slotOwnerID(t, cc, 0), slotOwnerID(t, cc, 16383)
	// Keys in the slots the reshard takes from the owner of slot 0.
	var keys []string
	for i := 0; len(keys) < 200; i++ {
		k := fmt.Sprintf("rs:%d", i)
		if cluster.Slot([]byte(k)) < 1000 {
			keys = append(keys, k)
		}
	}
	const limit, hits = 50, 120 // CL.THROTTLE k 49 50 86400: 50 a day, no refill during the test
	admitted := make([]int, len(keys))
	var wg sync.WaitGroup
	errs := make(chan error, len(keys))
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for h := 0; h < hits; h++ {
				for i := w; i < len(keys); i += 4 {
					r, err := cc.Do(ctx, "CL.THROTTLE", keys[i], limit-1, limit, 86400).Int64Slice()
					if err != nil {
						errs <- fmt.Errorf("%s: %w", keys[i], err)
						return
					}
					if r[0] == 0 {
						admitted[i]++
					}
				}
			}
		}(w)
	}
	out, err := redisCliCluster(t, "reshard", nodes[0].addr(), "--cluster-from", from, "--cluster-to", to,
		"--cluster-slots", "1000", "--cluster-yes")
	require.NoError(t, err, "%s", out)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i, k := range keys {
		require.Equal(t, limit, admitted[i], "%s admitted %d of %d hits, want exactly %d", k, admitted[i], hits, limit)
	}
	// SETSLOT NODE answers once every member shows the change: check
	// passes at once, and every member names the new owner.
	requireClusterCheckNow(t, nodes[0])
	require.Equal(t, to, slotOwnerID(t, cc, 999))
}

// TestClusterReshardThenCheckAtOnce: redis-cli --cluster check run the
// moment reshard returns finds the cluster clean, every time: each
// SETSLOT NODE answers only once every reachable member shows the move
// and has closed its open slot.
func TestClusterReshardThenCheckAtOnce(t *testing.T) {
	t.Parallel()
	nodes, cc := sixNodeCluster(t)
	a, b := slotOwnerID(t, cc, 0), slotOwnerID(t, cc, 16383)
	for round := 0; round < 4; round++ {
		from, to := a, b
		if round%2 == 1 {
			from, to = b, a
		}
		out, err := redisCliCluster(t, "reshard", nodes[round%len(nodes)].addr(), "--cluster-from", from, "--cluster-to", to,
			"--cluster-slots", "100", "--cluster-yes")
		require.NoError(t, err, "%s", out)
		for _, n := range nodes { // from every member, replicas included
			requireClusterCheckNow(t, n)
		}
	}
}

// requireClusterCheckNow asserts that redis-cli --cluster check, run once,
// finds every node agreeing, no open slot and every slot covered.
func requireClusterCheckNow(t *testing.T, n *clusterNode) {
	t.Helper()
	out, err := redisCliCluster(t, "check", n.addr())
	require.NoError(t, err, "redis-cli --cluster check:\n%s", out)
	require.Contains(t, out, "[OK] All nodes agree about slots configuration.", out)
	require.Contains(t, out, "[OK] All 16384 slots covered.", out)
	require.NotContains(t, out, "[WARNING]", out)
	require.NotContains(t, out, "[ERR]", out)
}

func slotOwnerID(t *testing.T, cc *redis.ClusterClient, slot int) string {
	t.Helper()
	slots, err := cc.ClusterSlots(context.Background()).Result()
	require.NoError(t, err)
	for _, s := range slots {
		if s.Start <= slot && slot <= s.End {
			return s.Nodes[0].ID
		}
	}
	t.Fatalf("slot %d has no owner", slot)
	return ""
}

// busCut is a TCP proxy in front of a node's cluster bus that can cut the
// other members off from it: a network partition that leaves the node
// itself running and serving its clients.
type busCut struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  []net.Conn
}

func newBusCut(t *testing.T, port, target int) *busCut {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	require.NoError(t, err)
	b := &busCut{ln: ln, target: "127.0.0.1:" + strconv.Itoa(target)}
	t.Cleanup(func() { ln.Close(); b.setCut(true) })
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			if b.cut {
				b.mu.Unlock()
				in.Close()
				continue
			}
			out, err := net.Dial("tcp", b.target)
			if err != nil {
				b.mu.Unlock()
				in.Close()
				continue
			}
			b.conns = append(b.conns, in, out)
			b.mu.Unlock()
			go func() { io.Copy(out, in); out.Close() }()
			go func() { io.Copy(in, out); in.Close() }()
		}
	}()
	return b
}

// setCut cuts the node off (closing what is open) or lets it be reached.
func (b *busCut) setCut(cut bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cut = cut
	if cut {
		for _, c := range b.conns {
			c.Close()
		}
		b.conns = nil
	}
}

// TestClusterPartitionedPrimary: a primary the other members cannot reach
// (its bus behind a proxy that is cut) stops serving its slots within
// about the node timeout (CLUSTERDOWN), while the majority promotes its
// replica and serves them; when the partition heals, the old primary
// comes back as a replica of the new one.
func TestClusterPartitionedPrimary(t *testing.T) {
	skipUnderRace(t)
	t.Parallel()
	need(t, "redis-cli")
	ports := freePorts(t, 13)
	nodes := make([]*clusterNode, 6)
	for i := range nodes {
		nodes[i] = &clusterNode{dir: t.TempDir(), port: ports[i], bus: ports[6+i]}
	}
	// nodes[1] will be a primary (redis-cli makes the first three so) whose
	// bus the others reach only through the proxy.
	isolated := nodes[1]
	cut := newBusCut(t, ports[12], isolated.bus)
	for _, n := range nodes {
		if n == isolated {
			n.start(t, "--cluster-announce-bus-port", strconv.Itoa(ports[12]))
			continue
		}
		n.start(t)
	}
	createCluster(t, nodes)
	ctx := context.Background()
	ic, survivor := isolated.client(t), nodes[0].client(t)
	id, err := ic.ClusterMyID(ctx).Result()
	require.NoError(t, err)
	var key string
	for i := 0; key == ""; i++ {
		if k := fmt.Sprintf("part:%d", i); slotOwnerID(t, clusterClient(t, nodes[0]), cluster.Slot([]byte(k))) == id {
			key = k
		}
	}
	require.NoError(t, ic.Set(ctx, key, "before", 0).Err())

	cut.setCut(true)
	cutAt := time.Now()
	eventually(t, 30*time.Second, func() bool {
		return ic.Set(ctx, key, "minority", 0).Err() != nil
	}, func() string { return "the cut-off primary to refuse writes" })
	require.EqualError(t, ic.Set(ctx, key, "minority", 0).Err(), "CLUSTERDOWN The cluster is down")
	t.Logf("the cut-off primary refuses writes %.1fs after the cut", time.Since(cutAt).Seconds())

	var promoted string
	eventually(t, 60*time.Second, func() bool {
		promoted = slotOwner(t, survivor, cluster.Slot([]byte(key)))
		return promoted != "" && promoted != isolated.addr()
	}, func() string { return "the majority to promote the replica" })
	cc := clusterClient(t, nodes[0])
	require.NoError(t, cc.Set(ctx, key, "majority", 0).Err())
	require.Equal(t, "majority", cc.Get(ctx, key).Val())

	cut.setCut(false)
	requireReplicaOf(t, ic, promoted)
	requireClusterCheck(t, nodes[0])
	require.Equal(t, "majority", cc.Get(ctx, key).Val())
}

// TestClusterAddRebalanceDelNode: redis-cli --cluster add-node brings a
// fourth primary in, reshard gives it slots (and the keys in them, with
// their state), rebalance takes them back, del-node removes it, fix
// closes a slot left open, and check and info read the cluster after each
// step.
func TestClusterAddRebalanceDelNode(t *testing.T) {
	t.Parallel()
	need(t, "redis-cli")
	nodes := startClusterNodes(t, 4)
	args := []string{"create"}
	for _, n := range nodes[:3] {
		args = append(args, n.addr())
	}
	out, err := redisCliCluster(t, append(args, "--cluster-replicas", "0", "--cluster-yes")...)
	require.NoError(t, err, "%s", out)
	requireClusterCheck(t, nodes[0])
	ctx := context.Background()
	cc := clusterClient(t, nodes[0])

	// Limits of 3 a day: each hit below takes one, wherever the key lives.
	keys := make([]string, 300)
	for i := range keys {
		keys[i] = fmt.Sprintf("rb:%d", i)
		require.Equal(t, []int64{0, 3, 2, -1}, ints(t, cc.Do(ctx, "CL.THROTTLE", keys[i], 2, 3, 86400))[:4])
	}
	hit := func(remaining int64) {
		t.Helper()
		cc.ReloadState(ctx)
		for _, k := range keys {
			require.Equal(t, []int64{0, 3, remaining, -1}, ints(t, cc.Do(ctx, "CL.THROTTLE", k, 2, 3, 86400))[:4], k)
		}
	}

	out, err = redisCliCluster(t, "add-node", nodes[3].addr(), nodes[0].addr())
	require.NoError(t, err, "%s", out)
	requireClusterCheck(t, nodes[0])
	newID, err := nodes[3].client(t).ClusterMyID(ctx).Result()
	require.NoError(t, err)

	// 300 slots from every primary (a rebalance onto the empty node would
	// move 4096, a minute of CI at the ~10 ms each a slot's consensus
	// change costs here).
	out, err = redisCliCluster(t, "reshard", nodes[0].addr(), "--cluster-from", "all", "--cluster-to", newID,
		"--cluster-slots", "300", "--cluster-yes")
	require.NoError(t, err, "%s", out)
	requireClusterCheck(t, nodes[0])
	info, err := nodes[3].client(t).ClusterInfo(ctx).Result()
	require.NoError(t, err)
	require.Contains(t, info, "cluster_size:4\r\n")
	moved, err := nodes[3].client(t).DBSize(ctx).Result()
	require.NoError(t, err)
	require.Greater(t, moved, int64(0), "the new primary should hold some of the keys")
	hit(1)

	out, err = redisCliCluster(t, "rebalance", nodes[0].addr(), "--cluster-weight", newID+"=0")
	require.NoError(t, err, "%s", out)
	requireClusterCheck(t, nodes[0])
	hit(0)

	out, err = redisCliCluster(t, "del-node", nodes[0].addr(), newID)
	require.NoError(t, err, "%s", out)
	requireClusterCheck(t, nodes[0])
	info, err = nodes[0].client(t).ClusterInfo(ctx).Result()
	require.NoError(t, err)
	require.Contains(t, info, "cluster_known_nodes:3\r\n")
	eventually(t, 30*time.Second, func() bool {
		info, err := nodes[3].client(t).ClusterInfo(ctx).Result()
		return err == nil && strings.Contains(info, "cluster_known_nodes:1\r\n")
	}, func() string { return "the deleted node to be alone" })

	// A slot left migrating is reported by check and closed by fix.
	owner, other := slotOwnerID(t, cc, 100), slotOwnerID(t, cc, 16383)
	var ownerNode *redis.Client
	for _, n := range nodes[:3] {
		if id, _ := n.client(t).ClusterMyID(ctx).Result(); id == owner {
			ownerNode = n.client(t)
		}
	}
	require.NoError(t, ownerNode.Do(ctx, "CLUSTER", "SETSLOT", 100, "MIGRATING", other).Err())
	out, _ = redisCliCluster(t, "check", nodes[0].addr())
	require.Contains(t, out, "open slot", out)
	out, err = redisCliCluster(t, "fix", nodes[0].addr(), "--cluster-yes")
	require.NoError(t, err, "%s", out)
	requireClusterCheck(t, nodes[0])

	out, err = redisCliCluster(t, "info", nodes[0].addr())
	require.NoError(t, err, "%s", out)
	require.Contains(t, out, "3 masters.")
}
