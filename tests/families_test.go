package tests

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// The data-type commands applications send beside their limits (string
// ranges and bits, set operations, the scans, COPY), each compared with a
// real redis-server step by step, in RESP2 and RESP3.

// matchRedisBoth runs steps on fresh keyspaces of limitdb and Redis, in
// RESP2 and then in RESP3.
func matchRedisBoth(t *testing.T, steps ...[]any) {
	t.Helper()
	ts := startServer(t)
	theirs2 := startRedis(t)
	inBothProtocols(t, ts, theirs2, func(t *testing.T, ours, theirs *redis.Client) {
		matchRedis(t, ours, theirs, steps...)
	})
}

// bitField is a string of n bytes to set bits in.
func bitBytes(b ...byte) string { return string(b) }

func TestStringBitsMatchRedis(t *testing.T) {
	t.Parallel()
	matchRedisBoth(t,
		// APPEND
		[]any{"APPEND", "a", "12"}, []any{"OBJECT", "ENCODING", "a"}, []any{"APPEND", "a", "34"}, []any{"GET", "a"},
		[]any{"APPEND", "a", ""}, []any{"STRLEN", "a"}, []any{"APPEND", "e", ""}, []any{"EXISTS", "e"}, []any{"GET", "e"},
		[]any{"SET", "n", 7}, []any{"APPEND", "n", "x"}, []any{"GET", "n"}, []any{"SADD", "set", "m"}, []any{"APPEND", "set", "x"},
		[]any{"SET", "ttl", "v", "EX", 100}, []any{"APPEND", "ttl", "w"}, []any{"TTL", "ttl"},
		// SETRANGE, GETRANGE, SUBSTR
		[]any{"SETRANGE", "r", 5, "abc"}, []any{"GET", "r"}, []any{"SETRANGE", "r", 0, "XY"}, []any{"GET", "r"},
		[]any{"SETRANGE", "r", 6, "zzzz"}, []any{"GET", "r"}, []any{"SETRANGE", "r", 1, ""}, []any{"SETRANGE", "nor", 3, ""}, []any{"EXISTS", "nor"},
		[]any{"SETRANGE", "r", -1, "x"}, []any{"SETRANGE", "r", "x", "x"}, []any{"SETRANGE", "r", 536870911, "xx"}, []any{"SETRANGE", "r", 536870911, ""},
		[]any{"SETRANGE", "nor", 536870912, "x"}, []any{"SETRANGE", "set", 0, "x"}, []any{"SETRANGE", "set", 0, ""}, []any{"SETRANGE", "nor", 0, "123"},
		[]any{"SET", "num", 1234}, []any{"SETRANGE", "num", 1, "9"}, []any{"GET", "num"}, []any{"SETRANGE", "ttl", 0, "q"}, []any{"TTL", "ttl"},
		[]any{"SET", "g", "Hello World"}, []any{"GETRANGE", "g", 0, 4}, []any{"GETRANGE", "g", -5, -1}, []any{"GETRANGE", "g", -1, -5},
		[]any{"GETRANGE", "g", 0, -1}, []any{"GETRANGE", "g", 5, 100}, []any{"GETRANGE", "g", 100, 200}, []any{"GETRANGE", "g", -100, 2},
		[]any{"GETRANGE", "g", 3, 1}, []any{"GETRANGE", "g", "x", 1}, []any{"GETRANGE", "g", 1, "y"}, []any{"GETRANGE", "nog", 0, -1},
		[]any{"GETRANGE", "nog", "x", 1}, []any{"GETRANGE", "set", 0, 1}, []any{"GETRANGE", "num", 1, 2}, []any{"SUBSTR", "g", 1, 3},
		[]any{"GETRANGE", "g", "-9223372036854775808", "9223372036854775807"}, []any{"GETRANGE", "g", -3, "-9223372036854775808"},
		// SETBIT, GETBIT
		[]any{"SETBIT", "b", 7, 1}, []any{"GET", "b"}, []any{"SETBIT", "b", 7, 0}, []any{"SETBIT", "b", 100, 1}, []any{"STRLEN", "b"},
		[]any{"GETBIT", "b", 100}, []any{"GETBIT", "b", 99}, []any{"GETBIT", "b", 100000}, []any{"GETBIT", "nob", 3},
		[]any{"SETBIT", "b", -1, 1}, []any{"SETBIT", "b", 4294967296, 1}, []any{"SETBIT", "b", 4294967295, 2}, []any{"SETBIT", "b", "x", 1},
		[]any{"SETBIT", "b", 1, 2}, []any{"SETBIT", "b", 1, -1}, []any{"SETBIT", "b", 1, "x"}, []any{"GETBIT", "b", -1}, []any{"GETBIT", "b", "x"},
		[]any{"GETBIT", "b", 4294967296}, []any{"SETBIT", "set", 1, 1}, []any{"GETBIT", "set", 1}, []any{"SETBIT", "zero", 3, 0}, []any{"GET", "zero"},
		[]any{"SET", "i", 5}, []any{"GETBIT", "i", 5}, []any{"SETBIT", "i", 6, 1}, []any{"GET", "i"}, []any{"SETBIT", "ttl", 0, 1}, []any{"TTL", "ttl"},
		// BITCOUNT
		[]any{"SET", "c", "foobar"}, []any{"BITCOUNT", "c"}, []any{"BITCOUNT", "c", 0, 0}, []any{"BITCOUNT", "c", 1, 1}, []any{"BITCOUNT", "c", 1, -2},
		[]any{"BITCOUNT", "c", 5, 30, "BIT"}, []any{"BITCOUNT", "c", 0, -1, "bit"}, []any{"BITCOUNT", "c", 1, 1, "BYTE"}, []any{"BITCOUNT", "c", -3, -1, "BIT"},
		[]any{"BITCOUNT", "c", -1, -3}, []any{"BITCOUNT", "c", 3, 1}, []any{"BITCOUNT", "c", 100, 200}, []any{"BITCOUNT", "c", 0, 100, "BIT"},
		[]any{"BITCOUNT", "c", 9, 9, "BIT"}, []any{"BITCOUNT", "c", 9, 14, "BIT"}, []any{"BITCOUNT", "c", 0}, []any{"BITCOUNT", "c", 0, 1, "FOO"},
		[]any{"BITCOUNT", "c", "x", 1}, []any{"BITCOUNT", "c", 0, 1, "BIT", "x"}, []any{"BITCOUNT", "noc"}, []any{"BITCOUNT", "noc", 0}, []any{"BITCOUNT", "noc", "x", "y", "z"},
		[]any{"BITCOUNT", "set"}, []any{"BITCOUNT", "num"}, []any{"BITCOUNT", "e"}, []any{"BITCOUNT", "e", 0, -1},
		// BITPOS
		[]any{"SET", "p", bitBytes(0xff, 0xf0, 0x00)}, []any{"BITPOS", "p", 0}, []any{"BITPOS", "p", 1}, []any{"BITPOS", "p", 0, 2}, []any{"BITPOS", "p", 1, 2},
		[]any{"BITPOS", "p", 0, 2, -1}, []any{"BITPOS", "p", 1, 1, -1}, []any{"BITPOS", "p", 0, 0, 0}, []any{"BITPOS", "p", 1, 7, 15, "BIT"},
		[]any{"BITPOS", "p", 0, 7, 15, "BIT"}, []any{"BITPOS", "p", 0, 3, 5, "BIT"}, []any{"BITPOS", "p", 1, 12, 22, "BIT"}, []any{"BITPOS", "p", 0, -10, -1, "BIT"},
		[]any{"BITPOS", "p", 1, -1}, []any{"BITPOS", "p", 1, 5, 2}, []any{"BITPOS", "p", 2}, []any{"BITPOS", "p", "x"}, []any{"BITPOS", "p", 1, "x"},
		[]any{"BITPOS", "p", 1, 0, "x"}, []any{"BITPOS", "p", 1, 0, 1, "FOO"}, []any{"BITPOS", "p", 1, 0, 1, "BIT", "x"}, []any{"BITPOS", "nop", 0},
		[]any{"BITPOS", "nop", 1}, []any{"BITPOS", "nop", 1, "x"}, []any{"BITPOS", "set", 1}, []any{"BITPOS", "e", 0}, []any{"BITPOS", "e", 1},
		[]any{"SET", "ones", bitBytes(0xff, 0xff)}, []any{"BITPOS", "ones", 0}, []any{"BITPOS", "ones", 0, 0}, []any{"BITPOS", "ones", 0, 0, -1},
		[]any{"BITPOS", "ones", 0, 0, 15, "BIT"}, []any{"BITPOS", "ones", 0, 1, "BIT"}, []any{"BITPOS", "p", 0, 1, "BIT"},
		// BITOP
		[]any{"SET", "x", bitBytes(0x0f, 0xaa)}, []any{"SET", "y", bitBytes(0xf0)}, []any{"BITOP", "AND", "d", "x", "y"}, []any{"GET", "d"},
		[]any{"BITOP", "or", "d", "x", "y"}, []any{"GET", "d"}, []any{"BITOP", "XOR", "d", "x", "y", "nox"}, []any{"GET", "d"},
		[]any{"BITOP", "NOT", "d", "x"}, []any{"GET", "d"}, []any{"BITOP", "NOT", "d", "x", "y"}, []any{"BITOP", "NAND", "d", "x"},
		[]any{"BITOP", "AND", "d", "nox", "noy"}, []any{"EXISTS", "d"}, []any{"BITOP", "AND", "x", "x", "y"}, []any{"GET", "x"},
		[]any{"BITOP", "OR", "d", "x", "set"}, []any{"SET", "dd", "v", "EX", 100}, []any{"BITOP", "OR", "dd", "y"}, []any{"TTL", "dd"},
		[]any{"BITOP", "OR", "set", "y"}, []any{"TYPE", "set"}, []any{"BITOP", "OR", "num", "num", "i"}, []any{"GET", "num"},
		// BITFIELD, BITFIELD_RO
		[]any{"BITFIELD", "f", "SET", "i5", 100, 1, "GET", "u4", 0}, []any{"BITFIELD", "f", "INCRBY", "i5", 100, 1, "GET", "u4", 0},
		[]any{"BITFIELD", "f", "SET", "u8", "#1", 255, "GET", "u8", 8, "GET", "i8", 8}, []any{"GET", "f"},
		[]any{"BITFIELD", "f", "INCRBY", "u2", 102, 1, "OVERFLOW", "SAT", "INCRBY", "u2", 102, 1, "OVERFLOW", "FAIL", "INCRBY", "u2", 102, 1},
		[]any{"BITFIELD", "f", "OVERFLOW", "WRAP", "INCRBY", "i8", 0, 200, "INCRBY", "i8", 0, -300, "OVERFLOW", "sat", "INCRBY", "i8", 0, 1000, "INCRBY", "i8", 0, -1000},
		[]any{"BITFIELD", "f", "SET", "i64", 0, "-9223372036854775808", "INCRBY", "i64", 0, -1, "OVERFLOW", "SAT", "INCRBY", "i64", 0, -1, "GET", "i64", 0},
		[]any{"BITFIELD", "f", "SET", "u63", 0, -1, "GET", "u63", 0, "INCRBY", "u63", 0, 1, "OVERFLOW", "FAIL", "SET", "u3", 0, 9, "SET", "i3", 0, 3, "SET", "i3", 0, 4},
		[]any{"BITFIELD", "f", "SET", "i1", 3, 1, "GET", "i1", 3, "OVERFLOW", "SAT", "SET", "u1", 3, 5, "SET", "i1", 3, -5}, []any{"GET", "f"},
		[]any{"BITFIELD", "f"}, []any{"BITFIELD", "nof"}, []any{"BITFIELD", "nof", "GET", "u8", 0}, []any{"EXISTS", "nof"},
		[]any{"BITFIELD", "nof2", "OVERFLOW", "FAIL", "INCRBY", "u2", 0, 10}, []any{"GET", "nof2"},
		[]any{"BITFIELD", "f", "GET", "u64", 0}, []any{"BITFIELD", "f", "GET", "I8", 0}, []any{"BITFIELD", "f", "GET", "i0", 0}, []any{"BITFIELD", "f", "GET", "i65", 0},
		[]any{"BITFIELD", "f", "GET", "i8", -1}, []any{"BITFIELD", "f", "GET", "i8", "#x"}, []any{"BITFIELD", "f", "GET", "i8", "#"}, []any{"BITFIELD", "f", "GET", "i8"},
		[]any{"BITFIELD", "f", "SET", "i8", 0}, []any{"BITFIELD", "f", "SET", "i8", 0, "x"}, []any{"BITFIELD", "f", "OVERFLOW", "NOPE", "GET", "i8", 0},
		[]any{"BITFIELD", "f", "OVERFLOW"}, []any{"BITFIELD", "f", "FOO", 1, 2}, []any{"BITFIELD", "f", "GET", "u8", 4294967296},
		[]any{"BITFIELD", "f", "GET", "u8", "#536870912"}, []any{"BITFIELD", "set", "GET", "u8", 0}, []any{"BITFIELD", "set", "SET", "u8", 0, 1},
		[]any{"BITFIELD", "num", "GET", "u8", 0, "GET", "i4", 4}, []any{"BITFIELD", "ttl", "SET", "u8", 0, 65}, []any{"TTL", "ttl"}, []any{"GET", "ttl"},
		[]any{"BITFIELD_RO", "f", "GET", "u8", 0, "GET", "i16", 4}, []any{"BITFIELD_RO", "f", "SET", "u8", 0, 1}, []any{"BITFIELD_RO", "f", "INCRBY", "u8", 0, 1},
		[]any{"BITFIELD_RO", "f", "SET", "u8", 0}, []any{"BITFIELD_RO", "nof"}, []any{"BITFIELD_RO", "set", "GET", "u8", 0}, []any{"BITFIELD_RO", "f", "OVERFLOW", "SAT"},
		[]any{"TYPE", "f"}, []any{"OBJECT", "ENCODING", "f"},
	)
}

// commandMeta is a command's COMMAND INFO: arity, sorted flags, key
// positions and ACL categories.
func commandMeta(t *testing.T, c *redis.Client, name string) string {
	t.Helper()
	v, err := c.Do(ctx, "COMMAND", "INFO", name).Slice()
	require.NoError(t, err)
	info, ok := v[0].([]any)
	require.True(t, ok, "COMMAND INFO %s: %v", name, v)
	var flags, cats []string
	for _, f := range info[2].([]any) {
		flags = append(flags, fmt.Sprint(f))
	}
	for _, f := range info[6].([]any) {
		cats = append(cats, fmt.Sprint(f))
	}
	slices.Sort(flags)
	slices.Sort(cats)
	return fmt.Sprintf("arity %v flags %v keys %v %v %v categories %v", info[1], flags, info[3], info[4], info[5], cats)
}

// TestFamiliesCommandInfo: COMMAND INFO describes each command of these
// families as Redis does: arity, flags, key positions, ACL categories.
func TestFamiliesCommandInfo(t *testing.T) {
	t.Parallel()
	ours, theirs := startServer(t).client(t, 2), startRedis(t)
	for _, name := range familiesCommands {
		want, got := commandMeta(t, theirs, name), commandMeta(t, ours, name)
		if got != want {
			t.Errorf("COMMAND INFO %s: limitdb %s, redis %s", name, got, want)
		}
	}
	docs, err := ours.Do(ctx, append([]any{"COMMAND", "DOCS"}, toAny(familiesCommands)...)...).Result()
	require.NoError(t, err)
	text := fmt.Sprint(docs)
	for _, name := range familiesCommands {
		require.Contains(t, text, name+" ", "COMMAND DOCS %s", name)
	}
	require.Equal(t, strings.Count(text, "summary"), len(familiesCommands), "a summary for each")
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

var familiesCommands = []string{
	"append", "setrange", "getrange", "substr", "setbit", "getbit", "bitcount", "bitpos", "bitop", "bitfield", "bitfield_ro",
	"spop", "srandmember", "smove", "sinter", "sintercard", "sinterstore", "sunion", "sunionstore", "sdiff", "sdiffstore",
	"hscan", "sscan", "zscan", "hrandfield", "copy",
}

// A step of matchSteps: how much of the reply must equal Redis's.
type famStep struct {
	cmd []any
	how int // exact, unordered (sorted words), or shape (type and length)
}

const (
	exact = iota
	unordered
	shape
)

func ex(cmd ...any) famStep { return famStep{cmd: cmd} }
func un(cmd ...any) famStep { return famStep{cmd: cmd, how: unordered} }
func sh(cmd ...any) famStep { return famStep{cmd: cmd, how: shape} }

// replyShape is a reply's type and, for an array, its length.
func replyShape(v any, err error) string {
	if err != nil {
		return reply(v, err)
	}
	if a, ok := v.([]any); ok {
		return fmt.Sprintf("array of %d", len(a))
	}
	return fmt.Sprintf("%T", v)
}

// matchSteps is matchRedisBoth for steps that compare all, the sorted
// words, or the shape of replies.
func matchSteps(t *testing.T, steps ...famStep) {
	t.Helper()
	ts := startServer(t)
	theirs2 := startRedis(t)
	inBothProtocols(t, ts, theirs2, func(t *testing.T, ours, theirs *redis.Client) {
		for i, st := range steps {
			w, werr := theirs.Do(ctx, st.cmd...).Result()
			g, gerr := ours.Do(ctx, st.cmd...).Result()
			want, got := typesReply(w, werr), typesReply(g, gerr)
			switch st.how {
			case unordered:
				want, got = sortedReply(want), sortedReply(got)
			case shape:
				want, got = replyShape(w, werr), replyShape(g, gerr)
			}
			if got != want {
				t.Errorf("step %d %.200v: limitdb %.300s, redis %.300s", i, st.cmd, got, want)
			}
		}
	})
}

func TestSetOpsMatchRedis(t *testing.T) {
	t.Parallel()
	big := append([]any{"SADD", "big"}, numbers(600)...)
	matchSteps(t,
		ex("SADD", "s1", 1, 2, 3, 4, 5), ex("SADD", "s2", 3, 4, 5, 6), ex("SADD", "s3", 5, 6, 7), ex("SADD", "w1", "a", "b", "c", "d"), ex("SADD", "w2", "c", "d", "e"),
		ex("SET", "str", "v"), ex("SADD", "one", "x"), ex("SADD", "mix", 1, "a"),
		// SINTER, SUNION, SDIFF
		ex("SINTER", "s1", "s2"), ex("SINTER", "s1", "s2", "s3"), ex("SINTER", "s1"), ex("SINTER", "s1", "nos"), ex("SINTER", "nos", "str"),
		ex("SINTER", "s1", "str"), un("SINTER", "w1", "w2"), ex("SINTER", "s1", "s1"), ex("SINTER", "s1", "mix"),
		ex("SUNION", "s1", "s2"), ex("SUNION", "s1", "nos", "s3"), ex("SUNION", "nos"), un("SUNION", "w1", "w2"), ex("SUNION", "s1", "str"), un("SUNION", "s1", "mix"),
		ex("SDIFF", "s1", "s2"), ex("SDIFF", "s1", "s2", "s3"), ex("SDIFF", "s1", "nos"), ex("SDIFF", "nos", "s1"), un("SDIFF", "w1", "w2"),
		ex("SDIFF", "s1", "str"), ex("SDIFF", "nos", "str"), ex("SDIFF", "s1", "s1"), ex("SINTER"), ex("SUNION"), ex("SDIFF"),
		un("SINTER", "big", "s1"), un("SDIFF", "s1", "big"),
		// the STOREs
		ex("SINTERSTORE", "d", "s1", "s2"), ex("SMEMBERS", "d"), ex("OBJECT", "ENCODING", "d"), ex("SINTERSTORE", "d", "s1", "nos"), ex("EXISTS", "d"),
		ex("SINTERSTORE", "str", "s1", "s2"), ex("TYPE", "str"), ex("SET", "str", "v"), ex("SINTERSTORE", "d", "s1", "str"),
		ex("SUNIONSTORE", "d", "s1", "s3"), ex("SMEMBERS", "d"), ex("SUNIONSTORE", "d", "nos"), ex("EXISTS", "d"),
		ex("SDIFFSTORE", "d", "s1", "s2"), ex("SMEMBERS", "d"), ex("SDIFFSTORE", "d", "s1", "s1"), ex("EXISTS", "d"),
		ex("SADD", "t", 9), ex("EXPIRE", "t", 100), ex("SUNIONSTORE", "t", "t", "s3"), ex("SMEMBERS", "t"), ex("TTL", "t"),
		un("SDIFFSTORE", "wd", "w1", "w2"), un("SMEMBERS", "wd"), ex("OBJECT", "ENCODING", "wd"), ex("SINTERSTORE", "d"), ex("SINTERSTORE", "d", "str"),
		ex("SUNIONSTORE", "bigu", "big", "s1"), ex("SCARD", "bigu"), ex("OBJECT", "ENCODING", "bigu"),
		// SINTERCARD
		ex("SINTERCARD", 2, "s1", "s2"), ex("SINTERCARD", 2, "s1", "s2", "LIMIT", 2), ex("SINTERCARD", 2, "s1", "s2", "limit", 0),
		ex("SINTERCARD", 2, "s1", "s2", "LIMIT", 10), ex("SINTERCARD", 1, "s1"), ex("SINTERCARD", 2, "s1", "nos"), ex("SINTERCARD", 2, "s1", "str"),
		ex("SINTERCARD", 0, "s1"), ex("SINTERCARD", -1, "s1"), ex("SINTERCARD", "x", "s1"), ex("SINTERCARD", 3, "s1", "s2"),
		ex("SINTERCARD", 1, "s1", "LIMIT", -1), ex("SINTERCARD", 1, "s1", "LIMIT", "x"), ex("SINTERCARD", 1, "s1", "LIMIT"), ex("SINTERCARD", 1, "s1", "FOO", 1),
		ex("SINTERCARD", 1, "s1", "LIMIT", 1, "LIMIT", 3), ex("SINTERCARD", 1), ex("SINTERCARD", 2, "s1", "s1"),
		// SMOVE
		ex("SMOVE", "s1", "s3", 1), ex("SMEMBERS", "s1"), ex("SMEMBERS", "s3"), ex("SMOVE", "s1", "s3", 1), ex("SMOVE", "s1", "s3", 5),
		ex("SMOVE", "nos", "s3", 1), ex("SMOVE", "nos", "str", 1), ex("SMOVE", "s1", "str", 2), ex("SMOVE", "str", "s1", 2), ex("SMOVE", "s1", "s1", 2),
		ex("SMOVE", "s1", "s1", 99), ex("SMOVE", "one", "new", "x"), ex("EXISTS", "one"), ex("SMEMBERS", "new"), ex("SMOVE", "s1", "s2"),
		ex("SMOVE", "s1", "w1", 2), un("SMEMBERS", "w1"), ex("OBJECT", "ENCODING", "w1"),
		// SPOP and SRANDMEMBER: only what is not random is compared
		ex("SADD", "p", 1, 2, 3), un("SPOP", "p", 3), ex("EXISTS", "p"), ex("SADD", "p", 1, 2, 3), un("SPOP", "p", 10), ex("SPOP", "p"), ex("SPOP", "p", 2),
		ex("SADD", "p", "a"), ex("SPOP", "p"), ex("EXISTS", "p"), ex("SADD", "p", "a", "b"), sh("SPOP", "p", 1), ex("SCARD", "p"), ex("SPOP", "p", 0), ex("SCARD", "p"),
		ex("SPOP", "p", -1), ex("SPOP", "p", "x"), ex("SPOP", "p", 1, 2), ex("SPOP", "str"), ex("SPOP", "str", 1), ex("SPOP", "nos", -1), ex("SPOP", "nos", 0),
		ex("SADD", "r", 1, 2, 3), un("SRANDMEMBER", "r", 3), un("SRANDMEMBER", "r", 100), sh("SRANDMEMBER", "r", 2), sh("SRANDMEMBER", "r", -5),
		sh("SRANDMEMBER", "r"), ex("SRANDMEMBER", "r", 0), ex("SRANDMEMBER", "nos"), ex("SRANDMEMBER", "nos", 5), ex("SRANDMEMBER", "nos", -5),
		ex("SRANDMEMBER", "r", "x"), ex("SRANDMEMBER", "r", "-9223372036854775808"), ex("SRANDMEMBER", "nos", "-9223372036854775808"),
		ex("SRANDMEMBER", "r", 1, 2), ex("SRANDMEMBER", "str"), ex("SRANDMEMBER", "str", 2), ex("SRANDMEMBER", "str", 0), ex("SCARD", "r"),
		ex("SADD", "one", "x"), ex("SRANDMEMBER", "one", -3), ex("SRANDMEMBER", "one", 1), ex("SRANDMEMBER", "one"),
		sh("SRANDMEMBER", "big", 10), sh("SRANDMEMBER", "big", -10), sh("SPOP", "big", 10), ex("SCARD", "big"),
	)
	// Properties of the random choices, on limitdb alone.
	c := startServer(t).client(t, 3)
	require.NoError(t, c.Do(ctx, big...).Err())
	members := map[string]bool{}
	for _, m := range c.SMembers(ctx, "big").Val() {
		members[m] = true
	}
	distinct := c.SRandMemberN(ctx, "big", 50).Val()
	require.Len(t, distinct, 50)
	require.Len(t, slices.Compact(slices.Sorted(slices.Values(distinct))), 50, "SRANDMEMBER with a positive count: distinct members")
	rep := c.SRandMemberN(ctx, "big", -2000).Val()
	require.Len(t, rep, 2000)
	require.Less(t, len(slices.Compact(slices.Sorted(slices.Values(rep)))), 2000, "with a negative count: members repeat")
	for _, m := range append(distinct, rep...) {
		require.True(t, members[m], "%s is a member", m)
	}
	popped := c.SPopN(ctx, "big", 100).Val()
	require.Len(t, slices.Compact(slices.Sorted(slices.Values(popped))), 100)
	for _, m := range popped {
		require.True(t, members[m])
		require.False(t, c.SIsMember(ctx, "big", m).Val(), "%s popped", m)
	}
	require.EqualValues(t, 500, c.SCard(ctx, "big").Val())
}

func TestScansMatchRedis(t *testing.T) {
	t.Parallel()
	matchSteps(t,
		ex("HSET", "h", "a", 1, "b", 2, "c", 3, "ab", 4), ex("SADD", "s", 5, 1, 3), ex("SADD", "w", "x"), ex("ZADD", "z", 1.5, "a", 2, "b", "-inf", "c", 1e20, "d", 0.1, "e"),
		ex("SET", "str", "v"),
		ex("HSCAN", "h", 0), ex("HSCAN", "h", 0, "MATCH", "a*"), ex("HSCAN", "h", 0, "COUNT", 1), ex("HSCAN", "h", 0, "count", 2, "match", "?"),
		ex("HSCAN", "h", 7), ex("HSCAN", "h", -1), ex("HSCAN", "h", "+3"), ex("HSCAN", "h", "18446744073709551615"), ex("HSCAN", "h", "18446744073709551616"),
		ex("HSCAN", "h", "x"), ex("HSCAN", "h", " 1"), ex("HSCAN", "h", ""), ex("HSCAN", "h", "-"), ex("HSCAN", "h", 0, "COUNT", 0), ex("HSCAN", "h", 0, "COUNT", "x"),
		ex("HSCAN", "h", 0, "COUNT"), ex("HSCAN", "h", 0, "MATCH"), ex("HSCAN", "h", 0, "TYPE", "string"), ex("HSCAN", "h", 0, "FOO", 1),
		ex("HSCAN", "noh", 0), ex("HSCAN", "noh", 0, "COUNT", 0), ex("HSCAN", "noh", "x"), ex("HSCAN", "str", 0), ex("HSCAN", "s", 0), ex("HSCAN", "h"),
		ex("SSCAN", "s", 0), ex("SSCAN", "s", 0, "MATCH", "[13]"), ex("SSCAN", "w", 0, "COUNT", 100), ex("SSCAN", "nos", 0), ex("SSCAN", "h", 0), ex("SSCAN", "s", "x"),
		ex("ZSCAN", "z", 0), ex("ZSCAN", "z", 0, "MATCH", "a"), ex("ZSCAN", "noz", 0), ex("ZSCAN", "s", 0), ex("ZSCAN", "z", 0, "COUNT", -1),
		// HRANDFIELD
		un("HRANDFIELD", "h", 4), un("HRANDFIELD", "h", 10), un("HRANDFIELD", "h", 10, "WITHVALUES"), sh("HRANDFIELD", "h", 2), sh("HRANDFIELD", "h", -6),
		sh("HRANDFIELD", "h", 2, "WITHVALUES"), sh("HRANDFIELD", "h", -6, "withvalues"), sh("HRANDFIELD", "h"), ex("HRANDFIELD", "h", 0), ex("HRANDFIELD", "h", 0, "WITHVALUES"),
		ex("HRANDFIELD", "noh"), ex("HRANDFIELD", "noh", 3), ex("HRANDFIELD", "noh", -3, "WITHVALUES"), ex("HRANDFIELD", "h", "x"), ex("HRANDFIELD", "h", 1, "FOO"),
		ex("HRANDFIELD", "h", 1, "WITHVALUES", "x"), ex("HRANDFIELD", "h", "-9223372036854775808"), ex("HRANDFIELD", "h", "-4611686018427387904", "WITHVALUES"),
		ex("HRANDFIELD", "h", "4611686018427387904", "WITHVALUES"), ex("HRANDFIELD", "h", "4611686018427387903", "WITHVALUES"), ex("HRANDFIELD", "noh", "x"),
		ex("HRANDFIELD", "s"), ex("HRANDFIELD", "s", 1), ex("HRANDFIELD", "str", 0),
		ex("HSET", "one", "f", "v"), ex("HRANDFIELD", "one", -2, "WITHVALUES"), ex("HRANDFIELD", "one"),
	)
}

// TestScanWalksLargeCollections: a walk of a collection past its compact
// encoding returns every element, and every element present from start
// to end even when others come and go between calls.
func TestScanWalksLargeCollections(t *testing.T) {
	t.Parallel()
	c := startServer(t).client(t, 2)
	const n = 1000
	var hargs, sargs, zargs []any
	for i := 0; i < n; i++ {
		hargs = append(hargs, fmt.Sprintf("f%d", i), i)
		sargs = append(sargs, fmt.Sprintf("m%d", i))
		zargs = append(zargs, i, fmt.Sprintf("m%d", i))
	}
	require.NoError(t, c.Do(ctx, append([]any{"HSET", "h"}, hargs...)...).Err())
	require.NoError(t, c.Do(ctx, append([]any{"SADD", "s"}, sargs...)...).Err())
	require.NoError(t, c.Do(ctx, append([]any{"ZADD", "z"}, zargs...)...).Err())
	for _, cmd := range []string{"HSCAN", "SSCAN", "ZSCAN"} {
		key := strings.ToLower(cmd[:1])
		seen := map[string]int{}
		cursor, calls := "0", 0
		for {
			v, err := c.Do(ctx, cmd, key, cursor, "COUNT", 20).Slice()
			require.NoError(t, err)
			cursor = v[0].(string)
			elems := v[1].([]any)
			step := 1
			if cmd != "SSCAN" {
				step = 2
			}
			for i := 0; i < len(elems); i += step {
				seen[elems[i].(string)]++
			}
			// Churn: elements that come and go during the walk.
			c.Do(ctx, map[string]string{"HSCAN": "HSET", "SSCAN": "SADD", "ZSCAN": "ZADD"}[cmd], key, fmt.Sprint(calls), fmt.Sprintf("tmp%d", calls))
			calls++
			if cursor == "0" {
				break
			}
			require.Less(t, calls, 200, "%s walks in a bounded number of calls", cmd)
		}
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("m%d", i)
			if cmd == "HSCAN" {
				name = fmt.Sprintf("f%d", i)
			}
			require.GreaterOrEqual(t, seen[name], 1, "%s returned %s", cmd, name)
		}
		require.Greater(t, calls, 1, "%s of a large collection takes several calls", cmd)
	}
	// MATCH filters a walk.
	v, err := c.Do(ctx, "SSCAN", "s", 0, "MATCH", "m99*", "COUNT", 10000).Slice()
	require.NoError(t, err)
	require.Equal(t, "0", v[0])
	require.ElementsMatch(t, []any{"m99", "m990", "m991", "m992", "m993", "m994", "m995", "m996", "m997", "m998", "m999"}, v[1])
}

func TestCopyMatchesRedis(t *testing.T) {
	t.Parallel()
	matchSteps(t,
		ex("SET", "s", "v", "EX", 100), ex("HSET", "h", "a", 1), ex("SADD", "set", 1, 2), ex("ZADD", "z", 1, "m"), ex("RPUSH", "l", "a", "b"), ex("SET", "n", 42),
		ex("COPY", "s", "s2"), ex("GET", "s2"), ex("TTL", "s2"), ex("COPY", "h", "h2"), ex("HGETALL", "h2"), ex("COPY", "set", "set2"), ex("SMEMBERS", "set2"),
		ex("COPY", "z", "z2"), ex("ZRANGE", "z2", 0, -1, "WITHSCORES"), ex("COPY", "l", "l2"), ex("LRANGE", "l2", 0, -1), ex("COPY", "n", "n2"), ex("OBJECT", "ENCODING", "n2"),
		ex("HSET", "h2", "b", 2), ex("HGETALL", "h"), ex("RPUSH", "l2", "c"), ex("LRANGE", "l", 0, -1), ex("SETRANGE", "s2", 0, "w"), ex("GET", "s"),
		ex("COPY", "s", "h"), ex("TYPE", "h"), ex("COPY", "s", "h", "REPLACE"), ex("TYPE", "h"), ex("GET", "h"), ex("TTL", "h"),
		ex("COPY", "nos", "x"), ex("EXISTS", "x"), ex("COPY", "nos", "s", "REPLACE"), ex("EXISTS", "s"), ex("COPY", "s", "s"), ex("COPY", "s", "s", "REPLACE"),
		ex("COPY", "s", "x", "DB", 0), ex("COPY", "s", "x2", "db", 0, "replace"), ex("COPY", "s", "y", "DB", "x"), ex("COPY", "s", "y", "DB", "99999999999"),
		ex("COPY", "s", "y", "DB"), ex("COPY", "s", "y", "FOO"), ex("COPY", "s", "y", "REPLACE", "x"), ex("COPY", "s"), ex("COPY", "s", "s", "FOO"),
		ex("COPY", "s", "y", "DB", 16), ex("COPY", "s", "y", "DB", -1),
	)
	// Another database: limitdb has only 0, and answers as SELECT does.
	c := startServer(t).client(t, 2)
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
	require.EqualError(t, c.Do(ctx, "COPY", "k", "k2", "DB", 1).Err(), "ERR DB index is out of range")
	require.EqualError(t, c.Do(ctx, "SELECT", 1).Err(), "ERR DB index is out of range")
}

// TestCopyLimiterKeys: COPY takes a limiter's whole state: the copy is
// of the same kind and limits as the original from where it stood, and
// the two go their own ways after.
func TestCopyLimiterKeys(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	c := ts.client(t, 2)
	for _, cmd := range [][]any{
		{"CL.THROTTLE", "gcra", 5, 10, 60, 3}, {"TB.TAKE", "tb", 10, 1, 1000, 4}, {"FW.INCR", "fw", 10, 1000, 2},
		{"SW.INCR", "sw", 10, 1000}, {"SL.INCR", "sl", 10, 1000}, {"LB.QUEUE", "lb", 10, 1, 1000},
	} {
		require.NoError(t, c.Do(ctx, cmd...).Err(), "%v", cmd)
		key := cmd[1].(string)
		require.EqualValues(t, 1, c.Do(ctx, "COPY", key, key+"2").Val(), "COPY %s", key)
		require.Equal(t, c.Type(ctx, key).Val(), c.Type(ctx, key+"2").Val())
		require.Equal(t, c.PTTL(ctx, key).Val(), c.PTTL(ctx, key+"2").Val(), "%s: same expiry", key)
		again := append([]any{cmd[0], key + "2"}, cmd[2:]...)
		orig := append([]any{cmd[0], key}, cmd[2:]...)
		require.Equal(t, fmt.Sprint(c.Do(ctx, orig...).Val()), fmt.Sprint(c.Do(ctx, again...).Val()), "%s: the copy limits as the original", key)
		want, _ := ts.srv.Engine().Get([]byte(key), ts.srv.Engine().Now())
		got, _ := ts.srv.Engine().Get([]byte(key+"2"), ts.srv.Engine().Now())
		wb, err := want.AppendBinary(nil)
		require.NoError(t, err)
		gb, err := got.AppendBinary(nil)
		require.NoError(t, err)
		require.Equal(t, wb, gb, "%s: the same state", key)
	}
}

// TestFamiliesReachReplicas: the writes of these families reach a replica
// as their effect (SPOP's set, SRANDMEMBER nothing), entry for entry.
func TestFamiliesReachReplicas(t *testing.T) {
	t.Parallel()
	p, r := startServer(t), startServer(t)
	pc, rc := p.client(t, 2), r.client(t, 2)
	replicate(t, rc, p)
	for _, cmd := range [][]any{
		{"APPEND", "a", "xy"}, {"APPEND", "a", "z"}, {"SETRANGE", "r", 3, "abc"}, {"SETBIT", "b", 77, 1}, {"BITOP", "OR", "bo", "a", "b"},
		{"BITFIELD", "bf", "SET", "u8", 0, 200, "INCRBY", "i5", 3, 7}, {"SADD", "s", 1, 2, 3, 4, "x", "y"}, {"SPOP", "s"}, {"SPOP", "s", 2},
		{"SADD", "t", 3, 4, 5}, {"SMOVE", "t", "u", 5}, {"SINTERSTORE", "i", "s", "t"}, {"SUNIONSTORE", "un", "s", "t"},
		{"SDIFFSTORE", "d", "s", "t"}, {"CL.THROTTLE", "cl", 5, 10, 60}, {"COPY", "cl", "cl2"}, {"COPY", "s", "s2"}, {"COPY", "a", "r", "REPLACE"},
	} {
		require.NoError(t, pc.Do(ctx, cmd...).Err(), "%v", cmd)
	}
	n, err := pc.Do(ctx, "WAIT", 1, 5000).Int()
	require.NoError(t, err)
	require.Equal(t, 1, n)
	want := keyspaceOf(t, p.srv.Engine())
	// SPOP's picks decide whether s and t still meet: an empty
	// SINTERSTORE deletes i.
	keys := 13 + int(pc.Exists(ctx, "i").Val())
	require.Len(t, want, keys, "every key written and not deleted")
	require.Equal(t, want, keyspaceOf(t, r.srv.Engine()), "the replica's keyspace")
}

// TestFamiliesDenyOOM: over maxmemory, the writes that can grow the
// keyspace are refused as Redis refuses them, and those that cannot run.
func TestFamiliesDenyOOM(t *testing.T) {
	t.Parallel()
	ours, theirs := startServer(t).client(t, 2), startRedis(t)
	for _, c := range []*redis.Client{ours, theirs} {
		require.NoError(t, c.Do(ctx, "SADD", "s", 1, 2, 3).Err())
		require.NoError(t, c.Do(ctx, "SET", "k", "v").Err())
		require.NoError(t, c.ConfigSet(ctx, "maxmemory", "1").Err())
	}
	defer theirs.ConfigSet(ctx, "maxmemory", "0")
	matchRedis(t, ours, theirs,
		[]any{"APPEND", "k", "x"}, []any{"SETRANGE", "k", 0, "x"}, []any{"SETBIT", "k", 1, 1}, []any{"BITOP", "OR", "d", "k"},
		[]any{"BITFIELD", "k", "GET", "u8", 0}, []any{"BITFIELD_RO", "k", "GET", "u8", 0}, []any{"COPY", "k", "k2"},
		[]any{"SINTERSTORE", "d", "s"}, []any{"SUNIONSTORE", "d", "s"}, []any{"SDIFFSTORE", "d", "s"},
		[]any{"SMOVE", "s", "t", 1}, []any{"SPOP", "s", 5}, []any{"EXISTS", "s", "t"}, []any{"GETRANGE", "k", 0, -1}, []any{"BITCOUNT", "k"},
	)
}
