package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// blockingPopsScript covers the blocking pops' arguments and errors and
// the cases they answer at once, in the order Redis checks them.
var blockingPopsScript = [][]any{
	{"RPUSH", "l", "a", "b", "c"}, {"ZADD", "z", 1, "x", 2, "y", 3, "w"}, {"SET", "str", "v"},
	{"BLPOP", "l", "x"}, {"BLPOP", "l", -1}, {"BLPOP", "l", "1e300"}, {"BLPOP", "l", "inf"}, {"BLPOP", "l", " 1"}, {"BLPOP", "l", "nan"},
	{"BLPOP", "str", "l", 0}, {"BLPOP", "nokey", "l", 0}, {"BRPOP", "nokey", "l", "0.5"}, {"RPUSH", "l", "a", "b"}, {"BLPOP", "l", "-0.0001"},
	{"BZPOPMIN", "z", "x"}, {"BZPOPMIN", "str", 0}, {"BZPOPMIN", "nokey", "z", 0}, {"BZPOPMAX", "z", 1},
	{"BLMOVE", "l", "d", "LEFT", "UP", 0}, {"BLMOVE", "l", "d", "LEFT", "RIGHT", "x"}, {"BLMOVE", "l", "str", "LEFT", "RIGHT", 0},
	{"BLMOVE", "l", "d", "RIGHT", "LEFT", 0}, {"LRANGE", "l", 0, -1}, {"BRPOPLPUSH", "d", "d2", 0}, {"LRANGE", "d2", 0, -1},
	{"RPUSH", "l", "e", "f", "g"}, {"BLMPOP", "x", 1, "l", "LEFT"}, {"BLMPOP", 0, 0, "l", "LEFT"}, {"BLMPOP", 0, 1, "l", "UP"},
	{"BLMPOP", 0, 2, "str", "l", "LEFT"}, {"BLMPOP", 0, 2, "nokey", "l", "RIGHT", "COUNT", 2}, {"BLMPOP", 0, 1, "l", "LEFT", "COUNT", 0},
	{"ZADD", "z", 4, "v", 5, "u"}, {"BZMPOP", "x", 1, "z", "MIN"}, {"BZMPOP", 0, 1, "z", "LEFT"}, {"BZMPOP", 0, 2, "nokey", "z", "MAX", "COUNT", 2},
	{"BZMPOP", 0, 1, "z", "MIN", "COUNT", 10}, {"EXISTS", "z"},
	{"EVAL", "return redis.call('blpop', KEYS[1], 0)", 1, "l"}, {"EVAL", "return redis.call('blmpop', 0, 1, KEYS[1], 'LEFT')", 1, "l"},
	{"EVAL", "return redis.call('blmpop', 0, 1, KEYS[1], 'LEFT')", 1, "nokey"}, {"EVAL", "return redis.call('bzmpop', 0, 1, KEYS[1], 'MIN')", 1, "nokey"},
}

// TestBlockingPopsMatchRedis sends blockingPopsScript to redis-server and
// to limitdb, in RESP2 and then RESP3, and wants the same replies.
func TestBlockingPopsMatchRedis(t *testing.T) {
	t.Parallel()
	scriptMatchesRedis(t, blockingPopsScript)
}

// blockedClients polls CLIENT LIST until n clients wait in cmd.
func blockedClients(t *testing.T, c *redis.Client, cmd string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		list, err := c.ClientList(ctx).Result()
		require.NoError(t, err)
		if strings.Count(list, "cmd="+cmd+" ") >= n {
			return
		}
		require.True(t, time.Now().Before(deadline), "%d clients blocked in %s: %s", n, cmd, list)
		time.Sleep(5 * time.Millisecond)
	}
}

// blockedServe runs the blocking scenario on a server: clients block in
// order, one writer wakes them; it returns every reply, in a fixed order.
func blockedServe(t *testing.T, opt *redis.Options) []string {
	t.Helper()
	conns := make([]*redis.Client, 4)
	for i := range conns {
		o := *opt
		o.PoolSize, o.ReadTimeout = 1, -1
		conns[i] = redis.NewClient(&o)
		defer conns[i].Close()
	}
	w := conns[3]
	require.NoError(t, w.FlushAll(ctx).Err())
	var out []string
	scenario := func(name string, blockers [][]any, wake ...[]any) {
		res := make([]chan string, len(blockers))
		seen := map[string]int{}
		for i, b := range blockers {
			cmd := strings.ToLower(b[0].(string))
			seen[cmd]++
			res[i] = make(chan string, 1)
			go func(c *redis.Client, cmd []any, ch chan string) {
				ch <- typesReply(c.Do(context.Background(), cmd...).Result())
			}(conns[i], b, res[i])
			blockedClients(t, w, cmd, seen[cmd])
		}
		for _, cmd := range wake {
			out = append(out, name+" write: "+typesReply(w.Do(ctx, cmd...).Result()))
		}
		for i, ch := range res {
			select {
			case r := <-ch:
				out = append(out, fmt.Sprintf("%s client %d: %s", name, i, r))
			case <-time.After(30 * time.Second):
				t.Fatalf("%s: client %d not served", name, i)
			}
		}
	}
	scenario("fifo", [][]any{{"BLPOP", "k1", "k2", 0}, {"BRPOP", "k2", 0}}, []any{"RPUSH", "k2", "x", "y", "z"}, []any{"LRANGE", "k2", 0, -1})
	scenario("move", [][]any{{"BLMOVE", "src", "dst", "LEFT", "RIGHT", 0}, {"BLPOP", "dst", 0}}, []any{"RPUSH", "src", "v"}, []any{"EXISTS", "src", "dst"})
	scenario("zset", [][]any{{"BZPOPMIN", "z", 0}, {"BZMPOP", 0, 1, "z", "MAX", "COUNT", 5}}, []any{"ZADD", "z", 1, "a", 2, "b", 3, "c"}, []any{"EXISTS", "z"})
	scenario("lmpop", [][]any{{"BLMPOP", 0, 2, "m1", "m2", "LEFT", "COUNT", 2}}, []any{"RPUSH", "m2", 1, 2, 3}, []any{"LRANGE", "m2", 0, -1})
	scenario("multi", [][]any{{"BRPOPLPUSH", "q", "q2", 0}}, []any{"EVAL", "redis.call('rpush', KEYS[1], 'a'); return redis.call('rpush', KEYS[1], 'b')", 1, "q"}, []any{"LRANGE", "q2", 0, -1})
	// Inside MULTI a blocking pop does not wait.
	cmds, err := w.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "BLPOP", "none", 0)
		p.Do(ctx, "BLMOVE", "none", "x", "LEFT", "LEFT", 0)
		p.Do(ctx, "BZPOPMAX", "none", 0)
		p.Do(ctx, "RPUSH", "none", 1)
		p.Do(ctx, "BLPOP", "none", 0)
		return nil
	})
	if err != redis.Nil {
		require.NoError(t, err)
	}
	for _, c := range cmds {
		out = append(out, "in multi: "+typesReply(c.(*redis.Cmd).Result()))
	}
	return out
}

// TestBlockingPopsServeInRedisOrder: clients blocked on keys are served
// first blocked, first served, by the write that makes their key ready
// (a BLMOVE's destination in turn), as redis-server serves them, and in
// MULTI a blocking pop answers at once.
func TestBlockingPopsServeInRedisOrder(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	theirs := startRedis(t)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			opt := *theirs.Options()
			opt.Protocol = proto
			want := blockedServe(t, &opt)
			got := blockedServe(t, &redis.Options{Addr: ts.addr, Protocol: proto})
			require.Equal(t, want, got)
		})
	}
}

// TestBlockingPopTimesOut: a timeout in fractional seconds passes on the
// server's clock, and the client gets nil; a client that closes while
// blocked pops nothing.
func TestBlockingPopTimesOut(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	w := ts.client(t, 2)
	c := redis.NewClient(&redis.Options{Addr: ts.addr, PoolSize: 1, ReadTimeout: -1})
	defer c.Close()
	res := make(chan error, 1)
	go func() { res <- c.Do(context.Background(), "BLPOP", "k", "1.5").Err() }()
	blockedClients(t, w, "blpop", 1)
	stop := ts.stepping(100 * time.Millisecond)
	select {
	case err := <-res:
		require.ErrorIs(t, err, redis.Nil)
	case <-time.After(30 * time.Second):
		t.Fatal("BLPOP did not time out")
	}
	stop()
	// A killed client leaves its queue: the push stays.
	k := redis.NewClient(&redis.Options{Addr: ts.addr, PoolSize: 1, ReadTimeout: -1})
	defer k.Close()
	id, err := k.ClientID(ctx).Result()
	require.NoError(t, err)
	go func() { k.Do(context.Background(), "BLPOP", "gone", 0) }()
	blockedClients(t, w, "blpop", 1)
	require.NoError(t, w.Do(ctx, "CLIENT", "KILL", "ID", id).Err())
	require.NoError(t, w.RPush(ctx, "gone", "v").Err())
	require.Equal(t, int64(1), w.LLen(ctx, "gone").Val())
}

// TestFamilyWritesReachAReplica: the new writes (a STORE, a move, a
// served blocking pop, ZMPOP) reach a replica as their effect.
func TestFamilyWritesReachAReplica(t *testing.T) {
	t.Parallel()
	p, r := startServer(t), startServer(t)
	pc, rc := p.client(t, 2), r.client(t, 2)
	replicate(t, rc, p)
	for _, cmd := range [][]any{
		{"ZADD", "a", 1, "x", 2, "y"}, {"ZADD", "b", 3, "y", 4, "z"}, {"ZUNIONSTORE", "u", 2, "a", "b"}, {"ZINTERSTORE", "i", 2, "a", "b"},
		{"ZDIFFSTORE", "d", 2, "a", "b"}, {"ZRANGESTORE", "r", "u", 0, 1}, {"ZMPOP", 1, "b", "MAX"}, {"ZREMRANGEBYLEX", "d", "-", "+"},
		{"RPUSH", "l", 1, 2, 3}, {"LMOVE", "l", "l2", "LEFT", "RIGHT"}, {"RPOPLPUSH", "l", "l2"}, {"LMPOP", 1, "l", "LEFT"},
	} {
		require.NoError(t, pc.Do(ctx, cmd...).Err(), "%v", cmd)
	}
	bc := redis.NewClient(&redis.Options{Addr: p.addr, PoolSize: 1, ReadTimeout: -1})
	defer bc.Close()
	res := make(chan []string, 1)
	go func() { res <- bc.BLPop(context.Background(), 0, "q").Val() }()
	blockedClients(t, pc, "blpop", 1)
	require.NoError(t, pc.RPush(ctx, "q", "v1", "v2").Err())
	require.Equal(t, []string{"q", "v1"}, <-res)
	n, err := pc.Do(ctx, "WAIT", 1, 5000).Int()
	require.NoError(t, err)
	require.Equal(t, 1, n)
	want := keyspaceOf(t, p.srv.Engine())
	for _, k := range []string{"u", "i", "r", "l2", "q"} {
		require.Contains(t, want, k)
	}
	require.NotContains(t, want, "d")
	require.Equal(t, want, keyspaceOf(t, r.srv.Engine()), "the replica's keyspace")
	require.Equal(t, []string{"v2"}, rc.LRange(ctx, "q", 0, -1).Val())
}
