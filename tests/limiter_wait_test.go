package tests

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/persistence"
)

// getAck reads the fake replica's stream until a REPLCONF GETACK and
// answers it with the offset read, as a replica does.
func (r *fakeReplica) getAck() {
	r.t.Helper()
	r.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	for {
		args, raw, err := persistence.ReadRecord(r.rd, nil, nil)
		if err != nil {
			r.t.Fatalf("no GETACK came: %v", err)
		}
		r.off += int64(len(raw))
		if len(args) == 3 && strings.EqualFold(string(args[1]), "GETACK") {
			r.send(cmd("REPLCONF", "ACK", strconv.FormatInt(r.off, 10)))
			return
		}
	}
}

// silent reports whether nothing arrives on r for a moment of real time:
// a reply that must not have left yet.
func silent(r *raw) bool {
	r.nc.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	_, err := r.rd.Peek(1)
	return err != nil
}

// TestLimiterRepliesWaitForReplicas: with limiter-wait-replicas 1, a
// pipeline's replies from its first limiter command on leave only once the
// replica acknowledged the stream past their effects, in order, while
// other clients are served; without it they leave at once; past
// limiter-wait-timeout the limiter replies that waited become -NOREPLICAS.
func TestLimiterRepliesWaitForReplicas(t *testing.T) {
	t.Parallel()
	ts, _ := startWith(t, func(c *config.Config) { c.LimiterWaitTimeout = 0 }, nil)
	replica := attachFakeReplica(t, ts)
	admin := ts.client(t, 2)
	require.Eventually(t, func() bool {
		return strings.Contains(infoOf(t, admin, "replication", "slave0"), "state=online")
	}, 20*time.Second, 5*time.Millisecond, "the fake replica never came online")
	pipeline := cmd("SET", "x", "1") + cmd("CL.THROTTLE", "a", "15", "30", "60") + cmd("GET", "x") + cmd("CL.THROTTLE", "b", "15", "30", "60", "0")
	replies := func(r *raw, n int) string {
		var out strings.Builder
		for i := 0; i < n; i++ {
			r.reply(&out)
		}
		return out.String()
	}

	off := dialRaw(t, ts.addr)
	off.send(pipeline)
	require.True(t, strings.HasPrefix(replies(off, 4), "+OK\r\n*5\r\n"), "mode off: the replies leave at once")

	require.NoError(t, admin.ConfigSet(ctx, "limiter-wait-replicas", "1").Err())
	on := dialRaw(t, ts.addr)
	on.send(pipeline)
	require.Equal(t, "+OK\r\n", replies(on, 1), "the write before the first limiter command is not held")
	require.True(t, silent(on), "a limiter's reply left before the replica acknowledged its effect")
	require.Equal(t, "PONG", admin.Ping(ctx).Val(), "another client waits behind the held replies")
	replica.getAck()
	got := replies(on, 3)
	require.True(t, strings.HasPrefix(got, "*5\r\n"), "after the acknowledgement: %q", got)
	require.Contains(t, got, "$1\r\n1\r\n*5\r\n", "the replies keep their order")

	// A replica that stops acknowledging: with a timeout of a second, the
	// limiter's reply becomes -NOREPLICAS once the server's clock passed it;
	// the GET's reply behind it is its own.
	require.NoError(t, admin.ConfigSet(ctx, "limiter-wait-timeout", "1000").Err())
	on.send(cmd("CL.THROTTLE", "c", "15", "30", "60") + cmd("GET", "x"))
	require.True(t, silent(on), "the reply left without an acknowledgement")
	ts.clk.Advance(time.Second)
	require.Equal(t, "-"+"NOREPLICAS Not enough good replicas acknowledged the write in time.\r\n$1\r\n1\r\n", replies(on, 2))
}

// TestPolicyRepliesWaitForReplicas: with limiter-wait-replicas off, a
// policy's wait_replicas holds the replies of the commands on it (and an
// RL.HITALL naming it) until the replica acknowledged their effects, while
// a policy without it answers at once, a peek is not held, and neither is
// a command inside MULTI; past limiter-wait-timeout the reply that waited
// becomes -NOREPLICAS.
func TestPolicyRepliesWaitForReplicas(t *testing.T) {
	t.Parallel()
	ts, _ := startWith(t, func(c *config.Config) { c.LimiterWaitTimeout = 0 }, nil)
	replica := attachFakeReplica(t, ts)
	admin := ts.client(t, 2)
	require.Eventually(t, func() bool {
		return strings.Contains(infoOf(t, admin, "replication", "slave0"), "state=online")
	}, 20*time.Second, 5*time.Millisecond, "the fake replica never came online")
	setPolicy(t, admin, "waits", "gcra", 100, "1m", "WAITREPLICAS", 1)
	setPolicy(t, admin, "free", "gcra", 100, "1m")
	require.Equal(t, int64(1), policyField(t, admin, "waits", "wait_replicas"))
	require.NotContains(t, fmt.Sprint(admin.Do(ctx, "RL.POLICY", "GET", "free").Val()), "wait_replicas")
	require.Contains(t, admin.Info(ctx, "limits").Val(), ",wait_replicas=1\r\n")
	replies := func(r *raw, n int) string {
		var out strings.Builder
		for i := 0; i < n; i++ {
			r.reply(&out)
		}
		return out.String()
	}

	c := dialRaw(t, ts.addr)
	c.send(cmd("RL.HIT", "free", "k") + cmd("RL.HIT", "waits", "k", "0") + cmd("MULTI") + cmd("RL.HIT", "waits", "k") + cmd("EXEC"))
	got := replies(c, 5)
	require.True(t, strings.HasPrefix(got, "*5\r\n:0\r\n"), "a policy without wait_replicas, a peek and EXEC answer at once: %q", got)

	c.send(cmd("SET", "x", "1") + cmd("RL.HIT", "waits", "k") + cmd("GET", "x"))
	require.Equal(t, "+OK\r\n", replies(c, 1), "the write before the policy's command is not held")
	require.True(t, silent(c), "the policy's reply left before the replica acknowledged its effect")
	require.Equal(t, "PONG", admin.Ping(ctx).Val(), "another client waits behind the held replies")
	replica.getAck()
	got = replies(c, 2)
	require.True(t, strings.HasPrefix(got, "*5\r\n:0\r\n"), "after the acknowledgement: %q", got)
	require.True(t, strings.HasSuffix(got, "$1\r\n1\r\n"), "the replies keep their order: %q", got)

	c.send(cmd("RL.HITALL", "2", "free", "k", "waits", "k"))
	require.True(t, silent(c), "RL.HITALL naming the policy answered before the acknowledgement")
	replica.getAck()
	require.True(t, strings.HasPrefix(replies(c, 1), "*3\r\n:0\r\n"))

	// A replica that stops acknowledging: the reply becomes -NOREPLICAS
	// once the server's clock passed limiter-wait-timeout.
	require.NoError(t, admin.ConfigSet(ctx, "limiter-wait-timeout", "1000").Err())
	c.send(cmd("RL.HIT", "waits", "k") + cmd("GET", "x"))
	require.True(t, silent(c), "the reply left without an acknowledgement")
	ts.clk.Advance(time.Second)
	require.Equal(t, "-NOREPLICAS Not enough good replicas acknowledged the write in time.\r\n$1\r\n1\r\n", replies(c, 2))
}
