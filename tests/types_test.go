package tests

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/limitdb/limitdb/clock"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// typesScript covers every hash, set, sorted set, list and string command that
// limitdb added for Lua limiter libraries, with their options and errors.
// Replies must not depend on the clock (limitdb runs a fake one) nor on a
// hash table's order: the hashes and sets whose members HGETALL, HKEYS,
// HVALS and SMEMBERS list are small (listpack, intset), except where the
// step is marked unordered.
var typesScript = []struct {
	cmd       []any
	unordered bool
}{
	// Hashes.
	{cmd: []any{"HSET", "h", "a", "1", "b", "2"}}, {cmd: []any{"HSET", "h", "a", "3", "c", "x"}}, {cmd: []any{"HSET", "h", "a"}},
	{cmd: []any{"HSET", "h", "a", "1", "b"}}, {cmd: []any{"HSET", "h"}}, {cmd: []any{"HMSET", "h", "d", "4"}}, {cmd: []any{"HMSET", "h", "d"}},
	{cmd: []any{"HGET", "h", "a"}}, {cmd: []any{"HGET", "h", "zz"}}, {cmd: []any{"HGET", "nohash", "a"}},
	{cmd: []any{"HMGET", "h", "a", "zz", "c"}}, {cmd: []any{"HMGET", "nohash", "a", "b"}},
	{cmd: []any{"HGETALL", "h"}}, {cmd: []any{"HKEYS", "h"}}, {cmd: []any{"HVALS", "h"}},
	{cmd: []any{"HGETALL", "nohash"}}, {cmd: []any{"HKEYS", "nohash"}}, {cmd: []any{"HVALS", "nohash"}},
	{cmd: []any{"HLEN", "h"}}, {cmd: []any{"HLEN", "nohash"}}, {cmd: []any{"HEXISTS", "h", "a"}}, {cmd: []any{"HEXISTS", "h", "zz"}},
	{cmd: []any{"HSETNX", "h", "a", "9"}}, {cmd: []any{"HSETNX", "h", "e", "9"}}, {cmd: []any{"HSETNX", "h2", "a", "1"}},
	{cmd: []any{"HINCRBY", "h", "a", 10}}, {cmd: []any{"HINCRBY", "h", "new", -5}}, {cmd: []any{"HINCRBY", "h", "c", 1}},
	{cmd: []any{"HINCRBY", "h", "a", "x"}}, {cmd: []any{"HINCRBY", "h", "a", "1.5"}},
	{cmd: []any{"HSET", "h", "big", "9223372036854775807"}}, {cmd: []any{"HINCRBY", "h", "big", 1}}, {cmd: []any{"HINCRBY", "h", "big", -1}},
	{cmd: []any{"HSET", "h", "lead", "010"}}, {cmd: []any{"HINCRBY", "h", "lead", 1}},
	{cmd: []any{"HINCRBYFLOAT", "h", "f", "0.1"}}, {cmd: []any{"HINCRBYFLOAT", "h", "f", "0.2"}}, {cmd: []any{"HINCRBYFLOAT", "h", "f", "-0.3"}},
	{cmd: []any{"HINCRBYFLOAT", "h", "f", "1e3"}}, {cmd: []any{"HINCRBYFLOAT", "h", "f", "abc"}}, {cmd: []any{"HINCRBYFLOAT", "h", "f", "inf"}},
	{cmd: []any{"HINCRBYFLOAT", "h", "c", "1"}}, {cmd: []any{"HINCRBYFLOAT", "h", "a", "2.5"}}, {cmd: []any{"HINCRBYFLOAT", "h", "f", " 1"}},
	{cmd: []any{"HSET", "hf", "huge", "1e4000"}}, {cmd: []any{"HINCRBYFLOAT", "hf", "huge", "1"}}, {cmd: []any{"HSTRLEN", "hf", "huge"}},
	{cmd: []any{"HINCRBYFLOAT", "hf", "x", "1e4000"}}, {cmd: []any{"HINCRBYFLOAT", "hf", "x", "1e5000"}}, {cmd: []any{"HINCRBYFLOAT", "hf", "y", "1e-5000"}},
	{cmd: []any{"HINCRBYFLOAT", "hf", "o", "1e4932"}}, {cmd: []any{"HINCRBYFLOAT", "hf", "o", "1e4932"}}, {cmd: []any{"HINCRBYFLOAT", "hf", "o", "1.19e4932"}},
	{cmd: []any{"INCRBYFLOAT", "of", "1e4932"}}, {cmd: []any{"INCRBYFLOAT", "of", "1e4932"}}, {cmd: []any{"INCRBYFLOAT", "of", "-1e4932"}},
	{cmd: []any{"HINCRBYFLOAT", "h", "g", "5.0e3"}}, {cmd: []any{"HINCRBYFLOAT", "h", "g", "-5000"}}, {cmd: []any{"HGET", "h", "g"}},
	{cmd: []any{"HGETALL", "h"}},
	{cmd: []any{"HDEL", "h", "a", "zz", "b"}}, {cmd: []any{"HDEL", "nohash", "a"}}, {cmd: []any{"HGETALL", "h"}},
	{cmd: []any{"HSET", "h", "a", "again"}}, {cmd: []any{"HKEYS", "h"}},
	{cmd: []any{"HSET", "one", "f", "v"}}, {cmd: []any{"HDEL", "one", "f"}}, {cmd: []any{"EXISTS", "one"}}, {cmd: []any{"TYPE", "one"}},
	{cmd: []any{"OBJECT", "ENCODING", "h"}},
	{cmd: []any{"HSET", "long", "f", strings.Repeat("v", 64)}}, {cmd: []any{"OBJECT", "ENCODING", "long"}},
	{cmd: []any{"HSET", "long", "g", strings.Repeat("v", 65)}}, {cmd: []any{"OBJECT", "ENCODING", "long"}},
	{cmd: []any{"HDEL", "long", "g"}}, {cmd: []any{"OBJECT", "ENCODING", "long"}}, {cmd: []any{"HGETALL", "long"}},
	{cmd: append([]any{"HSET", "many"}, pairs(128)...)}, {cmd: []any{"OBJECT", "ENCODING", "many"}}, {cmd: []any{"HGETALL", "many"}},
	{cmd: []any{"HSET", "many", "f128", "v"}}, {cmd: []any{"OBJECT", "ENCODING", "many"}}, {cmd: []any{"HLEN", "many"}},
	{cmd: []any{"HGETALL", "many"}, unordered: true}, {cmd: []any{"HGET", "many", "f7"}}, {cmd: []any{"HINCRBY", "many", "f7", 2}},
	{cmd: []any{"TYPE", "h"}},

	// Sets.
	{cmd: []any{"SADD", "s", 3, 1, 2, 2}}, {cmd: []any{"SADD", "s", 1}}, {cmd: []any{"SMEMBERS", "s"}}, {cmd: []any{"OBJECT", "ENCODING", "s"}},
	{cmd: []any{"SADD", "s", "-7", "10"}}, {cmd: []any{"SMEMBERS", "s"}}, {cmd: []any{"SADD", "s", "010"}}, {cmd: []any{"OBJECT", "ENCODING", "s"}},
	{cmd: []any{"SMEMBERS", "s"}, unordered: true}, {cmd: []any{"SISMEMBER", "s", 3}}, {cmd: []any{"SISMEMBER", "s", "010"}}, {cmd: []any{"SISMEMBER", "s", 4}},
	{cmd: []any{"SISMEMBER", "noset", 1}}, {cmd: []any{"SMISMEMBER", "s", 1, 4, "010"}}, {cmd: []any{"SMISMEMBER", "noset", 1, 2}},
	{cmd: []any{"SCARD", "s"}}, {cmd: []any{"SCARD", "noset"}}, {cmd: []any{"SMEMBERS", "noset"}},
	{cmd: []any{"SREM", "s", 1, 4, "010"}}, {cmd: []any{"SREM", "noset", 1}}, {cmd: []any{"SCARD", "s"}},
	{cmd: []any{"SADD", "w", "b", "a"}}, {cmd: []any{"OBJECT", "ENCODING", "w"}}, {cmd: []any{"SREM", "w", "a", "b"}}, {cmd: []any{"EXISTS", "w"}},
	{cmd: append([]any{"SADD", "ints"}, numbers(512)...)}, {cmd: []any{"OBJECT", "ENCODING", "ints"}},
	{cmd: []any{"SADD", "ints", 100000}}, {cmd: []any{"OBJECT", "ENCODING", "ints"}}, {cmd: []any{"SCARD", "ints"}},
	{cmd: []any{"SADD"}}, {cmd: []any{"SADD", "s"}}, {cmd: []any{"TYPE", "s"}},

	// Sorted sets.
	{cmd: []any{"ZADD", "z", 1, "a", 2, "b", 3, "c"}}, {cmd: []any{"ZADD", "z", 1, "a"}}, {cmd: []any{"ZADD", "z", "CH", 5, "a", 6, "d"}},
	{cmd: []any{"ZADD", "z", "NX", 9, "a", 7, "e"}}, {cmd: []any{"ZADD", "z", "XX", 9, "a", 8, "f"}}, {cmd: []any{"ZADD", "z", "XX", "CH", 9, "a", 2, "b"}},
	{cmd: []any{"ZADD", "z", "GT", "CH", 1, "a", 10, "b"}}, {cmd: []any{"ZADD", "z", "LT", "CH", 1, "a", 20, "b"}},
	{cmd: []any{"ZADD", "z", "GT", 0, "new"}}, {cmd: []any{"ZADD", "z", "XX", "GT", 100, "new2"}},
	{cmd: []any{"ZADD", "z", "INCR", 2.5, "a"}}, {cmd: []any{"ZADD", "z", "INCR", 2.5, "brandnew"}}, {cmd: []any{"ZADD", "z", "NX", "INCR", 1, "a"}},
	{cmd: []any{"ZADD", "z", "XX", "INCR", 1, "nope"}}, {cmd: []any{"ZADD", "z", "GT", "INCR", -1, "a"}}, {cmd: []any{"ZADD", "z", "LT", "INCR", -1, "a"}},
	{cmd: []any{"ZADD", "z", "XX", "NX", 1, "a"}}, {cmd: []any{"ZADD", "z", "GT", "LT", 1, "a"}}, {cmd: []any{"ZADD", "z", "NX", "GT", 1, "a"}},
	{cmd: []any{"ZADD", "z", "NX", "LT", 1, "a"}}, {cmd: []any{"ZADD", "z", "INCR", 1, "a", 2, "b"}},
	{cmd: []any{"ZADD", "z", "abc", "a"}}, {cmd: []any{"ZADD", "z", "nan", "a"}}, {cmd: []any{"ZADD", "z", "1e400", "a"}}, {cmd: []any{"ZADD", "z", "1e-400", "a"}},
	{cmd: []any{"ZADD", "z", " 1", "a"}}, {cmd: []any{"ZADD", "z", 1}}, {cmd: []any{"ZADD", "z", 1, "a", 2}}, {cmd: []any{"ZADD", "z", "CH"}},
	{cmd: []any{"ZADD", "z", "1", "a", "x", "b"}}, {cmd: []any{"ZADD", "nozset", "XX", 1, "a"}}, {cmd: []any{"EXISTS", "nozset"}},
	{cmd: []any{"ZADD", "inf", "+inf", "p", "-inf", "n", "0.1", "x", "1e20", "y", "-0", "zero", "123456789.123", "w", "3.0", "t"}},
	{cmd: []any{"ZRANGE", "inf", 0, -1, "WITHSCORES"}}, {cmd: []any{"ZADD", "inf", "INCR", "-inf", "p"}}, {cmd: []any{"ZSCORE", "inf", "p"}},
	{cmd: []any{"ZADD", "inf", "INCR", "1", "p"}}, {cmd: []any{"ZSCORE", "inf", "x"}}, {cmd: []any{"ZSCORE", "inf", "zero"}},
	{cmd: []any{"ZADD", "inf", "INCR", "0.2", "x"}},
	{cmd: []any{"ZCARD", "z"}}, {cmd: []any{"ZCARD", "nozset"}}, {cmd: []any{"ZSCORE", "z", "a"}}, {cmd: []any{"ZSCORE", "z", "nope"}}, {cmd: []any{"ZSCORE", "nozset", "a"}},
	{cmd: []any{"ZRANK", "z", "a"}}, {cmd: []any{"ZRANK", "z", "d"}}, {cmd: []any{"ZRANK", "z", "nope"}}, {cmd: []any{"ZRANK", "nozset", "a"}},
	{cmd: []any{"ZRANGE", "z", 0, -1}}, {cmd: []any{"ZRANGE", "z", 0, -1, "WITHSCORES"}}, {cmd: []any{"ZRANGE", "z", 1, 2}}, {cmd: []any{"ZRANGE", "z", -2, -1}},
	{cmd: []any{"ZRANGE", "z", -100, 100}}, {cmd: []any{"ZRANGE", "z", 3, 1}}, {cmd: []any{"ZRANGE", "z", 50, 60}}, {cmd: []any{"ZRANGE", "z", 0, -1, "REV"}},
	{cmd: []any{"ZRANGE", "z", 0, 1, "REV", "WITHSCORES"}}, {cmd: []any{"ZRANGE", "z", "x", 1}}, {cmd: []any{"ZRANGE", "z", 0, 1, "LIMIT", 0, 1}},
	{cmd: []any{"ZRANGE", "z", "-inf", "+inf", "BYSCORE"}}, {cmd: []any{"ZRANGE", "z", "(2", "6", "BYSCORE", "WITHSCORES"}},
	{cmd: []any{"ZRANGE", "z", "6", "(2", "BYSCORE", "REV"}}, {cmd: []any{"ZRANGE", "z", "2", "6", "BYSCORE", "REV"}},
	{cmd: []any{"ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", 1, 2}}, {cmd: []any{"ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", 1, -1}},
	{cmd: []any{"ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", -1, 2}}, {cmd: []any{"ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", 0, 0}},
	{cmd: []any{"ZRANGE", "z", "+inf", "-inf", "BYSCORE", "REV", "LIMIT", 1, 2, "WITHSCORES"}}, {cmd: []any{"ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", 100, 2}},
	{cmd: []any{"ZRANGE", "z", "x", "2", "BYSCORE"}}, {cmd: []any{"ZRANGE", "z", "(", "2", "BYSCORE"}}, {cmd: []any{"ZRANGE", "z", "1", "((2", "BYSCORE"}},
	{cmd: []any{"ZRANGE", "z", "0", "1", "BYSCORE", "BYLEX"}}, {cmd: []any{"ZRANGE", "z", "0", "1", "REV", "REV"}}, {cmd: []any{"ZRANGE", "z", "0", "1", "LIMIT", 1}},
	{cmd: []any{"ZRANGE", "z", "0", "1", "FOO"}}, {cmd: []any{"ZRANGE", "z", "0", "1", "BYSCORE", "LIMIT", "x", 1}},
	{cmd: []any{"ZRANGE", "nozset", 0, -1}}, {cmd: []any{"ZRANGE", "nozset", 0, -1, "WITHSCORES"}},
	{cmd: []any{"ZADD", "lex", 0, "a", 0, "b", 0, "c", 0, "d", 0, "e"}},
	{cmd: []any{"ZRANGE", "lex", "-", "+", "BYLEX"}}, {cmd: []any{"ZRANGE", "lex", "[b", "(d", "BYLEX"}}, {cmd: []any{"ZRANGE", "lex", "(b", "[d", "BYLEX", "LIMIT", 1, 5}},
	{cmd: []any{"ZRANGE", "lex", "+", "-", "BYLEX", "REV"}}, {cmd: []any{"ZRANGE", "lex", "[d", "(b", "BYLEX", "REV"}}, {cmd: []any{"ZRANGE", "lex", "+", "[c", "BYLEX", "REV", "LIMIT", 0, 1}},
	{cmd: []any{"ZRANGE", "lex", "b", "d", "BYLEX"}}, {cmd: []any{"ZRANGE", "lex", "-", "+", "BYLEX", "WITHSCORES"}}, {cmd: []any{"ZRANGE", "lex", "[z", "+", "BYLEX"}},
	{cmd: []any{"ZRANGEBYSCORE", "z", "-inf", "+inf"}}, {cmd: []any{"ZRANGEBYSCORE", "z", "(1", "(9", "WITHSCORES"}}, {cmd: []any{"ZRANGEBYSCORE", "z", "2", "10", "LIMIT", 1, 1}},
	{cmd: []any{"ZRANGEBYSCORE", "z", "2", "10", "WITHSCORES", "LIMIT", 0, 2}}, {cmd: []any{"ZRANGEBYSCORE", "z", "2", "10", "REV"}}, {cmd: []any{"ZRANGEBYSCORE", "z", "2", "10", "BYSCORE"}},
	{cmd: []any{"ZRANGEBYSCORE", "z", "a", "10"}}, {cmd: []any{"ZRANGEBYSCORE", "nozset", 0, 1}},
	{cmd: []any{"ZCOUNT", "z", "-inf", "+inf"}}, {cmd: []any{"ZCOUNT", "z", "(2", "9"}}, {cmd: []any{"ZCOUNT", "z", "2", "(9"}}, {cmd: []any{"ZCOUNT", "z", "9", "2"}},
	{cmd: []any{"ZCOUNT", "z", "x", "2"}}, {cmd: []any{"ZCOUNT", "nozset", 0, 1}},
	{cmd: []any{"ZREM", "z", "a", "nope"}}, {cmd: []any{"ZREM", "nozset", "a"}}, {cmd: []any{"ZRANGE", "z", 0, -1, "WITHSCORES"}},
	{cmd: []any{"ZREMRANGEBYSCORE", "z", "(5", "8"}}, {cmd: []any{"ZREMRANGEBYSCORE", "z", "x", "8"}}, {cmd: []any{"ZREMRANGEBYSCORE", "nozset", 0, 1}},
	{cmd: []any{"ZRANGE", "z", 0, -1, "WITHSCORES"}},
	{cmd: []any{"ZREMRANGEBYRANK", "z", 0, 0}}, {cmd: []any{"ZREMRANGEBYRANK", "z", -1, -1}}, {cmd: []any{"ZREMRANGEBYRANK", "z", 5, 1}},
	{cmd: []any{"ZREMRANGEBYRANK", "z", "x", 1}}, {cmd: []any{"ZREMRANGEBYRANK", "nozset", 0, 1}}, {cmd: []any{"ZRANGE", "z", 0, -1, "WITHSCORES"}},
	{cmd: []any{"ZADD", "pop", 3, "c", 1, "a", 2, "b", 4, "d"}}, {cmd: []any{"ZPOPMIN", "pop"}}, {cmd: []any{"ZPOPMIN", "pop", 2}},
	{cmd: []any{"ZPOPMIN", "pop", 0}}, {cmd: []any{"ZPOPMIN", "pop", -1}}, {cmd: []any{"ZPOPMIN", "pop", "x"}}, {cmd: []any{"ZPOPMIN", "pop", 1, 2}},
	{cmd: []any{"ZPOPMIN", "pop", 10}}, {cmd: []any{"EXISTS", "pop"}}, {cmd: []any{"ZPOPMIN", "pop"}}, {cmd: []any{"ZPOPMIN", "nozset", 2}},
	{cmd: []any{"ZADD", "gone", 1, "a"}}, {cmd: []any{"ZREMRANGEBYSCORE", "gone", "-inf", "+inf"}}, {cmd: []any{"EXISTS", "gone"}},
	{cmd: []any{"OBJECT", "ENCODING", "z"}}, {cmd: []any{"ZADD", "zl", 1, strings.Repeat("m", 65)}}, {cmd: []any{"OBJECT", "ENCODING", "zl"}},
	{cmd: append([]any{"ZADD", "zmany"}, scored(129)...)}, {cmd: []any{"OBJECT", "ENCODING", "zmany"}}, {cmd: []any{"ZRANK", "zmany", "m100"}},
	{cmd: []any{"ZRANGE", "zmany", 10, 12, "WITHSCORES"}}, {cmd: []any{"ZCOUNT", "zmany", 10, "(20"}}, {cmd: []any{"TYPE", "z"}},

	{cmd: []any{"ZREVRANGE", "zmany", 0, 3}}, {cmd: []any{"ZREVRANGE", "zmany", -3, -1, "WITHSCORES"}}, {cmd: []any{"ZREVRANGE", "zmany", 0, 1, "REV"}},
	{cmd: []any{"ZREVRANGE", "zmany", 0, 1, "LIMIT", 0, 1}}, {cmd: []any{"ZREVRANGE", "zmany", 0, 1, "BYSCORE"}}, {cmd: []any{"ZREVRANGE", "nozset", 0, 1}},
	{cmd: []any{"ZREVRANGEBYSCORE", "zmany", "10", "(8", "WITHSCORES"}}, {cmd: []any{"ZREVRANGEBYSCORE", "zmany", "+inf", "-inf", "LIMIT", 2, 3}},
	{cmd: []any{"ZREVRANGEBYSCORE", "zmany", "8", "10"}}, {cmd: []any{"ZREVRANGEBYSCORE", "zmany", "x", "10"}},
	{cmd: []any{"ZRANGEBYLEX", "lex", "[b", "+"}}, {cmd: []any{"ZRANGEBYLEX", "lex", "-", "(c", "LIMIT", 1, 1}}, {cmd: []any{"ZRANGEBYLEX", "lex", "-", "+", "WITHSCORES"}},
	{cmd: []any{"ZRANGEBYLEX", "lex", "x", "+"}}, {cmd: []any{"ZREVRANGEBYLEX", "lex", "+", "[b"}}, {cmd: []any{"ZREVRANGEBYLEX", "lex", "(d", "-", "LIMIT", 0, 2}},
	{cmd: []any{"ZINCRBY", "zi", 2, "m"}}, {cmd: []any{"ZINCRBY", "zi", "0.5", "m"}}, {cmd: []any{"ZINCRBY", "zi", "x", "m"}}, {cmd: []any{"ZINCRBY", "zi", "nx", "m"}},
	{cmd: []any{"ZINCRBY", "zi", "+inf", "m"}}, {cmd: []any{"ZINCRBY", "zi", "-inf", "m"}}, {cmd: []any{"ZINCRBY", "h", 1, "m"}},
	{cmd: []any{"ZREVRANK", "lex", "a"}}, {cmd: []any{"ZREVRANK", "lex", "e"}}, {cmd: []any{"ZREVRANK", "lex", "zz"}}, {cmd: []any{"ZREVRANK", "nozset", "a"}},
	{cmd: []any{"ZMSCORE", "zmany", "m3", "nope", "m128"}}, {cmd: []any{"ZMSCORE", "nozset", "a", "b"}}, {cmd: []any{"ZMSCORE", "h", "a"}},
	{cmd: []any{"ZADD", "pmax", 1, "a", 2, "b", 3, "c"}}, {cmd: []any{"ZPOPMAX", "pmax"}}, {cmd: []any{"ZPOPMAX", "pmax", 5}}, {cmd: []any{"EXISTS", "pmax"}},
	{cmd: []any{"ZPOPMAX", "pmax", -1}}, {cmd: []any{"ZPOPMAX", "nozset"}},

	// Lists.
	{cmd: []any{"LPUSH", "l", "a", "b", "c"}}, {cmd: []any{"RPUSH", "l", "d", "e"}}, {cmd: []any{"LRANGE", "l", 0, -1}}, {cmd: []any{"LLEN", "l"}},
	{cmd: []any{"LPUSH", "l"}}, {cmd: []any{"RPUSH"}}, {cmd: []any{"LPUSHX", "nolist", "a"}}, {cmd: []any{"RPUSHX", "nolist", "a"}}, {cmd: []any{"EXISTS", "nolist"}},
	{cmd: []any{"LPUSHX", "l", "x", "y"}}, {cmd: []any{"RPUSHX", "l", "z"}}, {cmd: []any{"LRANGE", "l", 0, -1}},
	{cmd: []any{"LINDEX", "l", 0}}, {cmd: []any{"LINDEX", "l", -1}}, {cmd: []any{"LINDEX", "l", -9}}, {cmd: []any{"LINDEX", "l", -10}}, {cmd: []any{"LINDEX", "l", 9}},
	{cmd: []any{"LINDEX", "l", "x"}}, {cmd: []any{"LINDEX", "nolist", "x"}}, {cmd: []any{"LINDEX", "nolist", 0}}, {cmd: []any{"LINDEX", "l", "01"}},
	{cmd: []any{"LRANGE", "l", 1, 3}}, {cmd: []any{"LRANGE", "l", -3, -1}}, {cmd: []any{"LRANGE", "l", -100, 100}}, {cmd: []any{"LRANGE", "l", 5, 2}},
	{cmd: []any{"LRANGE", "l", 20, 30}}, {cmd: []any{"LRANGE", "l", 0, "x"}}, {cmd: []any{"LRANGE", "nolist", 0, -1}}, {cmd: []any{"LRANGE", "nolist", "x", 1}},
	{cmd: []any{"LRANGE", "l", "9223372036854775807", "-9223372036854775808"}}, {cmd: []any{"LRANGE", "l", "-9223372036854775808", "9223372036854775807"}},
	{cmd: []any{"LSET", "l", 0, "first"}}, {cmd: []any{"LSET", "l", -1, "last"}}, {cmd: []any{"LSET", "l", 9, "x"}}, {cmd: []any{"LSET", "l", -10, "x"}},
	{cmd: []any{"LSET", "l", "x", "x"}}, {cmd: []any{"LSET", "nolist", 0, "x"}}, {cmd: []any{"LSET", "nolist", "x", "x"}}, {cmd: []any{"LRANGE", "l", 0, -1}},
	{cmd: []any{"RPUSH", "r", "a", "b", "a", "c", "a", "b", "a"}},
	{cmd: []any{"LREM", "r", 2, "a"}}, {cmd: []any{"LRANGE", "r", 0, -1}}, {cmd: []any{"LREM", "r", -1, "a"}}, {cmd: []any{"LRANGE", "r", 0, -1}},
	{cmd: []any{"LREM", "r", 0, "b"}}, {cmd: []any{"LREM", "r", 0, "zz"}}, {cmd: []any{"LREM", "r", "x", "a"}}, {cmd: []any{"LREM", "nolist", 1, "a"}},
	{cmd: []any{"LREM", "r", "-9223372036854775808", "c"}}, {cmd: []any{"LREM", "r", 1, "a"}}, {cmd: []any{"EXISTS", "r"}},
	{cmd: []any{"RPUSH", "i", "a", "b", "c"}}, {cmd: []any{"LINSERT", "i", "BEFORE", "b", "x"}}, {cmd: []any{"LINSERT", "i", "after", "c", "y"}},
	{cmd: []any{"LINSERT", "i", "BEFORE", "a", "z"}}, {cmd: []any{"LINSERT", "i", "AFTER", "nope", "q"}}, {cmd: []any{"LINSERT", "i", "MIDDLE", "a", "q"}},
	{cmd: []any{"LINSERT", "nolist", "BEFORE", "a", "q"}}, {cmd: []any{"LINSERT", "nolist", "NEAR", "a", "q"}}, {cmd: []any{"LINSERT", "i", "BEFORE", "a"}},
	{cmd: []any{"LRANGE", "i", 0, -1}},
	{cmd: []any{"RPUSH", "p", "a", "b", "c", "d", "e"}}, {cmd: []any{"LPOP", "p"}}, {cmd: []any{"RPOP", "p"}}, {cmd: []any{"LPOP", "p", 2}},
	{cmd: []any{"LPOP", "p", 0}}, {cmd: []any{"RPOP", "p", -1}}, {cmd: []any{"RPOP", "p", "x"}}, {cmd: []any{"LPOP", "p", 1, 2}},
	{cmd: []any{"RPOP", "p", 5}}, {cmd: []any{"EXISTS", "p"}}, {cmd: []any{"LPOP", "p"}}, {cmd: []any{"LPOP", "p", 2}}, {cmd: []any{"RPOP", "nolist", 0}},
	{cmd: []any{"RPOP", "nolist"}}, {cmd: []any{"RPUSH", "p", "last"}}, {cmd: []any{"LPOP", "p", 1}}, {cmd: []any{"EXISTS", "p"}},
	{cmd: []any{"RPUSH", "t", 1, 2, 3, 4, 5, 6}}, {cmd: []any{"LTRIM", "t", 1, -2}}, {cmd: []any{"LRANGE", "t", 0, -1}}, {cmd: []any{"LTRIM", "t", 0, 100}},
	{cmd: []any{"LTRIM", "t", -2, -1}}, {cmd: []any{"LRANGE", "t", 0, -1}}, {cmd: []any{"LTRIM", "t", "x", 1}}, {cmd: []any{"LTRIM", "nolist", 0, 1}},
	{cmd: []any{"LTRIM", "nolist", 0, "x"}}, {cmd: []any{"LTRIM", "t", 5, 1}}, {cmd: []any{"EXISTS", "t"}}, {cmd: []any{"RPUSH", "t", "a"}},
	{cmd: []any{"LTRIM", "t", 1, -1}}, {cmd: []any{"EXISTS", "t"}},
	{cmd: []any{"RPUSH", "pos", "a", "b", "c", "1", "2", "3", "c", "c"}}, {cmd: []any{"LPOS", "pos", "c"}}, {cmd: []any{"LPOS", "pos", "zz"}},
	{cmd: []any{"LPOS", "pos", "c", "RANK", 2}}, {cmd: []any{"LPOS", "pos", "c", "RANK", -1}}, {cmd: []any{"LPOS", "pos", "c", "RANK", -3}}, {cmd: []any{"LPOS", "pos", "c", "RANK", 4}},
	{cmd: []any{"LPOS", "pos", "c", "COUNT", 2}}, {cmd: []any{"LPOS", "pos", "c", "COUNT", 0}}, {cmd: []any{"LPOS", "pos", "c", "COUNT", 0, "RANK", -2}},
	{cmd: []any{"LPOS", "pos", "c", "COUNT", 0, "MAXLEN", 7}}, {cmd: []any{"LPOS", "pos", "c", "MAXLEN", 2}}, {cmd: []any{"LPOS", "pos", "c", "RANK", -1, "MAXLEN", 1}},
	{cmd: []any{"LPOS", "pos", "zz", "COUNT", 3}}, {cmd: []any{"LPOS", "pos", "c", "rank", 2, "count", 1, "maxlen", 0}},
	{cmd: []any{"LPOS", "pos", "c", "RANK", 0}}, {cmd: []any{"LPOS", "pos", "c", "RANK", "x"}}, {cmd: []any{"LPOS", "pos", "c", "RANK", "-9223372036854775808"}},
	{cmd: []any{"LPOS", "pos", "c", "COUNT", -1}}, {cmd: []any{"LPOS", "pos", "c", "COUNT", "x"}}, {cmd: []any{"LPOS", "pos", "c", "MAXLEN", -1}},
	{cmd: []any{"LPOS", "pos", "c", "MAXLEN", "x"}}, {cmd: []any{"LPOS", "pos", "c", "RANK"}}, {cmd: []any{"LPOS", "pos", "c", "FOO", 1}},
	{cmd: []any{"LPOS", "nolist", "c"}}, {cmd: []any{"LPOS", "nolist", "c", "COUNT", 1}}, {cmd: []any{"LPOS", "nolist", "c", "RANK", 0}},
	{cmd: []any{"OBJECT", "ENCODING", "l"}}, {cmd: append([]any{"RPUSH", "lmany"}, numbers(200)...)}, {cmd: []any{"OBJECT", "ENCODING", "lmany"}},
	{cmd: []any{"RPUSH", "llong", strings.Repeat("v", 100)}}, {cmd: []any{"OBJECT", "ENCODING", "llong"}}, {cmd: []any{"LINDEX", "lmany", 150}},
	{cmd: []any{"LRANGE", "lmany", -3, -1}}, {cmd: []any{"LTRIM", "lmany", 0, 2}}, {cmd: []any{"OBJECT", "ENCODING", "lmany"}}, {cmd: []any{"TYPE", "l"}},
	// Strings.
	{cmd: []any{"INCRBYFLOAT", "fl", "0.1"}}, {cmd: []any{"INCRBYFLOAT", "fl", "0.2"}}, {cmd: []any{"INCRBYFLOAT", "fl", "-0.3"}}, {cmd: []any{"GET", "fl"}},
	{cmd: []any{"INCRBYFLOAT", "fl", "1.5e10"}}, {cmd: []any{"INCRBYFLOAT", "fl", "x"}}, {cmd: []any{"INCRBYFLOAT", "fl", "inf"}}, {cmd: []any{"INCRBYFLOAT", "fl", ""}},
	{cmd: []any{"INCRBYFLOAT", "fl", "3.0000000000000000001"}}, {cmd: []any{"INCRBYFLOAT", "fl", "-1e-20"}},
	{cmd: []any{"SET", "str", "abc"}}, {cmd: []any{"INCRBYFLOAT", "str", "1"}}, {cmd: []any{"SET", "n5", "5"}}, {cmd: []any{"INCRBYFLOAT", "n5", "-5"}},
	{cmd: []any{"SET", "sp", " 5"}}, {cmd: []any{"INCRBYFLOAT", "sp", "1"}}, {cmd: []any{"SET", "bigf", "1e4000"}}, {cmd: []any{"INCRBYFLOAT", "bigf", "1"}},
	{cmd: []any{"GETSET", "gs", "a"}}, {cmd: []any{"GETSET", "gs", "b"}}, {cmd: []any{"GET", "gs"}},
	{cmd: []any{"SET", "gst", "a", "EX", 100}}, {cmd: []any{"GETSET", "gst", "b"}}, {cmd: []any{"TTL", "gst"}},
	{cmd: []any{"GETDEL", "gs"}}, {cmd: []any{"GETDEL", "gs"}}, {cmd: []any{"EXISTS", "gs"}},
	{cmd: []any{"SET", "ge", "v"}}, {cmd: []any{"GETEX", "ge"}}, {cmd: []any{"GETEX", "ge", "EX", 100}}, {cmd: []any{"TTL", "ge"}},
	{cmd: []any{"GETEX", "ge", "PERSIST"}}, {cmd: []any{"TTL", "ge"}}, {cmd: []any{"GETEX", "ge", "PX", 100000}}, {cmd: []any{"TTL", "ge"}},
	{cmd: []any{"GETEX", "ge", "EXAT", 4102444800}}, {cmd: []any{"EXPIRETIME", "ge"}}, {cmd: []any{"GETEX", "ge", "PXAT", "4102444800123"}}, {cmd: []any{"PEXPIRETIME", "ge"}},
	{cmd: []any{"GETEX", "ge", "EX", 0}}, {cmd: []any{"GETEX", "ge", "EX", -1}}, {cmd: []any{"GETEX", "ge", "EX", "x"}}, {cmd: []any{"GETEX", "ge", "EX"}},
	{cmd: []any{"GETEX", "ge", "EX", 1, "PX", 1}}, {cmd: []any{"GETEX", "ge", "PERSIST", "EX", 1}}, {cmd: []any{"GETEX", "ge", "KEEPTTL"}}, {cmd: []any{"GETEX", "ge", "NX"}},
	{cmd: []any{"GETEX", "absent", "EX", 0}}, {cmd: []any{"GETEX", "absent"}}, {cmd: []any{"GETEX", "ge", "PXAT", 1}}, {cmd: []any{"EXISTS", "ge"}},
	{cmd: []any{"EXPIRETIME", "absent"}}, {cmd: []any{"PEXPIRETIME", "h"}},

	// Every kind against every other: WRONGTYPE.
	{cmd: []any{"GET", "h"}}, {cmd: []any{"INCR", "s"}}, {cmd: []any{"INCRBYFLOAT", "z", 1}}, {cmd: []any{"GETSET", "h", 1}}, {cmd: []any{"GETDEL", "z"}},
	{cmd: []any{"GETEX", "s"}}, {cmd: []any{"STRLEN", "h"}}, {cmd: []any{"MGET", "h", "s", "z", "str"}},
	{cmd: []any{"HSET", "s", "a", 1}}, {cmd: []any{"HGET", "z", "a"}}, {cmd: []any{"HMGET", "str", "a"}}, {cmd: []any{"HGETALL", "s"}}, {cmd: []any{"HKEYS", "z"}},
	{cmd: []any{"HVALS", "str"}}, {cmd: []any{"HLEN", "s"}}, {cmd: []any{"HEXISTS", "z", "a"}}, {cmd: []any{"HSETNX", "str", "a", 1}}, {cmd: []any{"HDEL", "s", "a"}},
	{cmd: []any{"HINCRBY", "z", "a", 1}}, {cmd: []any{"HINCRBYFLOAT", "str", "a", 1}}, {cmd: []any{"HMSET", "z", "a", 1}},
	{cmd: []any{"SADD", "h", 1}}, {cmd: []any{"SREM", "z", 1}}, {cmd: []any{"SISMEMBER", "str", 1}}, {cmd: []any{"SMISMEMBER", "h", 1}}, {cmd: []any{"SCARD", "z"}},
	{cmd: []any{"SMEMBERS", "str"}},
	{cmd: []any{"ZADD", "h", 1, "a"}}, {cmd: []any{"ZADD", "h", "x", "a"}}, {cmd: []any{"ZREM", "s", "a"}}, {cmd: []any{"ZCARD", "str"}}, {cmd: []any{"ZCOUNT", "h", 0, 1}},
	{cmd: []any{"ZSCORE", "s", "a"}}, {cmd: []any{"ZRANK", "str", "a"}}, {cmd: []any{"ZRANGE", "h", 0, 1}}, {cmd: []any{"ZRANGEBYSCORE", "s", 0, 1}},
	{cmd: []any{"ZREMRANGEBYSCORE", "str", 0, 1}}, {cmd: []any{"ZREMRANGEBYRANK", "h", 0, 1}}, {cmd: []any{"ZPOPMIN", "s"}}, {cmd: []any{"ZPOPMIN", "s", 0}},
	{cmd: []any{"GET", "l"}}, {cmd: []any{"HGET", "l", "a"}}, {cmd: []any{"SADD", "l", 1}}, {cmd: []any{"ZADD", "l", 1, "a"}}, {cmd: []any{"ZCARD", "l"}},
	{cmd: []any{"LPUSH", "h", "a"}}, {cmd: []any{"RPUSH", "s", "a"}}, {cmd: []any{"LPUSHX", "z", "a"}}, {cmd: []any{"RPUSHX", "str", "a"}},
	{cmd: []any{"LPOP", "h"}}, {cmd: []any{"RPOP", "s", 2}}, {cmd: []any{"LPOP", "z", "x"}}, {cmd: []any{"LLEN", "str"}}, {cmd: []any{"LINDEX", "h", 0}},
	{cmd: []any{"LINDEX", "s", "x"}}, {cmd: []any{"LRANGE", "z", 0, -1}}, {cmd: []any{"LRANGE", "z", "x", -1}}, {cmd: []any{"LTRIM", "str", 0, 1}},
	{cmd: []any{"LSET", "h", 0, "a"}}, {cmd: []any{"LSET", "h", "x", "a"}}, {cmd: []any{"LREM", "s", 0, "a"}}, {cmd: []any{"LINSERT", "z", "BEFORE", "a", "b"}},
	{cmd: []any{"LINSERT", "z", "ASIDE", "a", "b"}}, {cmd: []any{"LPOS", "str", "a"}}, {cmd: []any{"LPOS", "str", "a", "RANK", 0}}, {cmd: []any{"INCR", "l"}},

	// The keyspace commands work on the new types as on strings.
	{cmd: []any{"EXPIRE", "h", 100}}, {cmd: []any{"TTL", "h"}}, {cmd: []any{"EXPIRE", "s", 100, "NX"}}, {cmd: []any{"PERSIST", "h"}}, {cmd: []any{"TTL", "h"}},
	{cmd: []any{"EXPIREAT", "z", 4102444800}}, {cmd: []any{"EXPIRETIME", "z"}}, {cmd: []any{"EXISTS", "h", "s", "z", "nohash"}},
	{cmd: []any{"EXPIRE", "l", 100}}, {cmd: []any{"TTL", "l"}}, {cmd: []any{"LPUSH", "l", "kept"}}, {cmd: []any{"LTRIM", "l", 0, 1}}, {cmd: []any{"TTL", "l"}},
	{cmd: []any{"PERSIST", "l"}}, {cmd: []any{"TTL", "l"}},
	{cmd: []any{"SET", "h", "now a string"}}, {cmd: []any{"TYPE", "h"}}, {cmd: []any{"GET", "h"}},
	{cmd: []any{"DEL", "s", "z", "nope"}}, {cmd: []any{"EXISTS", "s", "z"}}, {cmd: []any{"EXPIRE", "one", 0}},
	{cmd: []any{"HSET", "past", "a", 1}}, {cmd: []any{"PEXPIREAT", "past", 1}}, {cmd: []any{"EXISTS", "past"}},
	{cmd: []any{"HSET", "rh", "f", "v"}}, {cmd: []any{"EXPIRE", "rh", 100}}, {cmd: []any{"RENAME", "rh", "rh2"}}, {cmd: []any{"HGETALL", "rh2"}},
	{cmd: []any{"TTL", "rh2"}}, {cmd: []any{"EXISTS", "rh"}}, {cmd: []any{"RENAME", "rh", "x"}}, {cmd: []any{"RENAME", "rh2", "rh2"}},
	{cmd: []any{"SET", "rs", "v"}}, {cmd: []any{"RENAME", "rs", "rh2"}}, {cmd: []any{"TYPE", "rh2"}}, {cmd: []any{"ZADD", "rz", 1, "m"}},
	{cmd: []any{"RENAMENX", "rz", "rh2"}}, {cmd: []any{"RENAMENX", "rz", "rz2"}}, {cmd: []any{"ZRANGE", "rz2", 0, -1, "WITHSCORES"}},
	{cmd: []any{"RENAMENX", "rz2", "rz2"}}, {cmd: []any{"RENAMENX", "nothing", "rz2"}}, {cmd: []any{"RENAME", "rz2"}},
	{cmd: []any{"OBJECT", "ENCODING", "nothing"}}, {cmd: []any{"OBJECT", "ENCODING", "str"}}, {cmd: []any{"OBJECT", "ENCODING", "n5"}},
	{cmd: []any{"SET", "longstr", strings.Repeat("x", 45)}}, {cmd: []any{"OBJECT", "ENCODING", "longstr"}}, {cmd: []any{"SET", "n42", "42"}}, {cmd: []any{"OBJECT", "ENCODING", "n42"}},
}

func pairs(n int) []any {
	var out []any
	for i := 0; i < n; i++ {
		out = append(out, fmt.Sprintf("f%d", i), fmt.Sprintf("v%d", i))
	}
	return out
}

func numbers(n int) []any {
	var out []any
	for i := 0; i < n; i++ {
		out = append(out, i*3-700)
	}
	return out
}

func scored(n int) []any {
	var out []any
	for i := 0; i < n; i++ {
		out = append(out, float64(i)/2, fmt.Sprintf("m%d", i))
	}
	return out
}

// TestTypesMatchRedis sends typesScript to redis-server and to limitdb, in
// RESP2 and then RESP3, and wants the same replies, errors included.
// limitdb's compact encodings end where those of redis.conf as shipped
// do: Redis 7.0's compiled-in hash-max-listpack-entries is 512, its
// redis.conf's 128.
func TestTypesMatchRedis(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	theirs2 := startRedis(t)
	require.NoError(t, theirs2.ConfigSet(ctx, "hash-max-listpack-entries", "128").Err())
	inBothProtocols(t, ts, theirs2, func(t *testing.T, ours, theirs *redis.Client) {
		for i, step := range typesScript {
			want := typesReply(theirs.Do(ctx, step.cmd...).Result())
			got := typesReply(ours.Do(ctx, step.cmd...).Result())
			if step.unordered {
				want, got = sortedReply(want), sortedReply(got)
			}
			if got != want {
				t.Errorf("step %d %.200v: limitdb %.300s, redis %.300s", i, step.cmd, got, want)
			}
		}
	})
}

// typesReply is reply, with RESP3 doubles printed exactly.
func typesReply(v any, err error) string {
	if f, ok := v.(float64); ok && err == nil {
		return fmt.Sprintf("float64 %v", f)
	}
	return reply(v, err)
}

// sortedReply sorts the words of a printed array reply, for replies whose
// order Redis leaves unspecified.
func sortedReply(s string) string {
	words := strings.Fields(strings.NewReplacer("[", " ", "]", " ", "map", " ", ":", " ").Replace(s))
	sort.Strings(words)
	return strings.Join(words, " ")
}

// TestTypesCommandInfo: COMMAND INFO describes each new command as Redis
// does: arity, flags and key positions.
func TestTypesCommandInfo(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	ours, theirs := ts.client(t, 2), startRedis(t)
	names := map[string]bool{}
	for _, step := range typesScript {
		names[strings.ToLower(step.cmd[0].(string))] = true
	}
	delete(names, "object")
	for _, n := range []string{"object|encoding"} {
		names[n] = true
	}
	for name := range names {
		want, got := commandInfo(t, theirs, name), commandInfo(t, ours, name)
		if got != want {
			t.Errorf("COMMAND INFO %s: limitdb %s, redis %s", name, got, want)
		}
	}
}

// commandInfo is a command's arity, sorted flags and key positions.
func commandInfo(t *testing.T, c *redis.Client, name string) string {
	t.Helper()
	v, err := c.Do(ctx, "COMMAND", "INFO", name).Slice()
	require.NoError(t, err)
	info, ok := v[0].([]any)
	require.True(t, ok, "COMMAND INFO %s: %v", name, v)
	var flags []string
	for _, f := range info[2].([]any) {
		flags = append(flags, fmt.Sprint(f))
	}
	sort.Strings(flags)
	return fmt.Sprintf("arity %v flags %v keys %v %v %v", info[1], flags, info[3], info[4], info[5])
}

// typesLoad writes hashes, sets, sorted sets and lists on c, small and large,
// with and without expiry, and removes some of them again.
func typesLoad(t *testing.T, c *redis.Client, prefix string) {
	t.Helper()
	for _, cmd := range [][]any{
		{"HSET", prefix + "h", "tokens", 10, "ts", "1700000000123"}, {"HINCRBY", prefix + "h", "tokens", -3},
		{"HINCRBYFLOAT", prefix + "h", "rate", "0.1"}, {"PEXPIRE", prefix + "h", 60000},
		append([]any{"HSET", prefix + "hbig"}, pairs(200)...), {"HDEL", prefix + "hbig", "f3"},
		{"SADD", prefix + "ints", 5, 3, 9}, {"SADD", prefix + "words", "a", "b", "c"}, {"SREM", prefix + "words", "b"},
		{"ZADD", prefix + "log", 1700000000.1, "r1", 1700000000.2, "r2", 1700000000.3, "r3"},
		{"ZREMRANGEBYSCORE", prefix + "log", "-inf", "(1700000000.2"}, {"EXPIRE", prefix + "log", 100},
		append([]any{"ZADD", prefix + "zbig"}, scored(300)...), {"ZREMRANGEBYRANK", prefix + "zbig", 0, 9},
		{"HSET", prefix + "gone", "f", "v"}, {"HDEL", prefix + "gone", "f"},
		{"ZADD", prefix + "zgone", 1, "m"}, {"ZPOPMIN", prefix + "zgone"},
		{"LPUSH", prefix + "l", "1700000000.1", "1700000000.2", "1700000000.3"}, {"LTRIM", prefix + "l", 0, 1}, {"EXPIRE", prefix + "l", 60},
		append([]any{"RPUSH", prefix + "lbig"}, numbers(300)...), {"LSET", prefix + "lbig", 5, strings.Repeat("x", 100)}, {"LPOP", prefix + "lbig", 2},
		{"RPUSH", prefix + "lgone", "a", "b"}, {"RPOP", prefix + "lgone", 2},
	} {
		require.NoError(t, c.Do(ctx, cmd...).Err(), "%.80v", cmd)
	}
}

// TestTypesSurviveASnapshot: after SAVE and a load into a new server, the
// keyspace is the same entry for entry, and answers alike.
func TestTypesSurviveASnapshot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := serverFromDir(t, clock.NewFake(t0), dir)
	ca := a.client(t, 3)
	typesLoad(t, ca, "")
	require.NoError(t, ca.Do(ctx, "SAVE").Err())
	b := serverFromDir(t, clock.NewFake(t0), dir)
	cb := b.client(t, 3)
	want := keyspaceOf(t, a.srv.Engine())
	require.Len(t, want, 8)
	require.Equal(t, want, keyspaceOf(t, b.srv.Engine()))
	for _, cmd := range [][]any{
		{"HGETALL", "h"}, {"PTTL", "h"}, {"HLEN", "hbig"}, {"HGET", "hbig", "f150"}, {"SMEMBERS", "ints"},
		{"SCARD", "words"}, {"ZRANGE", "log", 0, -1, "WITHSCORES"}, {"TTL", "log"}, {"ZRANGE", "zbig", 0, 4, "WITHSCORES"},
		{"ZCARD", "zbig"}, {"OBJECT", "ENCODING", "zbig"}, {"OBJECT", "ENCODING", "h"}, {"EXISTS", "gone", "zgone", "lgone"},
		{"LRANGE", "l", 0, -1}, {"PTTL", "l"}, {"LRANGE", "lbig", 0, 5}, {"LLEN", "lbig"}, {"OBJECT", "ENCODING", "lbig"},
	} {
		require.Equal(t, typesReply(ca.Do(ctx, cmd...).Result()), typesReply(cb.Do(ctx, cmd...).Result()), "%v", cmd)
	}
}

// TestTypesReachAReplica: hashes, sorted sets and lists written before a replica
// connects (the full copy) and after (the stream), deletions by emptying
// included, reach it byte for byte.
func TestTypesReachAReplica(t *testing.T) {
	t.Parallel()
	p, r := startServer(t), startServer(t)
	pc, rc := p.client(t, 2), r.client(t, 2)
	typesLoad(t, pc, "before:")
	replicate(t, rc, p)
	typesLoad(t, pc, "after:")
	require.NoError(t, pc.Do(ctx, "HSET", "before:h", "tokens", 7).Err())
	require.NoError(t, pc.Do(ctx, "ZREM", "before:log", "r2", "r3").Err()) // empties it: the key goes
	require.NoError(t, pc.Do(ctx, "LPUSH", "before:l", "1700000000.4").Err())
	require.NoError(t, pc.Do(ctx, "LTRIM", "before:lbig", 1, 0).Err()) // empties it
	n, err := pc.Do(ctx, "WAIT", 1, 5000).Int()
	require.NoError(t, err)
	require.Equal(t, 1, n, "WAIT 1: the replica acknowledged")
	want := keyspaceOf(t, p.srv.Engine())
	for _, k := range []string{"before:h", "after:h", "before:zbig", "after:log", "after:hbig", "before:l", "after:lbig"} {
		require.Contains(t, want, k)
	}
	require.NotContains(t, want, "before:log")
	require.NotContains(t, want, "before:lbig")
	require.Equal(t, want, keyspaceOf(t, r.srv.Engine()), "the replica's keyspace")
	require.Equal(t, "7", rc.HGet(ctx, "before:h", "tokens").Val())
	require.Equal(t, pc.ZRangeWithScores(ctx, "after:zbig", 0, -1).Val(), rc.ZRangeWithScores(ctx, "after:zbig", 0, -1).Val())
	require.Equal(t, []string{"1700000000.4", "1700000000.3", "1700000000.2"}, rc.LRange(ctx, "before:l", 0, -1).Val())
	err = rc.Do(ctx, "HSET", "after:h", "x", 1).Err()
	require.EqualError(t, err, "READONLY You can't write against a read only replica.")
}
