package tests

import (
	"fmt"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/node"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// reserve runs RL.RESERVE and returns its reservation id.
func reserve(t *testing.T, c *redis.Client, args ...any) string {
	t.Helper()
	v, err := c.Do(ctx, append([]any{"RL.RESERVE"}, args...)...).Slice()
	require.NoError(t, err)
	require.Len(t, v, 6)
	id, ok := v[5].(string)
	require.True(t, ok, "RL.RESERVE %v was denied: %v", args, v)
	return id
}

// TestReservationsSurviveReplicationFailoverAndAOF: open reservations
// reach a replica and the append-only file with the state they were
// charged to. After a failover the promoted replica settles them (once),
// and a server started from the append-only file settles them as the
// primary would have.
func TestReservationsSurviveReplicationFailoverAndAOF(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pclk := clock.NewFake(t0)
	cfg := config.Default()
	cfg.Port, cfg.Dir, cfg.Save = 0, dir, 0
	cfg.AppendOnly.AppendOnly, cfg.AppendFsync = true, "always"
	pn := node.New(cfg, engine.New(pclk, 0), nil)
	p := serve(t, pn, pclk)
	r := startServer(t)
	pc, rc := p.client(t, 2), r.client(t, 2)
	replicate(t, rc, p)
	require.NoError(t, pc.Do(ctx, "RL.POLICY", "SET", "tpm", "token_bucket", 1000, "1m").Err())
	id1 := reserve(t, pc, "tpm", "tenant", 800)
	id2 := reserve(t, pc, "tpm", "tenant", 150)
	require.Equal(t, []int64{0, 1000, 100, -1, 54000, 1}, ints(t, pc.Do(ctx, "RL.SETTLE", "tpm", "tenant", id2, 100)))
	n, err := pc.Do(ctx, "WAIT", 1, 10000).Int()
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, "reserved", rc.Type(ctx, "rl:tpm:tenant").Val())
	require.Equal(t, pc.Dump(ctx, "rl:tpm:tenant").Val(), rc.Dump(ctx, "rl:tpm:tenant").Val())

	// The primary goes away; its append-only file has every change.
	pn.Close()
	require.NoError(t, rc.Do(ctx, "REPLICAOF", "NO", "ONE").Err())
	settled := []int64{0, 1000, 880, -1, 7200, 1}
	require.Equal(t, settled, ints(t, rc.Do(ctx, "RL.SETTLE", "tpm", "tenant", id1, 20)))
	require.Equal(t, []int64{0, 1000, 880, -1, 7200, 0}, ints(t, rc.Do(ctx, "RL.SETTLE", "tpm", "tenant", id1, 20)))
	require.Equal(t, []int64{0, 1000, 880, -1, 7200, 0}, ints(t, rc.Do(ctx, "RL.SETTLE", "tpm", "tenant", id2, 100)))

	back := serverFromDirAOF(t, clock.NewFake(t0), dir)
	bc := back.client(t, 2)
	require.Equal(t, "reserved", bc.Type(ctx, "rl:tpm:tenant").Val())
	require.Equal(t, settled, ints(t, bc.Do(ctx, "RL.SETTLE", "tpm", "tenant", id1, 20)))
}

func serverFromDirAOF(t *testing.T, clk *clock.Fake, dir string) *testServer {
	t.Helper()
	cfg := config.Default()
	cfg.Port, cfg.Dir, cfg.Save = 0, dir, 0
	cfg.AppendOnly.AppendOnly = true
	return serve(t, node.New(cfg, engine.New(clk, 0), nil), clk)
}

// TestReserveCommandDocs: COMMAND DOCS and INFO serve the new commands
// like the other limiter commands.
func TestReserveCommandDocs(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.client(t, 2)
	for _, name := range []string{"rl.reserve", "rl.settle"} {
		docs, err := c.Do(ctx, "COMMAND", "DOCS", name).Result()
		require.NoError(t, err)
		require.Contains(t, fmt.Sprint(docs), "rate_limit", name)
		keys, err := c.Do(ctx, "COMMAND", "GETKEYS", name, "p", "u", "1", "1").StringSlice()
		require.NoError(t, err, name)
		require.Equal(t, []string{"u"}, keys, name)
	}
	require.NoError(t, c.Do(ctx, "RL.POLICY", "SET", "p", "gcra", 1, "1m").Err())
	id := reserve(t, c, "p", "u", 1)
	denied, err := c.Do(ctx, "RL.RESERVE", "p", "u", 1).Slice()
	require.NoError(t, err)
	require.Equal(t, []any{int64(1), int64(1), int64(0), int64(60000), int64(60000), nil}, denied)
	require.Equal(t, int64(1), ints(t, c.Do(ctx, "RL.SETTLE", "p", "u", id, 5))[0])
	info := c.Info(ctx, "limits").Val()
	require.Contains(t, info, "rl.reserve")
	require.Contains(t, info, "rl.settle")
	// Another kind's key: WRONGTYPE.
	require.NoError(t, c.Set(ctx, "rl:p:s", "x", 0).Err())
	require.ErrorContains(t, c.Do(ctx, "RL.RESERVE", "p", "s", 1).Err(), "WRONGTYPE")
	s.clk.Advance(time.Hour)
}
