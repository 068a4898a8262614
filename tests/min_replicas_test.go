package tests

import (
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/limitdb/limitdb/config"
)

// startRedisWith starts a redis-server on a TCP port with extra arguments.
func startRedisWith(t *testing.T, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	_, port := hostPort(t, addr)
	cmd := exec.Command(bin, append([]string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir()}, args...)...)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	require.Eventually(t, func() bool {
		nc, err := net.Dial("tcp", addr)
		if err == nil {
			nc.Close()
		}
		return err == nil
	}, 10*time.Second, 20*time.Millisecond, "redis-server did not start")
	return addr
}

// TestMinReplicasToWriteMatchesRedis: with min-replicas-to-write 1 and no
// replica, limitdb and redis-server 7.0 answer the same steps with the
// same bytes: writes refused with -NOREPLICAS, reads served, a write
// queued in MULTI failing the transaction, either directive at 0 turning
// the check off, and INFO's min_slaves_good_slaves.
func TestMinReplicasToWriteMatchesRedis(t *testing.T) {
	t.Parallel()
	ts, _ := startWith(t, func(c *config.Config) { c.MinReplicasToWrite = 1 }, nil)
	theirs := dialRaw(t, startRedisWith(t, "--min-replicas-to-write", "1"))
	ours := dialRaw(t, ts.addr)
	steps := [][]string{
		{"SET", "k", "v"},
		{"GET", "k"},
		{"INCR", "n"},
		{"DEL", "k"},
		{"EXISTS", "k"},
		{"MULTI"},
		{"SET", "k", "v"},
		{"GET", "k"},
		{"EXEC"},
		{"CONFIG", "SET", "min-replicas-max-lag", "0"},
		{"SET", "k", "v"},
		{"CONFIG", "SET", "min-replicas-max-lag", "10"},
		{"SET", "k", "w"},
		{"CONFIG", "GET", "min-replicas-to-write"},
		{"CONFIG", "GET", "min-slaves-max-lag"},
		{"CONFIG", "SET", "min-replicas-to-write", "0"},
		{"SET", "k", "x"},
		{"GET", "k"},
		{"CONFIG", "SET", "min-slaves-to-write", "2"},
		{"SET", "k", "y"},
	}
	for i, step := range steps {
		want, got := theirs.do(step...), ours.do(step...)
		require.Equal(t, want, got, "step %d %v: redis-server answered %q, limitdb %q", i, step, want, got)
	}
	good := func(r *raw) string {
		for _, line := range strings.Split(r.do("INFO", "replication"), "\r\n") {
			if strings.HasPrefix(line, "min_slaves_good_slaves:") {
				return line
			}
		}
		return ""
	}
	require.Equal(t, "min_slaves_good_slaves:0", good(theirs))
	require.Equal(t, good(theirs), good(ours))
	// A limiter's peek (cost 0) writes nothing and is served.
	require.True(t, strings.HasPrefix(ours.do("CL.THROTTLE", "p", "15", "30", "60", "0"), "*5"))
	require.Equal(t, "-NOREPLICAS Not enough good replicas to write.\r\n", ours.do("CL.THROTTLE", "p", "15", "30", "60"))
}

// TestMinReplicasCountsOnlyReplicasThatAcknowledge: a replica that came
// online is good; one silent for more than min-replicas-max-lag is not,
// and writes are refused until it acknowledges again.
func TestMinReplicasCountsOnlyReplicasThatAcknowledge(t *testing.T) {
	t.Parallel()
	ts, _ := startWith(t, func(c *config.Config) { c.MinReplicasToWrite = 1; c.MinReplicasMaxLag = 10 }, nil)
	c := dialRaw(t, ts.addr)
	require.Equal(t, "-NOREPLICAS Not enough good replicas to write.\r\n", c.do("SET", "k", "v"))
	replica := attachFakeReplica(t, ts)
	require.Eventually(t, func() bool { return c.do("SET", "k", "v") == "+OK\r\n" }, 20*time.Second, 5*time.Millisecond,
		"writes still refused with a replica online")
	// 11 s of the server's clock without an acknowledgement: the replica
	// is no longer good once the once-a-second refresh has run.
	for i := 0; i < 11; i++ {
		ts.clk.Advance(time.Second)
	}
	require.Eventually(t, func() bool {
		ts.clk.Advance(100 * time.Millisecond)
		return c.do("SET", "k", "v") != "+OK\r\n"
	}, 20*time.Second, 5*time.Millisecond, "writes served with a replica silent past min-replicas-max-lag")
	require.Equal(t, "-NOREPLICAS Not enough good replicas to write.\r\n", c.do("SET", "k", "v"))
	replica.until("k")
	replica.send(cmd("REPLCONF", "ACK", strconv.FormatInt(replica.off, 10)))
	require.Eventually(t, func() bool { return c.do("SET", "k", "v") == "+OK\r\n" }, 20*time.Second, 5*time.Millisecond,
		"writes still refused once the replica acknowledged")
}
