package tests

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// notifyScript runs on limitdb and on redis-server with every keyspace
// notification on; "expire!" lets k's time to live run out on each (a
// real wait on Redis, a step of the fake clock on limitdb) and then reads
// it, so that active or lazy expiry deletes it on both.
var notifyScript = [][]any{
	{"set", "s", "1"}, {"set", "s", "2", "ex", "100"}, {"setex", "s2", "10", "v"}, {"setnx", "s2", "x"},
	{"incrby", "n", "3"}, {"incr", "n"}, {"decr", "n"}, {"incrbyfloat", "f", "1.5"}, {"append", "s", "x"},
	{"mset", "m1", "a", "m2", "b"}, {"getset", "m1", "c"}, {"getdel", "m2"}, {"getex", "m1", "ex", "50"},
	{"getex", "m1", "persist"}, {"expire", "m1", "100"}, {"persist", "m1"}, {"expire", "m1", "-1"},
	{"del", "s", "nosuch"}, {"set", "r", "1"}, {"rename", "r", "r2"}, {"renamenx", "r2", "r3"}, {"copy", "r3", "r4"},
	{"lpush", "l", "a", "b"}, {"rpush", "l", "c", "d"}, {"lpushx", "nolist", "a"}, {"linsert", "l", "before", "c", "x"},
	{"lset", "l", "0", "z"}, {"lrem", "l", "1", "x"}, {"ltrim", "l", "0", "2"}, {"lpop", "l"}, {"rpop", "l"},
	{"rpush", "l", "a", "b"}, {"lmove", "l", "l2", "left", "right"}, {"rpoplpush", "l", "l2"}, {"lmpop", "1", "l2", "left", "count", "5"},
	{"sadd", "t", "a", "b", "c"}, {"srem", "t", "a"}, {"smove", "t", "t2", "b"}, {"sadd", "u", "c", "d"},
	{"sinterstore", "t3", "t", "u"}, {"sunionstore", "t4", "t", "u"}, {"sdiffstore", "t4", "t", "t"}, {"spop", "u", "5"},
	{"hset", "h", "a", "1", "b", "2"}, {"hsetnx", "h", "a", "x"}, {"hincrby", "h", "a", "2"}, {"hincrbyfloat", "h", "b", "0.5"},
	{"hdel", "h", "a", "b"},
	{"zadd", "z", "1", "a", "2", "b", "3", "c", "4", "d"}, {"zincrby", "z", "1", "a"}, {"zadd", "z", "incr", "1", "a"},
	{"zrem", "z", "a"}, {"zremrangebyscore", "z", "0", "2"}, {"zunionstore", "z2", "1", "z"}, {"zinterstore", "z3", "2", "z", "z2"},
	{"zrangestore", "z4", "z", "0", "-1"}, {"zpopmin", "z"}, {"zpopmax", "z3", "5"}, {"zremrangebyrank", "z4", "0", "-1"},
	{"zadd", "z5", "1", "a", "1", "b"}, {"zremrangebylex", "z5", "[a", "[a"}, {"zmpop", "1", "z5", "min"},
	{"set", "k", "v"}, {"pexpire", "k", "50"}, {"expire!"}, {"exists", "k"},
	{"set", "k", "v"}, {"pexpire", "k", "50"}, {"expire!"}, {"set", "k", "again"},
}

func TestKeyspaceNotificationsMatchRedis(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	ours := ts.client(t, 2)
	theirs := startRedis(t)
	events := func(c *redis.Client, expire func()) []string {
		require.NoError(t, c.ConfigSet(ctx, "notify-keyspace-events", "KEA").Err())
		sub := c.PSubscribe(ctx, "__key*__:*", "end")
		defer sub.Close()
		_, err := sub.Receive(ctx)
		require.NoError(t, err)
		_, err = sub.Receive(ctx)
		require.NoError(t, err)
		for _, cmd := range notifyScript {
			if cmd[0] == "expire!" {
				expire()
				continue
			}
			c.Do(ctx, cmd...) // errors (wrong type) are part of the script
		}
		require.NoError(t, c.Publish(ctx, "end", "x").Err())
		var got []string
		ch := sub.Channel()
		deadline := time.After(30 * time.Second)
		for {
			select {
			case m := <-ch:
				if m.Channel == "end" {
					return got
				}
				got = append(got, m.Channel+" "+m.Payload)
			case <-deadline:
				t.Fatalf("no end of the events; so far %q", got)
			}
		}
	}
	want := events(theirs, func() { time.Sleep(100 * time.Millisecond) })
	got := events(ours, func() { ts.clk.Advance(time.Second) })
	require.NotEmpty(t, want)
	for i := 0; i < max(len(got), len(want)); i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("event %d: limitdb %q, redis %q", i, g, w)
		}
	}
}

func TestNotifyKeyspaceEventsConfigMatchesRedis(t *testing.T) {
	t.Parallel()
	ours := startServer(t).client(t, 2)
	theirs := startRedis(t)
	for _, v := range []string{"", "KEA", "Kg$lshzxetdmn", "Ex", "AKEmn", "gg", "Q", "KEz!", "K", "$lshzxe"} {
		try := func(c *redis.Client) (string, string) {
			setErr := fmt.Sprint(c.ConfigSet(ctx, "notify-keyspace-events", v).Err())
			return setErr, fmt.Sprint(c.ConfigGet(ctx, "notify-keyspace-events").Val())
		}
		gotErr, got := try(ours)
		wantErr, want := try(theirs)
		require.Equal(t, wantErr, gotErr, "CONFIG SET %q", v)
		require.Equal(t, want, got, "CONFIG GET after %q", v)
	}
}
