package tests

// Script behaviours that rate-limiting libraries rely on, each found by
// running one against limitdb (tests/ratelibs_test.go).

import (
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
