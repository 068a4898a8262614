package tests

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/engine/enginetest"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// keyspaceOf is every live key of eng with its serialised entry, now.
func keyspaceOf(t testing.TB, eng *engine.Engine) map[string]string {
	return enginetest.Keyspace(t, eng, eng.Now())
}

// infoOf reads one field of INFO section.
func infoOf(t testing.TB, c *redis.Client, section, field string) string {
	t.Helper()
	info, err := c.Info(ctx, section).Result()
	require.NoError(t, err)
	for _, line := range strings.Split(info, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == field {
			return v
		}
	}
	return ""
}

// replicate makes replica replicate primary and waits for its link.
func replicate(t testing.TB, replica *redis.Client, primary *testServer) {
	t.Helper()
	host, port, _ := net.SplitHostPort(primary.addr)
	require.NoError(t, replica.Do(ctx, "REPLICAOF", host, port).Err())
	require.Eventually(t, func() bool { return infoOf(t, replica, "replication", "master_link_status") == "up" },
		30*time.Second, 10*time.Millisecond, "the replica's link never came up")
}

// load writes keys of every kind on c: limiters, strings, a multi-key
// write, deletions.
func load(t testing.TB, c *redis.Client, prefix string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("%s%d", prefix, i%50)
		for _, cmd := range [][]any{
			{"CL.THROTTLE", "cl:" + k, 5, 10, 60},
			{"SW.INCR", "sw:" + k, 10, 1000},
			{"SL.INCR", "sl:" + k, 10, 1000},
			{"TB.TAKE", "tb:" + k, 10, 1, 1000},
			{"SET", "s:" + k, fmt.Sprint(i), "PX", 100000},
			{"INCR", "n:" + k},
			{"MSET", "m1:" + k, "a", "m2:" + k, "b"},

			{"FW.INCR", "cw:" + k, 1000, "month", "TZ", "Europe/Paris"},
		} {
			require.NoError(t, c.Do(ctx, cmd...).Err(), "%v", cmd)
		}
		if i%7 == 0 {
			require.NoError(t, c.Do(ctx, "DEL", "n:"+k).Err())
		}
	}
}

// TestReplicaCopiesThePrimary: a replica that connects to a primary with
// keys gets a full copy, then the stream; after WAIT its keyspace is the
// primary's, entry for entry. It refuses writes and serves peeks.
func TestReplicaCopiesThePrimary(t *testing.T) {
	t.Parallel()
	p, r := startServer(t), startServer(t)
	pc, rc := p.client(t, 2), r.client(t, 3)
	load(t, pc, "before", 200)
	replicate(t, rc, p)
	load(t, pc, "after", 300)
	n, err := pc.Do(ctx, "WAIT", 1, 5000).Int()
	require.NoError(t, err)
	require.Equal(t, 1, n, "WAIT 1: the replica acknowledged")
	want := keyspaceOf(t, p.srv.Engine())
	require.NotEmpty(t, want)
	require.Equal(t, want, keyspaceOf(t, r.srv.Engine()), "the replica's keyspace")

	require.Equal(t, "slave", infoOf(t, rc, "replication", "role"))
	require.Equal(t, "1", infoOf(t, pc, "replication", "connected_slaves"))
	require.Contains(t, infoOf(t, pc, "replication", "slave0"), "state=online")
	require.Equal(t, infoOf(t, pc, "replication", "master_repl_offset"), infoOf(t, rc, "replication", "master_repl_offset"))

	err = rc.Do(ctx, "CL.THROTTLE", "cl:x", 5, 10, 60).Err()
	require.EqualError(t, err, "READONLY You can't write against a read only replica.")
	peek, err := rc.Do(ctx, "CL.THROTTLE", "cl:after1", 5, 10, 60, 0).Slice()
	require.NoError(t, err, "a peek (quantity 0) on a replica")
	require.Len(t, peek, 5)
	require.Equal(t, want, keyspaceOf(t, r.srv.Engine()), "a peek changed the replica")

	// The role for people and Sentinel.
	role, err := rc.Do(ctx, "ROLE").Slice()
	require.NoError(t, err)
	require.Equal(t, "slave", role[0])
	require.Equal(t, "connected", role[3])
}

// TestReplicaContinuesAfterADroppedLink: a replica whose connection is
// killed reconnects and continues from the backlog (+CONTINUE), with no
// second full copy, and catches up with what was written meanwhile.
func TestReplicaContinuesAfterADroppedLink(t *testing.T) {
	t.Parallel()
	p, r := startServer(t), startServer(t)
	pc, rc := p.client(t, 2), r.client(t, 2)
	load(t, pc, "a", 50)
	replicate(t, rc, p)
	n, err := pc.Do(ctx, "CLIENT", "KILL", "TYPE", "replica").Int()
	require.NoError(t, err)
	require.Equal(t, 1, n)
	load(t, pc, "b", 50)
	// The replica retries its link a second after the drop, and each WAIT
	// gives up after 100 ms: both on the servers' clocks, stepped here.
	defer p.stepping(10 * time.Millisecond)()
	defer r.stepping(10 * time.Millisecond)()
	require.Eventually(t, func() bool {
		n, err := pc.Do(ctx, "WAIT", 1, 100).Int()
		return err == nil && n == 1
	}, 30*time.Second, 50*time.Millisecond)
	require.Equal(t, keyspaceOf(t, p.srv.Engine()), keyspaceOf(t, r.srv.Engine()))
	require.Equal(t, "1", infoOf(t, pc, "stats", "sync_full"))
	require.Equal(t, "1", infoOf(t, pc, "stats", "sync_partial_ok"))
}

// TestPromotedReplicaKeepsItsSiblings: after REPLICAOF NO ONE on one
// replica and REPLICAOF to it on the other (what Sentinel sends on a
// failover), the promoted one takes writes and the other continues from
// it without a full copy.
func TestPromotedReplicaKeepsItsSiblings(t *testing.T) {
	t.Parallel()
	p, r1, r2 := startServer(t), startServer(t), startServer(t)
	pc, c1, c2 := p.client(t, 2), r1.client(t, 2), r2.client(t, 2)
	replicate(t, c1, p)
	replicate(t, c2, p)
	load(t, pc, "a", 100)
	n, err := pc.Do(ctx, "WAIT", 2, 5000).Int()
	require.NoError(t, err)
	require.Equal(t, 2, n)
	oldID := infoOf(t, pc, "replication", "master_replid")

	require.NoError(t, c1.Do(ctx, "REPLICAOF", "NO", "ONE").Err())
	require.Equal(t, "master", infoOf(t, c1, "replication", "role"))
	require.Equal(t, oldID, infoOf(t, c1, "replication", "master_replid2"))
	replicate(t, c2, r1)
	load(t, c1, "b", 100)
	n, err = c1.Do(ctx, "WAIT", 1, 5000).Int()
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, keyspaceOf(t, r1.srv.Engine()), keyspaceOf(t, r2.srv.Engine()))
	require.Equal(t, "0", infoOf(t, c1, "stats", "sync_full"), "the sibling needed a full copy")
	require.Equal(t, "1", infoOf(t, c1, "stats", "sync_partial_ok"))
}

// TestWaitAnswersInOrder: WAIT blocks its client without blocking the
// server; commands the client pipelines behind it are answered after it.
func TestWaitAnswersInOrder(t *testing.T) {
	t.Parallel()
	p := startServer(t)
	pc := p.client(t, 2)
	other := p.client(t, 2)
	raw := dialRaw(t, p.addr)
	raw.send(cmd("SET", "k", "v") + cmd("WAIT", "1", "60000") + cmd("GET", "k"))
	require.NoError(t, other.Ping(ctx).Err(), "the server answers others meanwhile")
	require.Equal(t, "+OK", raw.mustLine())
	// A minute's timeout, on the server's clock: it passes only as fast
	// as the test steps it.
	stop := p.stepping(time.Second)
	require.Equal(t, ":0", raw.mustLine(), "WAIT with no replica times out with 0")
	stop()
	require.GreaterOrEqual(t, p.clk.Mono(), time.Minute, "WAIT answered before its timeout")
	require.Equal(t, "$1", raw.mustLine())
	require.Equal(t, "v", raw.mustLine())
	require.NoError(t, pc.Ping(ctx).Err())
}

// TestReplicaGetsRuntimePolicies: a policy defined on the primary after
// the replica connected reaches it (a SECTION record), and is gone from it
// when the primary deletes it.
func TestReplicaGetsRuntimePolicies(t *testing.T) {
	t.Parallel()
	p, r := startServer(t), startServer(t)
	pc, rc := p.client(t, 2), r.client(t, 2)
	replicate(t, rc, p)
	require.NoError(t, pc.Do(ctx, "RL.POLICY", "SET", "api", "gcra", 10, "1s").Err())
	n, err := pc.Do(ctx, "WAIT", 1, 5000).Int()
	require.NoError(t, err)
	require.Equal(t, 1, n)
	got, err := rc.Do(ctx, "RL.POLICY", "GET", "api").Result()
	require.NoError(t, err)
	require.NotNil(t, got, "the replica does not know the policy")
	require.NoError(t, pc.Do(ctx, "RL.POLICY", "DEL", "api").Err())
	_, err = pc.Do(ctx, "WAIT", 1, 5000).Int()
	require.NoError(t, err)
	require.ErrorIs(t, rc.Do(ctx, "RL.POLICY", "GET", "api").Err(), redis.Nil)
}
