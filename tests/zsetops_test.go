package tests

import (
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// zsetOpsScript covers the sorted-set operations across keys, the
// lexicographic ranges, ZRANDMEMBER's deterministic cases and ZMPOP, with
// their options and errors, in the order Redis checks them.
var zsetOpsScript = [][]any{
	{"ZADD", "a", 1, "x", 2, "y", 3, "z"}, {"ZADD", "b", 10, "y", 20, "z", 30, "w"}, {"SADD", "s", "x", "w", "q"},
	{"ZADD", "inf", "+inf", "x", "-inf", "y"}, {"ZADD", "ninf", "-inf", "x", "+inf", "y"}, {"SET", "str", "v"},
	// numkeys and options
	{"ZUNIONSTORE", "d", 0, "a"}, {"ZUNIONSTORE", "d", -1, "a"}, {"ZUNIONSTORE", "d", 3, "a", "b"}, {"ZUNIONSTORE", "d", "x", "a"},
	{"ZUNION", 0, "a"}, {"ZINTER", 0, "a"}, {"ZDIFF", 0, "a"}, {"ZDIFFSTORE", "d", 0, "a"}, {"ZINTERSTORE", "d", 0, "a"},
	{"ZUNIONSTORE", "d", 2, "a", "b", "WEIGHTS", 1, "x"}, {"ZUNIONSTORE", "d", 2, "a", "b", "WEIGHTS", 1},
	{"ZUNIONSTORE", "d", 2, "a", "b", "AGGREGATE", "foo"}, {"ZUNIONSTORE", "d", 2, "a", "b", "AGGREGATE"},
	{"ZUNIONSTORE", "d", 2, "a", "b", "WITHSCORES"}, {"ZDIFF", 1, "a", "WEIGHTS", 1}, {"ZDIFFSTORE", "d", 1, "a", "AGGREGATE", "SUM"},
	{"ZUNION", 2, "a", "str"}, {"ZUNION", 2, "a", "str", "foo"}, {"ZINTERSTORE", "d", 2, "str", "a", "WEIGHTS", "x", "y"},
	{"ZUNIONSTORE", "d", 1, "a", "WEIGHTS", "nan"}, {"ZUNIONSTORE", "d", 1, "a", "WEIGHTS", " 1"},
	// union, intersection, difference
	{"ZUNIONSTORE", "d", 2, "a", "b"}, {"ZRANGE", "d", 0, -1, "WITHSCORES"},
	{"ZUNIONSTORE", "d", 3, "a", "b", "s", "WEIGHTS", 2, 0.5, 3, "AGGREGATE", "MAX"}, {"ZRANGE", "d", 0, -1, "WITHSCORES"},
	{"ZUNION", 3, "a", "b", "s", "AGGREGATE", "min", "WITHSCORES"}, {"ZUNION", 2, "a", "nokey"}, {"ZUNION", 1, "nokey", "WITHSCORES"},
	{"ZINTERSTORE", "d", 2, "a", "b"}, {"ZRANGE", "d", 0, -1, "WITHSCORES"}, {"ZINTER", 2, "a", "b", "WEIGHTS", 1, -1, "WITHSCORES"},
	{"ZINTER", 3, "a", "b", "s", "withscores"}, {"ZINTER", 2, "a", "s", "withscores"},
	{"ZINTERSTORE", "d", 2, "a", "nokey"}, {"EXISTS", "d"}, {"ZINTERSTORE", "d", 2, "a", "nokey"},
	{"ZDIFFSTORE", "d", 2, "a", "b"}, {"ZRANGE", "d", 0, -1, "WITHSCORES"}, {"ZDIFF", 2, "b", "a", "WITHSCORES"}, {"ZDIFF", 3, "b", "a", "s"},
	{"ZDIFF", 1, "nokey"}, {"ZDIFF", 2, "nokey", "str"},
	{"ZUNION", 2, "inf", "ninf", "WITHSCORES"}, {"ZINTER", 2, "inf", "inf", "WEIGHTS", 0, 1, "WITHSCORES"},
	{"ZUNION", 1, "inf", "WEIGHTS", "-inf", "WITHSCORES"},
	// the destination replaces what was there, expiry included, and may be a source
	{"SET", "dst", "v", "EX", 100}, {"ZUNIONSTORE", "dst", 1, "a"}, {"TTL", "dst"}, {"TYPE", "dst"},
	{"ZUNIONSTORE", "a2", 1, "a"}, {"ZUNIONSTORE", "a2", 2, "a2", "b", "WEIGHTS", 1, 2}, {"ZRANGE", "a2", 0, -1, "WITHSCORES"},
	{"ZINTERSTORE", "a2", 2, "a2", "a2"}, {"ZRANGE", "a2", 0, -1, "WITHSCORES"},
	{"ZUNIONSTORE", "str2", 1, "str"},
	// ZINTERCARD
	{"ZINTERCARD", 0, "a"}, {"ZINTERCARD", 3, "a", "b"}, {"ZINTERCARD", 1, "a", "LIMIT", -1}, {"ZINTERCARD", 1, "a", "LIMIT", "x"},
	{"ZINTERCARD", "x", "a"}, {"ZINTERCARD", 1, "a", "LIMIT", 1, "LIMIT"}, {"ZINTERCARD", 1, "str", "LIMIT", -1},
	{"ZINTERCARD", 2, "a", "b"}, {"ZINTERCARD", 2, "a", "b", "LIMIT", 1}, {"ZINTERCARD", 2, "a", "b", "LIMIT", 0}, {"ZINTERCARD", 2, "a", "s"},
	{"ZINTERCARD", 1, "a", "WITHSCORES"}, {"ZINTERCARD", 2, "a", "nokey"},
	// ZRANGESTORE
	{"ZRANGESTORE", "r", "a", 0, -1}, {"ZRANGE", "r", 0, -1, "WITHSCORES"}, {"ZRANGESTORE", "r", "a", 0, -1, "WITHSCORES"},
	{"ZRANGESTORE", "r", "a", "(1", "+inf", "BYSCORE", "LIMIT", 0, 1}, {"ZRANGE", "r", 0, -1, "WITHSCORES"},
	{"ZRANGESTORE", "r", "a", "+inf", "-inf", "BYSCORE", "REV"}, {"ZRANGE", "r", 0, -1},
	{"ZRANGESTORE", "r", "a", 5, 10}, {"EXISTS", "r"}, {"ZRANGESTORE", "r", "nokey", 0, -1}, {"ZRANGESTORE", "r", "str", 0, -1},
	{"ZRANGESTORE", "r", "a", 0, -1, "LIMIT", 0, 1}, {"ZRANGESTORE", "r", "a", "x", -1}, {"ZRANGESTORE", "r", "a", "[a", "[z", "BYLEX"},
	{"ZRANGESTORE", "a", "a", 0, 0}, {"ZRANGE", "a", 0, -1, "WITHSCORES"}, {"ZADD", "a", 2, "y", 3, "z"},
	// lexicographic ranges
	{"ZADD", "lex", 0, "a", 0, "b", 0, "c", 0, "d", 0, "e"},
	{"ZLEXCOUNT", "lex", "-", "+"}, {"ZLEXCOUNT", "lex", "[b", "(d"}, {"ZLEXCOUNT", "lex", "(b", "[d"}, {"ZLEXCOUNT", "lex", "[d", "[b"},
	{"ZLEXCOUNT", "lex", "b", "[d"}, {"ZLEXCOUNT", "lex", "[b", "d"}, {"ZLEXCOUNT", "nokey", "-", "+"}, {"ZLEXCOUNT", "str", "-", "+"},
	{"ZLEXCOUNT", "str", "x", "+"}, {"ZLEXCOUNT", "lex", "+", "-"}, {"ZLEXCOUNT", "lex", "[c", "[c"}, {"ZLEXCOUNT", "lex", "(c", "[c"},
	{"ZREMRANGEBYLEX", "lex", "[b", "(d"}, {"ZRANGE", "lex", 0, -1}, {"ZREMRANGEBYLEX", "lex", "x", "+"}, {"ZREMRANGEBYLEX", "str", "-", "+"},
	{"ZREMRANGEBYLEX", "nokey", "-", "+"}, {"ZREMRANGEBYLEX", "lex", "-", "+"}, {"EXISTS", "lex"},
	// ZRANDMEMBER, where its answer does not depend on chance
	{"ZRANDMEMBER", "a", "-9223372036854775808"}, {"ZRANDMEMBER", "a", "9223372036854775807", "WITHSCORES"},
	{"ZRANDMEMBER", "a", "-9223372036854775807", "WITHSCORES"}, {"ZRANDMEMBER", "a", "x"}, {"ZRANDMEMBER", "a", 1, "foo"},
	{"ZRANDMEMBER", "a", 1, "WITHSCORES", "x"}, {"ZRANDMEMBER", "nokey"}, {"ZRANDMEMBER", "nokey", 5}, {"ZRANDMEMBER", "str"},
	{"ZRANDMEMBER", "str", 1}, {"ZRANDMEMBER", "a", 0}, {"ZRANDMEMBER", "a", 3}, {"ZRANDMEMBER", "a", 10, "WITHSCORES"},
	{"ZADD", "one", 5, "only"}, {"ZRANDMEMBER", "one"}, {"ZRANDMEMBER", "one", -3, "WITHSCORES"}, {"ZRANDMEMBER", "one", 1, "withscores"},
	// ZMPOP
	{"ZMPOP", 0, "a", "MIN"}, {"ZMPOP", -1, "a", "MIN"}, {"ZMPOP", "x", "a", "MIN"}, {"ZMPOP", 2, "a", "MIN"}, {"ZMPOP", 1, "a", "LEFT"},
	{"ZMPOP", 1, "a", "MIN", "COUNT", 0}, {"ZMPOP", 1, "a", "MIN", "COUNT", "x"}, {"ZMPOP", 1, "a", "MIN", "COUNT", 1, "COUNT", 1},
	{"ZMPOP", 1, "a", "MIN", "COUNT"}, {"ZMPOP", 1, "a", "MIN", "foo"},
	{"ZMPOP", 2, "nokey", "str", "MIN"}, {"ZMPOP", 2, "nokey", "nokey2", "MAX"}, {"ZMPOP", 3, "nokey", "a", "str", "MIN"},
	{"ZMPOP", 1, "a", "MAX", "COUNT", 10}, {"EXISTS", "a"}, {"ZMPOP", 2, "a", "b", "max", "count", 2},
}

// TestZSetOpsMatchRedis sends zsetOpsScript to redis-server and to
// limitdb, in RESP2 and then RESP3, and wants the same replies.
func TestZSetOpsMatchRedis(t *testing.T) {
	t.Parallel()
	scriptMatchesRedis(t, zsetOpsScript)
}

// scriptMatchesRedis sends script to a fresh redis-server and limitdb, in
// RESP2 and then RESP3, each from an empty keyspace, and wants the same
// replies.
func scriptMatchesRedis(t *testing.T, script [][]any) {
	t.Helper()
	ts := startServer(t)
	theirs2 := startRedis(t)
	inBothProtocols(t, ts, theirs2, func(t *testing.T, ours, theirs *redis.Client) {
		for i, cmd := range script {
			want := typesReply(theirs.Do(ctx, cmd...).Result())
			got := typesReply(ours.Do(ctx, cmd...).Result())
			if got != want {
				t.Errorf("step %d %.200v: limitdb %.300s, redis %.300s", i, cmd, got, want)
			}
		}
	})
}

// TestZRandMemberDraws: ZRANDMEMBER's chosen members belong to the set,
// are distinct for a positive count, and are as many as asked.
func TestZRandMemberDraws(t *testing.T) {
	t.Parallel()
	c := startServer(t).client(t, 2)
	members := map[string]bool{}
	args := []any{"ZADD", "z"}
	for i := 0; i < 300; i++ {
		m := fmt.Sprintf("m%d", i)
		members[m] = true
		args = append(args, i, m)
	}
	require.NoError(t, c.Do(ctx, args...).Err())
	for _, count := range []int{1, 5, 150, 299, -5, -1000} {
		got, err := c.Do(ctx, "ZRANDMEMBER", "z", count).StringSlice()
		require.NoError(t, err)
		want := count
		if want < 0 {
			want = -want
		}
		require.Len(t, got, want, "count %d", count)
		seen := map[string]bool{}
		for _, m := range got {
			require.True(t, members[m], "count %d: %q is no member", count, m)
			require.True(t, count < 0 || !seen[m], "count %d: %q twice", count, m)
			seen[m] = true
		}
	}
	m, err := c.Do(ctx, "ZRANDMEMBER", "z").Text()
	require.NoError(t, err)
	require.True(t, members[m])
}

// familyCommands are the sorted-set, list and blocking commands whose
// COMMAND INFO must be Redis's.
var familyCommands = []string{
	"zunionstore", "zinterstore", "zdiffstore", "zunion", "zinter", "zdiff", "zintercard", "zrangestore",
	"zlexcount", "zremrangebylex", "zrandmember", "zmpop", "lmove", "rpoplpush", "lmpop",
	"blpop", "brpop", "blmove", "brpoplpush", "blmpop", "bzpopmin", "bzpopmax", "bzmpop",
}

// TestFamilyCommandInfo: COMMAND INFO describes each of familyCommands as
// Redis does: arity, flags and key positions.
func TestFamilyCommandInfo(t *testing.T) {
	t.Parallel()
	ours, theirs := startServer(t).client(t, 2), startRedis(t)
	for _, name := range familyCommands {
		want, got := commandInfo(t, theirs, name), commandInfo(t, ours, name)
		if got != want {
			t.Errorf("COMMAND INFO %s: limitdb %s, redis %s", name, got, want)
		}
	}
}
