package tests

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/limitdb/limitdb/cluster"
	"github.com/limitdb/limitdb/config"
)

// Envoy's rate limit service on a cluster: whichever node an Envoy asks,
// each descriptor's counter is charged on the primary that owns its key's
// slot, so Envoys spread over the nodes share one limit, as
// envoyproxy/ratelimit's instances share a Redis Cluster.

const clusterRules = `domain: cluster_rls
descriptors:
  - key: user
    rate_limit:
      unit: hour
      requests_per_unit: 2
`

// rlsClusterNode is a cluster node with its rate limit service's client.
type rlsClusterNode struct {
	*clusterNode
	rls rlspb.RateLimitServiceClient
}

// startRLSCluster starts three primaries with clusterRules on their gRPC
// ports and builds a cluster of them with redis-cli --cluster create.
func startRLSCluster(t *testing.T) []*rlsClusterNode { return startRLSClusterOf(t, 3, 0) }

// startRLSClusterOf is startRLSCluster with n nodes, replicas of each
// primary among them.
func startRLSClusterOf(t *testing.T, count, replicas int) []*rlsClusterNode {
	t.Helper()
	need(t, "redis-cli")
	rules := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(rules, "cluster.yaml"), []byte(clusterRules), 0o644))
	ports := freePorts(t, 3*count)
	nodes := make([]*rlsClusterNode, count)
	args := []string{"create"}
	for i := range nodes {
		n := &clusterNode{dir: t.TempDir(), port: ports[i], bus: ports[count+i]}
		grpcPort := startRLSNode(t, n, ports[2*count+i], rules)
		conn, err := grpc.NewClient("127.0.0.1:"+strconv.Itoa(grpcPort), grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		t.Cleanup(func() { conn.Close() })
		nodes[i] = &rlsClusterNode{clusterNode: n, rls: rlspb.NewRateLimitServiceClient(conn)}
		args = append(args, n.addr())
	}
	out, err := redisCliCluster(t, append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")...)
	require.NoError(t, err, "%s", out)
	require.Contains(t, out, "[OK] All 16384 slots covered.", out)
	requireClusterCheck(t, nodes[0].clusterNode)
	for _, n := range nodes {
		c := n.client(t)
		eventually(t, 30*time.Second, func() bool {
			info, err := c.ClusterInfo(ctx).Result()
			return err == nil && strings.Contains(info, "cluster_state:ok")
		}, func() string { return n.addr() + " never reported cluster_state:ok" })
	}
	return nodes
}

// startRLSNode starts n with the rules of rules on gRPC port grpcPort, and
// returns the gRPC port it serves. A port found free a moment ago can be
// taken since: the node then gets three others, as startFirst does. A node
// answers PING only once its gRPC port is bound (it exits when that fails).
func startRLSNode(t *testing.T, n *clusterNode, grpcPort int, rules string) int {
	t.Helper()
	for try := 0; ; try++ {
		p, err := startProc(t, n.dir, n.args("--grpc-port", strconv.Itoa(grpcPort), "--rls-config-dir", rules)...)
		if err == nil {
			c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
			err = c.Ping(ctx).Err()
			c.Close()
			if err == nil {
				n.p = p
				return grpcPort
			}
			select {
			case e := <-p.done: // it exited: its log says why
				p.done <- e
			case <-time.After(30 * time.Second):
			}
			err = fmt.Errorf("PING: %v\n%s", err, p.log)
		}
		if try == 4 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatal(err)
		}
		ports := freePorts(t, 3)
		n.port, n.bus, grpcPort = ports[0], ports[1], ports[2]
	}
}

// ownerOf is the address of the primary that owns user's counter in the
// current hour's window.
func ownerOf(t *testing.T, c redis.UniversalClient, user string) string {
	start := time.Now().Unix() / 3600 * 3600
	return slotOwner(t, c, cluster.Slot([]byte(fmt.Sprintf("cluster_rls_user_%s_%d", user, start))))
}

func userRequest(user string) *rlspb.RateLimitRequest {
	return &rlspb.RateLimitRequest{Domain: "cluster_rls", Descriptors: []*rlcommon.RateLimitDescriptor{descriptor("user", user)}}
}

func TestRLSClusterOneLimitPerDescriptor(t *testing.T) {
	nodes := startRLSCluster(t)
	const users = 12
	for try := 0; ; try++ {
		hour := time.Now().Unix() / 3600
		admitted := map[string]int{}
		owners := map[string]bool{}
		var total int
		for u := range users {
			user := fmt.Sprintf("u%d-%d", try, u)
			owners[ownerOf(t, nodes[0].client(t), user)] = true
			for i, n := range nodes {
				resp, err := n.rls.ShouldRateLimit(ctx, userRequest(user))
				require.NoError(t, err, "user %s on node %d", user, i)
				if resp.OverallCode == rlspb.RateLimitResponse_OK {
					admitted[user]++
					total++
				}
			}
		}
		if time.Now().Unix()/3600 != hour && try < 2 {
			continue // the hour's window ended on the way: the counters started again
		}
		for u := range users {
			user := fmt.Sprintf("u%d-%d", try, u)
			require.Equal(t, 2, admitted[user], "user %s: sent once to each of three nodes, 2 per hour", user)
		}
		require.Equal(t, 2*users, total)
		require.Greater(t, len(owners), 1, "the users' counters live on several primaries")
		break
	}
	// Each charge ran RLS.CHARGE on its owner, where it shows in the
	// statistics: every primary owns some of the users' counters.
	calls := 0
	for _, n := range nodes {
		info, err := n.client(t).Info(ctx, "commandstats").Result()
		require.NoError(t, err)
		for _, line := range strings.Split(info, "\r\n") {
			if rest, ok := strings.CutPrefix(line, "cmdstat_rls.charge:calls="); ok {
				c, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
				calls += c
			}
		}
	}
	require.GreaterOrEqual(t, calls, 3*12, "RLS.CHARGE calls over the primaries")

	// A slot on the move: its owner answers ASK for a counter it does not
	// hold, and the charge follows to the importing node, whichever node
	// Envoy asked.
	from, to := nodes[0], nodes[1]
	var user, key string
	var slot int
	for i := 0; user == ""; i++ {
		u := fmt.Sprintf("moving%d", i)
		if ownerOf(t, from.client(t), u) == from.addr() {
			user = u
			key = fmt.Sprintf("cluster_rls_user_%s_%d", u, time.Now().Unix()/3600*3600)
			slot = cluster.Slot([]byte(key))
		}
	}
	fromID, err := from.client(t).Do(ctx, "CLUSTER", "MYID").Text()
	require.NoError(t, err)
	toID, err := to.client(t).Do(ctx, "CLUSTER", "MYID").Text()
	require.NoError(t, err)
	require.NoError(t, to.client(t).Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", fromID).Err())
	require.NoError(t, from.client(t).Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", toID).Err())
	admitted := 0
	for i, n := range nodes {
		resp, err := n.rls.ShouldRateLimit(ctx, userRequest(user))
		require.NoError(t, err, "node %d", i)
		if resp.OverallCode == rlspb.RateLimitResponse_OK {
			admitted++
		}
	}
	require.Equal(t, 2, admitted, "a descriptor of a migrating slot, sent once to each node")
	n, err := to.client(t).Do(ctx, "CLUSTER", "COUNTKEYSINSLOT", slot).Int()
	require.NoError(t, err)
	require.Equal(t, 1, n, "the counter was made on the importing node")
	n, err = from.client(t).Do(ctx, "CLUSTER", "COUNTKEYSINSLOT", slot).Int()
	require.NoError(t, err)
	require.Equal(t, 0, n, "and not on the migrating one")
}

func TestRLSClusterUnreachableOwner(t *testing.T) {
	nodes := startRLSCluster(t)
	gone := nodes[2]
	var user string
	for i := 0; user == ""; i++ {
		if u := fmt.Sprintf("gone%d", i); ownerOf(t, nodes[0].client(t), u) == gone.addr() {
			user = u
		}
	}
	gone.p.cmd.Process.Kill()
	gone.p.done <- <-gone.p.done // exited; the cleanup waits for it too
	for i, n := range nodes[:2] {
		_, err := n.rls.ShouldRateLimit(ctx, userRequest(user))
		require.Error(t, err, "node %d", i)
		// envoyproxy/ratelimit answers a Redis error with gRPC's UNKNOWN:
		// Envoy denies with failure_mode_deny true and allows with false.
		require.Equal(t, codes.Unknown, status.Code(err), "node %d: %v", i, err)
		require.Contains(t, status.Convert(err).Message(), "cannot be reached", "node %d", i)
		require.Contains(t, status.Convert(err).Message(), gone.addr(), "node %d", i)
	}
	err := nodes[0].client(t).Do(ctx, "RL.SHOULD", "cluster_rls", "user", user).Err()
	require.Error(t, err)
	require.True(t, strings.HasPrefix(err.Error(), "ERR rls: the primary at "+gone.addr()), "%v", err)
}

// The gates a RESP command passes apply to the rate limit service's
// charges too: maxmemory and the ACL (for RL.SHOULD, whose user is known;
// gRPC names none); statistics and MONITOR see them. The read-only
// replica's refusal is TestRLSReplicaRefusesCharges's.
func TestRLSChargesPassTheGates(t *testing.T) {
	t.Parallel()
	rules := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(rules, "r.yaml"), []byte(`domain: gated
descriptors:
  - key: user
    rate_limit:
      unit: hour
      requests_per_unit: 5
`), 0o644))
	acl := writeACL(t, `user default off
user admin on >adminpw +@all
user limiter on >limiterpw nocommands +@rate_limit +@connection
user asker on >askerpw nocommands +rl.should +@connection
`)
	ts, _ := startWith(t, func(c *config.Config) { c.ACLFile, c.RLSConfigDir = acl, rules }, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go ts.srv.ServeGRPC(ln)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	svc := rlspb.NewRateLimitServiceClient(conn)
	login := func(user, pass string) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: ts.addr, Username: user, Password: pass, MaxRetries: -1})
		t.Cleanup(func() { c.Close() })
		return c
	}
	admin := login("admin", "adminpw")
	req := &rlspb.RateLimitRequest{Domain: "gated", Descriptors: []*rlcommon.RateLimitDescriptor{descriptor("user", "a")}}

	// gRPC names no user: its charges are the server's own.
	resp, err := svc.ShouldRateLimit(ctx, req)
	require.NoError(t, err)
	require.Equal(t, uint32(4), resp.Statuses[0].LimitRemaining)
	got, err := login("limiter", "limiterpw").Do(ctx, "RL.SHOULD", "gated", "user", "a").Slice()
	require.NoError(t, err)
	require.Equal(t, []any{"OK", "OK", int64(5), int64(3), int64(3600)}, got)
	// RL.SHOULD charges as its connection's user, who must be allowed
	// RLS.CHARGE too.
	err = login("asker", "askerpw").Do(ctx, "RL.SHOULD", "gated", "user", "a").Err()
	require.EqualError(t, err, "NOPERM User asker has no permissions to run the 'rls.charge' command")

	info, err := admin.Info(ctx, "commandstats").Result()
	require.NoError(t, err)
	var stat string
	for _, line := range strings.Split(info, "\r\n") {
		if strings.HasPrefix(line, "cmdstat_rls.charge:") {
			stat = line
		}
	}
	require.Contains(t, stat, ":calls=2,", info)
	require.Contains(t, stat, "rejected_calls=1,", "the refused RLS.CHARGE")
	limits, err := admin.Info(ctx, "limits").Result()
	require.NoError(t, err)
	require.Contains(t, limits, "limit_rls.charge:admitted=2,denied=0")

	// Over maxmemory a charge that would make a counter is refused, as any
	// denyoom command is (one of a counter that exists goes on): gRPC's
	// UNKNOWN, the code of envoyproxy/ratelimit's Redis errors.
	require.NoError(t, admin.ConfigSet(ctx, "maxmemory", "1").Err())
	resp, err = svc.ShouldRateLimit(ctx, req)
	require.NoError(t, err)
	require.Equal(t, uint32(2), resp.Statuses[0].LimitRemaining)
	req = &rlspb.RateLimitRequest{Domain: "gated", Descriptors: []*rlcommon.RateLimitDescriptor{descriptor("user", "b")}}
	_, err = svc.ShouldRateLimit(ctx, req)
	require.Equal(t, codes.Unknown, status.Code(err), "%v", err)
	require.Equal(t, "OOM command not allowed when used memory > 'maxmemory'.", status.Convert(err).Message())
	require.NoError(t, admin.ConfigSet(ctx, "maxmemory", "0").Err())
	resp, err = svc.ShouldRateLimit(ctx, req)
	require.NoError(t, err)
	require.Equal(t, uint32(4), resp.Statuses[0].LimitRemaining, "the refused charge counted nothing")

	// MONITOR shows the charge, as the command the service ran.
	mon, err := net.Dial("tcp", ts.addr)
	require.NoError(t, err)
	defer mon.Close()
	mon.SetDeadline(time.Now().Add(30 * time.Second))
	mr := bufio.NewReader(mon)
	for _, c := range []string{cmd("AUTH", "admin", "adminpw"), cmd("MONITOR")} {
		io.WriteString(mon, c)
		l, err := mr.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "+OK\r\n", l)
	}
	_, err = svc.ShouldRateLimit(ctx, req)
	require.NoError(t, err)
	l, err := mr.ReadString('\n')
	require.NoError(t, err)
	require.Regexp(t, `^\+[0-9.]+ \[0 local\] "RLS\.CHARGE" "per_descriptor" "0\.8" "gated_user_b_[0-9]+" "1" "HOUR:5:[0-9]+"\r\n$`, l)
}

// A replica owns no slot: what Envoy asks of it is charged on the
// primaries, so replicas share the primaries' limit rather than refusing.
func TestRLSClusterReplicasForward(t *testing.T) {
	nodes := startRLSClusterOf(t, 6, 1)
	var replicas []*rlsClusterNode
	clients := make([]*redis.Client, len(nodes))
	for i, n := range nodes {
		clients[i] = n.client(t)
	}
	eventually(t, 30*time.Second, func() bool {
		replicas = replicas[:0]
		for i, n := range nodes {
			if r, err := clients[i].Do(ctx, "ROLE").Slice(); err == nil && len(r) > 0 && r[0] == "slave" {
				replicas = append(replicas, n)
			}
		}
		return len(replicas) == 3
	}, func() string { return fmt.Sprintf("%d replicas", len(replicas)) })
	for u := range 6 {
		user := fmt.Sprintf("r%d", u)
		admitted := 0
		for i, n := range append(replicas, nodes...) {
			resp, err := n.rls.ShouldRateLimit(ctx, userRequest(user))
			require.NoError(t, err, "user %s, node %d", user, i)
			if resp.OverallCode == rlspb.RateLimitResponse_OK {
				admitted++
			}
		}
		require.Equal(t, 2, admitted, "user %s: sent once to each of 9 nodes (the replicas twice), 2 per hour", user)
	}
}
