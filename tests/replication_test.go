package tests

import (
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestRoleMatchesRedis: what Sentinel and clients read of a primary with
// no replica (ROLE, the fields of INFO replication, run_id, CLIENT KILL
// TYPE) is what a redis-server primary answers, field for field; only the
// identifiers' values differ.
func TestRoleMatchesRedis(t *testing.T) {
	t.Parallel()
	ref := startRedis(t)
	ts := startServer(t)
	ours := ts.client(t, 2)
	for _, c := range []*redis.Client{ref, ours} {
		c.Do(ctx, "CLIENT", "SETNAME", "x") // a connection to kill below
	}

	role := func(c *redis.Client) any {
		v, err := c.Do(ctx, "ROLE").Result()
		require.NoError(t, err)
		return v
	}
	require.Equal(t, role(ref), role(ours), "ROLE")

	fields := func(c *redis.Client, section string) map[string]string {
		info, err := c.Info(ctx, section).Result()
		require.NoError(t, err)
		out := map[string]string{}
		for _, line := range strings.Split(info, "\r\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
				out[k] = v
			}
		}
		return out
	}
	names := func(m map[string]string) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	theirs, mine := fields(ref, "replication"), fields(ours, "replication")
	require.Equal(t, names(theirs), names(mine), "INFO replication's fields")
	hex40 := regexp.MustCompile(`^[0-9a-f]{40}$`)
	for _, k := range []string{"master_replid", "master_replid2"} {
		require.Regexp(t, hex40, mine[k], k)
	}
	for k, v := range theirs {
		// repl-backlog-size's default differs on purpose: 32mb, not 1mb
		// (docs/replication.md).
		if k != "master_replid" && k != "repl_backlog_size" {
			require.Equal(t, v, mine[k], "INFO replication %s", k)
		}
	}
	require.Equal(t, "33554432", mine["repl_backlog_size"])
	require.Regexp(t, hex40, fields(ours, "server")["run_id"], "run_id")
	require.NotEqual(t, fields(ours, "server")["run_id"], mine["master_replid"])

	kill := func(c *redis.Client, typ string) (int64, error) {
		return c.Do(ctx, "CLIENT", "KILL", "TYPE", typ, "SKIPME", "yes").Int64()
	}
	for _, typ := range []string{"master", "replica", "slave", "pubsub"} {
		n, err := kill(ours, typ)
		require.NoError(t, err, typ)
		require.Zero(t, n, "CLIENT KILL TYPE %s: no such clients", typ)
	}
	victim := dialRaw(t, ts.addr)
	victim.send(cmd("PING"))
	require.Equal(t, "+PONG", victim.mustLine())
	n, err := kill(ours, "normal")
	require.NoError(t, err)
	require.GreaterOrEqual(t, n, int64(1), "CLIENT KILL TYPE normal")
	require.True(t, victim.closed(), "a normal client survived CLIENT KILL TYPE normal")
	_, theirErr := kill(ref, "bogus")
	_, ourErr := kill(ours, "bogus")
	require.Error(t, ourErr)
	require.Equal(t, theirErr.Error(), ourErr.Error(), "an unknown type")
}
