package tests

// Script behaviours that rate-limiting libraries rely on, each found by
// running one against limitdb (tests/ratelibs_test.go).

import (
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestScriptPublish: a script may PUBLISH (and ask PUBSUB NUMSUB), which
// name no key, as in Redis; subscribers get the message. bottleneck's
// scripts publish to their limiter's channel.
func TestScriptPublish(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c := ts.client(t, 2)
	sub := c.Subscribe(ctx, "ch")
	t.Cleanup(func() { sub.Close() })
	_, err := sub.Receive(ctx) // the subscription's confirmation
	require.NoError(t, err)

	got, err := c.Eval(ctx, "return {redis.call('publish', 'ch', ARGV[1]), redis.call('pubsub', 'numsub', 'ch')}", nil, "hello").Result()
	require.NoError(t, err)
	require.Equal(t, []any{int64(1), []any{"ch", int64(1)}}, got)
	msg, err := sub.ReceiveMessage(ctx)
	require.NoError(t, err)
	require.Equal(t, "hello", msg.Payload)

	// In a transaction too, PUBLISH holds no shard.
	cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "k", "v", 0)
		p.Publish(ctx, "ch", "in multi")
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, int64(1), cmds[1].(*redis.IntCmd).Val())
	msg, err = sub.ReceiveMessage(ctx)
	require.NoError(t, err)
	require.Equal(t, "in multi", msg.Payload)
}

// TestScriptZRangeWithScoresFromRESP3Client: a script's redis.call answers
// in RESP2 whatever its client speaks, so ZRANGE ... WITHSCORES is a flat
// member, score list even when a RESP3 client (ioredis 6 by default) runs
// the script; redis.setresp(3) gives the nested pairs. bottleneck's
// scripts read member names at odd positions.
func TestScriptZRangeWithScoresFromRESP3Client(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	for _, proto := range []int{2, 3} {
		c := ts.client(t, proto)
		require.NoError(t, c.ZAdd(ctx, "z", redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 2.5, Member: "b"}).Err())
		for _, tc := range []struct{ script, want string }{
			{"return redis.call('zrange', KEYS[1], 0, -1, 'withscores')", "[a 1 b 2.5]"},
			{"return redis.call('zrangebyscore', KEYS[1], '-inf', '+inf', 'withscores')", "[a 1 b 2.5]"},
			{"local r = redis.call('zrange', KEYS[1], 0, -1, 'withscores') return {type(r[1]), type(r[2]), #r}", "[string string 4]"},
			{"redis.setresp(3) local r = redis.call('zrange', KEYS[1], 0, -1, 'withscores') return {type(r[1]), #r, r[1][1]}", "[table 2 a]"},
		} {
			got, err := c.Eval(ctx, tc.script, []string{"z"}).Result()
			require.NoError(t, err, "RESP%d: %s", proto, tc.script)
			require.Equal(t, tc.want, fmt.Sprint(got), "RESP%d: %s", proto, tc.script)
		}
		// Outside a script, the connection's protocol decides.
		want := map[int]string{2: "[a 1 b 2.5]", 3: "[[a 1] [b 2.5]]"}[proto]
		require.Equal(t, want, fmt.Sprint(c.Do(ctx, "zrange", "z", 0, -1, "withscores").Val()), "RESP%d", proto)
	}
}
