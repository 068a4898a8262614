package tests

import (
	"bufio"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/internal/libscripts"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// The differential tests in this file each pin a defect that Redis 7.0's
// own test suite found in a command limitdb claims: every step runs on
// limitdb and on a real redis-server, and the replies must be equal.

// matchRedis runs each command on ours and on theirs, in order, and
// reports every reply that differs.
func matchRedis(t *testing.T, ours, theirs *redis.Client, cmds ...[]any) {
	t.Helper()
	for i, cmd := range cmds {
		want := reply(theirs.Do(ctx, cmd...).Result())
		got := reply(ours.Do(ctx, cmd...).Result())
		if got != want {
			t.Errorf("step %d %.200q: limitdb %.300q, redis %.300q", i, fmt.Sprint(cmd), got, want)
		}
	}
}

// TestExpireRangeMatchesRedis: the expiry commands accept every instant
// Redis accepts, up to the int64 millisecond limits, and refuse exactly
// where Redis's arithmetic overflows.
func TestExpireRangeMatchesRedis(t *testing.T) {
	t.Parallel()
	theirs := startRedis(t)
	ours := startServer(t).client(t, 2)
	matchRedis(t, ours, theirs,
		[]any{"SET", "k", "v"}, []any{"PEXPIREAT", "k", "9223372036854770000"}, []any{"EXISTS", "k"},
		[]any{"PEXPIREAT", "k", "9223372036854775807"}, []any{"EXISTS", "k"},
		[]any{"PEXPIREAT", "k", "-9223372036854770000"}, []any{"EXISTS", "k"}, []any{"TTL", "k"},
		[]any{"SET", "k", "v"}, []any{"PEXPIREAT", "k", "-9223372036854775808"}, []any{"EXISTS", "k"},
		[]any{"SET", "k", "v"}, []any{"EXPIREAT", "k", "10000000000"}, []any{"EXISTS", "k"},
		[]any{"EXPIREAT", "k", "9223372036854775"}, []any{"EXPIREAT", "k", "9223372036854776"},
		[]any{"EXPIREAT", "k", "-9223372036854776"}, []any{"EXISTS", "k"},
		[]any{"SET", "k", "v"}, []any{"EXPIRE", "k", "100000000000"}, []any{"EXISTS", "k"},
		[]any{"PEXPIRE", "k", "9000000000000000000"}, []any{"EXISTS", "k"},
		[]any{"PEXPIRE", "k", "9223372036854775807"}, []any{"EXPIRE", "k", "9223372036854775"},
		[]any{"EXPIRE", "k", "9223372036854776"}, []any{"EXPIRE", "k", "-9223372036854776"},
		[]any{"SET", "k", "v"}, []any{"PEXPIREAT", "k", "9223372036854770000", "GT"},
		[]any{"PEXPIREAT", "k", "9223372036854770000", "NX"}, []any{"PEXPIREAT", "k", "9223372036854775807", "LT"},
		[]any{"EXISTS", "k"}, []any{"PEXPIRE", "k", "-9223372036854775808"}, []any{"EXISTS", "k"},
	)
}

// TestClientKillUserMatchesRedis: CLIENT KILL USER names a user that must
// exist.
func TestClientKillUserMatchesRedis(t *testing.T) {
	t.Parallel()
	theirs := startRedis(t)
	ours := startServer(t).client(t, 2)
	matchRedis(t, ours, theirs,
		[]any{"CLIENT", "KILL", "USER", "wrong_user"},
		[]any{"CLIENT", "KILL", "USER", "wrong_user", "SKIPME", "no"},
		[]any{"CLIENT", "KILL", "USER", "default", "TYPE", "pubsub"},
	)
}

// TestConfigSetMatchesRedis: CONFIG SET refuses a parameter given twice,
// checks every name before any value, and takes save "" for never.
func TestConfigSetMatchesRedis(t *testing.T) {
	t.Parallel()
	theirs := startRedis(t)
	ours := startServer(t).client(t, 2)
	matchRedis(t, ours, theirs,
		[]any{"CONFIG", "SET", "maxmemory", "1", "maxmemory", "2"},
		[]any{"CONFIG", "SET", "MAXMEMORY", "1", "maxmemory", "2"},
		[]any{"CONFIG", "SET", "maxmemory", "1", "MaxMemory", "x"},
		[]any{"CONFIG", "SET", "maxmemory", "x", "maxmemory", "2"},
		[]any{"CONFIG", "SET", "maxmemory", "1", "nosuch", "2", "maxmemory", "3"},
		[]any{"CONFIG", "SET", "maxmemory", "1", "maxmemory", "2", "nosuch", "3"},
		[]any{"CONFIG", "SET", "maxmemory", "1", "cluster-enabled", "no", "maxmemory", "2"},
		[]any{"CONFIG", "SET", "maxmemory", "1", "maxmemory", "2", "cluster-enabled", "no"},
		[]any{"CONFIG", "SET", "nosuch", "1", "dbfilename", "x.rdb"}, []any{"CONFIG", "SET", "maxmemory", "1", "maxmemory", "2", "dbfilename", "x.rdb"},
		[]any{"CONFIG", "SET", "maxmemory", "1", "DBFILENAME", "x.rdb", "maxmemory", "2"},
		[]any{"CONFIG", "GET", "maxmemory"},
		[]any{"CONFIG", "SET", "save", ""},
		[]any{"CONFIG", "SET", "save", "", "save", ""},
	)
}

// TestErrorReplyMatchesRedis: redis.error_reply makes the error table
// Redis's does (an error code, ERR when the text has none), and a script
// returning it sends Redis's error line.
func TestErrorReplyMatchesRedis(t *testing.T) {
	t.Parallel()
	theirs := startRedis(t)
	ours := startServer(t).client(t, 2)
	var cmds [][]any
	for _, arg := range []string{"''", "'x'", "'-x'", "'My Error'", "'-MY Error'", "'-'", "'- x'", "' x'", "'x\\r\\n'", "1", "nil", "{}", "'a', 'b'"} {
		cmds = append(cmds,
			[]any{"EVAL", "return redis.error_reply(" + arg + ")", 0},
			[]any{"EVAL", "return type(redis.error_reply(" + arg + "))", 0},
			[]any{"EVAL", "return redis.error_reply(" + arg + ").err", 0},
		)
	}
	cmds = append(cmds, []any{"EVAL", "return redis.error_reply()", 0}, []any{"EVAL", "return redis.error_reply().err", 0},
		[]any{"EVAL", "return {err=''}", 0}, []any{"EVAL", "return {err='x'}", 0}, []any{"EVAL", "return {err='-x'}", 0})
	matchRedis(t, ours, theirs, cmds...)
}

// TestACLCategoriesMatchRedis: the transaction and scripting categories
// hold Redis's commands, and ACL CAT and ACL LOAD answer Redis's errors.
func TestACLCategoriesMatchRedis(t *testing.T) {
	t.Parallel()
	theirs := startRedis(t)
	ours := startServer(t).client(t, 2)
	for _, cat := range []string{"transaction", "scripting"} {
		// Redis's members, less the commands limitdb lacks (COMMAND INFO
		// answers nil for them).
		var want []string
		names, err := theirs.Do(ctx, "ACL", "CAT", cat).StringSlice()
		require.NoError(t, err)
		for _, name := range names {
			if info, _ := ours.Do(ctx, "COMMAND", "INFO", name).Slice(); len(info) == 1 && info[0] != nil {
				want = append(want, name)
			}
		}
		got, err := ours.Do(ctx, "ACL", "CAT", cat).StringSlice()
		require.NoError(t, err)
		sort.Strings(want)
		sort.Strings(got)
		if len(want) < 5 || !slices.Equal(got, want) {
			t.Errorf("ACL CAT %s: limitdb %v, redis %v", cat, got, want)
		}
	}
	matchRedis(t, ours, theirs,
		[]any{"ACL", "CAT", "transactions"}, []any{"ACL", "CAT", "a", "b"}, []any{"acl", "Cat", "a", "b"},
		[]any{"ACL", "CAT", "nosuch"}, []any{"ACL", "LOAD"},
	)
}

// TestUnauthenticatedLengthsMatchRedis: a client that has not
// authenticated gets Redis's protocol errors for a command longer than
// Redis lets it send (10 arguments, 16 KiB each), and the plain invalid
// length errors past the limits that apply to everyone.
func TestUnauthenticatedLengthsMatchRedis(t *testing.T) {
	t.Parallel()
	theirs := startRedis(t)
	ts := startServer(t)
	ours := ts.client(t, 2)
	for _, c := range []*redis.Client{ours, theirs} {
		require.NoError(t, c.ConfigSet(ctx, "requirepass", "s3cret").Err())
	}
	firstLine := func(network, addr, send string) string {
		nc, err := net.Dial(network, addr)
		require.NoError(t, err)
		defer nc.Close()
		require.NoError(t, nc.SetDeadline(time.Now().Add(30*time.Second)))
		_, err = nc.Write([]byte(send))
		require.NoError(t, err)
		line, err := bufio.NewReader(nc).ReadString('\n')
		if err != nil {
			return "read error: " + err.Error()
		}
		return line
	}
	for _, send := range []string{
		"*11\r\n", "*10\r\n$16385\r\n", "*1\r\n$16385\r\n", "*99999999999\r\n", "*11x\r\n",
		"*1\r\n$-1\r\n", "*1\r\n$999999999999\r\n",
		"*2\r\n$4\r\nECHO\r\n$16384\r\n" + strings.Repeat("x", 16384) + "\r\n",
		"*11\r\n$3\r\nDEL\r\n" + strings.Repeat("$1\r\na\r\n", 10),
		"*2\r\n$4\r\nECHO\r\n$16385\r\n" + strings.Repeat("x", 16385) + "\r\n",
		"*10\r\n$3\r\nDEL\r\n$1\r\na\r\n$1\r\na\r\n$1\r\na\r\n$1\r\na\r\n$1\r\na\r\n$1\r\na\r\n$1\r\na\r\n$1\r\na\r\n$1\r\na\r\n",
	} {
		want := firstLine("unix", theirs.Options().Addr, send)
		if got := firstLine("tcp", ts.addr, send); got != want {
			t.Errorf("%.40q: limitdb %q, redis %q", send, got, want)
		}
	}
}

// TestMathRandomMatchesRedis: math.randomseed takes what luaL_checkint
// takes (a numeric string too), and a seeded math.random draws Redis's
// numbers.
func TestMathRandomMatchesRedis(t *testing.T) {
	t.Parallel()
	theirs := startRedis(t)
	ours := startServer(t).client(t, 2)
	draw := "return {tostring(math.random()), tostring(math.random()), math.random(10), math.random(3, 7), math.random(-5, -5), math.random(2147483647)}"
	var cmds [][]any
	for _, seed := range []string{"ARGV[1]", "'10'", "10", "10.7", "'1e1'", "' 10 '", "-3", "0", "4294967306", "'x'", "nil", "{}"} {
		cmds = append(cmds, []any{"EVAL", "math.randomseed(" + seed + ") " + draw, 0, "10"})
	}
	cmds = append(cmds,
		[]any{"EVAL", "math.randomseed(ARGV[1]) return tostring(math.random())", 0, "20"},
		[]any{"EVAL", "math.randomseed(1) return math.random(0)", 0},
		[]any{"EVAL", "math.randomseed(1) return math.random(5, 4)", 0},
		[]any{"EVAL", "math.randomseed(1) return math.random(1, 2, 3)", 0},
		[]any{"EVAL", "math.randomseed(1) return math.random('x')", 0},
		[]any{"EVAL", "math.randomseed(1) return math.random(1, 'x')", 0},
		[]any{"EVAL", "math.randomseed() return 1", 0},
	)
	matchRedis(t, ours, theirs, cmds...)
}

// TestMonitorScriptsMatchRedis: MONITOR shows EVAL, EVALSHA and FCALL
// before the commands their script runs, even when the script then fails
// to start, and each redis.call as "[0 lua]", as Redis 7.0 does; a
// library's script that limitdb knows shows its commands too.
func TestMonitorScriptsMatchRedis(t *testing.T) {
	t.Parallel()
	sock := startRedis(t).Options().Addr
	ts := startServer(t)
	body := "redis.call('set', KEYS[1], ARGV[1]) redis.call('incrby', KEYS[2], 5) return redis.call('get', KEYS[1])"
	native := libscripts.Ulule(t, "luaIncrScript") // limitdb runs it natively when nobody monitors
	session := []string{
		cmd("EVAL", native, "1", "u", "1", "60000"), cmd("EVALSHA", sha1hex(native), "1", "u", "1", "60000"),
		cmd("EVAL", body, "2", "k", "{k}n", "v"),
		cmd("EVALSHA", sha1hex(body), "2", "k", "{k}n", "w"),
		cmd("EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"),
		cmd("EVALSHA", "short", "0"),
		cmd("EVAL", "return 1", "x"),
		cmd("EVAL", "return 1", "5"),
		cmd("EVAL", "return redis.call('incr', KEYS[1])", "1", "k"),
		cmd("EVAL", "return redis.pcall('nosuch', KEYS[1])", "1", "k"),
		cmd("EVAL", "return redis.pcall('get')", "0"),
		cmd("EVAL_RO", "return redis.call('get', KEYS[1])", "1", "k"),
		cmd("EVAL", "syntax error here", "0"),
		cmd("MULTI"), cmd("EVAL", "return redis.call('ping')", "0"), cmd("EXEC"),
		cmd("FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('f', function(keys, args) return redis.call('get', keys[1]) end)\n"+
			"redis.register_function{function_name='g', callback=function(keys, args) return redis.call('get', keys[1]) end, flags={'no-writes'}}"),
		cmd("FCALL", "f", "1", "k"),
		cmd("FCALL_RO", "g", "1", "k"),
		cmd("FCALL", "nosuch", "0"),
		cmd("FUNCTION", "DELETE", "lib"),
	}
	require.Equal(t, monitorStream(t, "unix", sock, session), monitorStream(t, "tcp", ts.addr, session))
}

func sha1hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestCommandListMatchesRedis: COMMAND LIST names subcommands as
// "container|subcommand" after their container, and each FILTERBY
// answers what Redis answers for the commands both servers have: the
// same ACL categories (a container only @slow, scripts never @read), the
// same patterns, the same errors.
func TestCommandListMatchesRedis(t *testing.T) {
	t.Parallel()
	theirs := startRedis(t)
	ours := startServer(t).client(t, 2)
	list := func(c *redis.Client, filter ...any) []string {
		t.Helper()
		names, err := c.Do(ctx, append([]any{"COMMAND", "LIST"}, filter...)...).StringSlice()
		require.NoError(t, err)
		return names
	}
	oursAll, theirsAll := list(ours), list(theirs)
	for _, want := range []string{"config|get", "client|kill", "script|load", "function|load", "acl|cat", "command|list", "object|encoding", "config"} {
		require.Contains(t, theirsAll, want)
		require.Contains(t, oursAll, want)
	}
	require.Equal(t, len(oursAll), len(slices.Compact(slices.Sorted(slices.Values(oursAll)))), "a name listed twice")
	// common keeps the names of one server's list the other has too.
	common := func(names, other []string) []string {
		var out []string
		for _, n := range names {
			if slices.Contains(other, n) {
				out = append(out, n)
			}
		}
		sort.Strings(out)
		return out
	}
	cats, err := theirs.Do(ctx, "ACL", "CAT").StringSlice()
	require.NoError(t, err)
	var filters [][]any
	for _, cat := range append(cats, "SCRIPTING", "nosuch") {
		filters = append(filters, []any{"FILTERBY", "ACLCAT", cat})
	}
	for _, p := range []string{"config*", "CONFIG*", "*|get", "c?ient|*", "*", "x*"} {
		filters = append(filters, []any{"FILTERBY", "PATTERN", p})
	}
	filters = append(filters, []any{"FILTERBY", "MODULE", "x"})
	for _, f := range filters {
		got, want := common(list(ours, f...), theirsAll), common(list(theirs, f...), oursAll)
		if !slices.Equal(got, want) {
			t.Errorf("COMMAND LIST %v: limitdb %v, redis %v", f, got, want)
		}
	}
	matchRedis(t, ours, theirs,
		[]any{"COMMAND", "LIST", "FILTERBY"}, []any{"COMMAND", "LIST", "x"}, []any{"COMMAND", "LIST", "FILTERBY", "ACLCAT"},
		[]any{"COMMAND", "LIST", "FILTERBY", "nosuch", "x"}, []any{"COMMAND", "LIST", "FILTERBY", "ACLCAT", "x", "y"},
		[]any{"COMMAND", "INFO", "config|nosuch"}, []any{"COMMAND", "INFO", "nosuch|get"},
	)
}

// TestFunctionGlobalsMatchRedis: a library can create no global, neither
// while it loads nor when its functions run, and assigns none it sees:
// FUNCTION LOAD and FCALL answer Redis's errors.
func TestFunctionGlobalsMatchRedis(t *testing.T) {
	t.Parallel()
	theirs := startRedis(t)
	ours := startServer(t).client(t, 2)
	lib := func(name, top, body string) []any {
		return []any{"FUNCTION", "LOAD", "#!lua name=" + name + "\n" + top + "\nredis.register_function('" + name + "', function(keys, args)\n" + body + "\nend)"}
	}
	var cmds [][]any
	for i, top := range []string{"x = 1", "redis = nil", "server = 1", "math = 1", "_G.x = 1", "string.x = 1", "local x = 1", "error('boom')",
		"local t = {} t.x = 1", "redis.call('ping')", "redis.x = 1", "redis.register_function = nil", "local v = redis.REDIS_VERSION_NUM + 1",
		"redis.log(redis.LOG_WARNING, 'hi')", "local s = server", "local t = setmetatable({}, {})", "local t = type(1)", "local t = KEYS",
		"redis.register_function()", "redis.register_function('a', 1)", "redis.register_function(1, function() end)",
		"redis.register_function('a', function() end, 3)", "redis.register_function(1)", "redis.register_function{}",
		"redis.register_function{function_name='a'}", "redis.register_function{callback=function() end}",
		"redis.register_function{function_name=1, callback=1}", "redis.register_function{function_name={}, callback=function() end}",
		"redis.register_function{function_name='a', callback=function() end, flags='no-writes'}",
		"redis.register_function{function_name='a', callback=function() end, flags={'nosuch'}}",
		"redis.register_function{function_name='a', callback=function() end, FLAGS={'NO-WRITES'}, Description='d'}",
		"redis.register_function{function_name='a', callback=function() end, other=1}",
		"redis.register_function('a-b', function() end)", "redis.register_function('a', function() end) redis.register_function('a', function() end)",
	} {
		cmds = append(cmds, lib(fmt.Sprintf("load%d", i), top, "return 1"), []any{"FCALL", fmt.Sprintf("load%d", i), 0})
	}
	for i, body := range []string{"y = 1 return 1", "redis = nil return 1", "server = nil return 1", "math = nil return 1", "_G.y = 1 return 1",
		"rawset(_G, 'y', 1) return 1", "math.floor = nil return 1", "return z", "local t = {} t.y = 1 return t.y", "return redis.call('ping')", "return type(redis)"} {
		name := fmt.Sprintf("run%d", i)
		cmds = append(cmds, lib(name, "", body), []any{"FCALL", name, 0}, []any{"FCALL", name, 0})
	}
	cmds = append(cmds, []any{"FCALL_RO", "a", 0}) // registered no-writes
	matchRedis(t, ours, theirs, cmds...)
}

// TestStringDumpMatchesRedis: string.dump gives a Lua 5.1 binary chunk's
// header and the function's description, as Redis's Lua does, and
// loadstring refuses a binary chunk with Redis's words; string.dump's
// errors are Lua's.
func TestStringDumpMatchesRedis(t *testing.T) {
	t.Parallel()
	theirs := startRedis(t)
	ours := startServer(t).client(t, 2)
	var cmds [][]any
	for _, body := range []string{
		"return loadstring(string.dump(function() return 1 end))()",
		"return {loadstring(string.dump(function() end))}",
		"return select(2, loadstring(string.dump(function() end)))",
		"return select(2, loadstring(string.dump(function() end), 'name'))",
		"return select(2, loadstring(string.dump(function() end), '=name'))",
		"return select(2, loadstring(string.dump(function() end), '@name'))",
		"return select(2, loadstring('\\27' .. string.rep('x', 70)))", "return select(2, loadstring('\\27', '=' .. string.rep('y', 90)))",
		"return select(2, loadstring('\\27', '@' .. string.rep('y', 71) .. 'z'))", "return select(2, loadstring('\\27', '@' .. string.rep('y', 72) .. 'z'))",
		"return select(2, loadstring('\\27', '=' .. string.rep('y', 78) .. 'z'))", "return select(2, loadstring('\\27', '=' .. string.rep('y', 79) .. 'z'))",
		"return select(2, loadstring('\\27', 'a\\0b'))",
		"return select(2, loadstring('\\27' .. string.rep('x', 61)))",
		"return select(2, loadstring('\\27' .. string.rep('x', 62)))",
		"return select(2, loadstring('\\27' .. string.rep('x', 63)))",
		"return select(2, loadstring('\\27x\\ny'))",
		"return select(2, loadstring('\\27x\\ry'))",
		"return type(string.dump(function() end))",
		"return string.dump(function() end):sub(1, 33)",
		"local f = function(a, b, ...)\nlocal c = a + b\nreturn c\nend\nreturn string.dump(f):sub(1, 45)",
		"return string.dump(function() end, 1):sub(1, 12)",
		"return string.dump()", "return string.dump(1)", "return string.dump(nil)", "return string.dump({})",
		"return string.dump('x')", "return string.dump(true)", "return string.dump(string.len)",
	} {
		cmds = append(cmds, []any{"EVAL", body, 0})
	}
	cmds = append(cmds,
		[]any{"FUNCTION", "LOAD", "#!lua name=dumps\nredis.register_function('dumps', function() return {string.dump(function() end):sub(1, 35), select(2, loadstring(string.dump(function() end)))} end)"},
		[]any{"FCALL", "dumps", 0})
	matchRedis(t, ours, theirs, cmds...)
}

// TestScriptGlobalsMatchRedis: a script assigns no global, one that
// exists included, whichever way it tries (an assignment, a global
// function, _G, rawset, a loaded chunk), and what it computed before the
// refused assignment stays done, as in Redis.
func TestScriptGlobalsMatchRedis(t *testing.T) {
	t.Parallel()
	theirs := startRedis(t)
	ours := startServer(t).client(t, 2)
	var cmds [][]any
	for _, body := range []string{
		"redis = function() return 1 end", "_G = {}", "tostring = nil return 1", "x = 1", "function foo() end",
		"_G.tostring = nil return 1", "_G.x = 1", "rawset(_G, 'tostring', nil)", "rawset(_G, 'x', 1)",
		"setmetatable(_G, nil)", "return tostring((pcall(loadstring('redis = 1'))))", "return tostring((pcall(loadstring('y = 1'))))",
		"return tostring((pcall(load(function() return nil end))))",
		"local function g() tonumber = nil end g() return 1", "return type(_G)", "return _G == _G",
		"return _G.redis == redis", "return _G._G == _G", "return type(getmetatable(_G))", "return tostring(1)",
		"return _G.nosuch", "local n = 0 for k, v in pairs(_G) do if k == 'redis' or k == 'tostring' then n = n + 1 end end return n",
		"return loadstring('return redis.call(\"get\", KEYS[1])')()",
	} {
		cmds = append(cmds, []any{"EVAL", body, 1, "k"}, []any{"EVAL", "return tostring(redis ~= nil) .. tostring(tostring ~= nil)", 0})
	}
	cmds = append(cmds, []any{"EVAL", "tostring = redis.call('incr', KEYS[1])", 1, "k"}, []any{"GET", "k"})
	matchRedis(t, ours, theirs, cmds...)
}

// TestInfoFieldsMatchRedis: INFO's maxclients, pubsub_channels and
// pubsub_patterns are there and count as Redis's do.
func TestInfoFieldsMatchRedis(t *testing.T) {
	t.Parallel()
	theirs := startRedis(t)
	ours := startServer(t).client(t, 2)
	field := func(c *redis.Client, section, name string) string {
		t.Helper()
		text, err := c.Info(ctx, section).Result()
		require.NoError(t, err)
		for _, line := range strings.Split(text, "\r\n") {
			if v, ok := strings.CutPrefix(line, name+":"); ok {
				return v
			}
		}
		return "(absent)"
	}
	check := func(step string) {
		t.Helper()
		for _, f := range [][2]string{{"clients", "maxclients"}, {"stats", "pubsub_channels"}, {"stats", "pubsub_patterns"}} {
			if got, want := field(ours, f[0], f[1]), field(theirs, f[0], f[1]); got != want {
				t.Errorf("%s: INFO %s %s: limitdb %s, redis %s", step, f[0], f[1], got, want)
			}
		}
	}
	check("at start")
	var subs []*redis.PubSub
	for _, c := range []*redis.Client{ours, theirs} {
		a := c.Subscribe(ctx, "a", "b")
		b := c.PSubscribe(ctx, "p*")
		d := c.Subscribe(ctx, "a")
		for _, ps := range []*redis.PubSub{a, b, d} {
			_, err := ps.Receive(ctx)
			require.NoError(t, err)
		}
		subs = append(subs, a, b, d)
		require.NoError(t, c.ConfigSet(ctx, "maxclients", "500").Err())
	}
	check("subscribed")
	for _, ps := range subs {
		require.NoError(t, ps.Close())
	}
	require.Eventually(t, func() bool {
		return field(ours, "stats", "pubsub_channels") == "0" && field(theirs, "stats", "pubsub_channels") == "0"
	}, 20*time.Second, 20*time.Millisecond)
	check("unsubscribed")
}
