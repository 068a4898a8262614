package tests

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/node"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// scriptCases are scripts and commands whose replies must match Redis's
// byte for byte: the conversions both ways, the errors and their
// "script: sha, on @user_script:line." suffix, the sandbox.
var scriptCases = [][]string{
	{"SET", "str", "hello"},
	{"EVAL", "return 1", "0"},
	{"EVAL", "return 3.99", "0"},
	{"EVAL", "return -3.99", "0"},
	{"EVAL", "return 'x'", "0"},
	// infinities and NaNs as C's printf writes them
	{"EVAL", "return {tostring(1/0), tostring(-1/0), tostring(0/0), tostring(-(0/0)), 1/0 .. '', tostring(2^1024)}", "0"},
	{"EVAL", "return string.format('[%s|%.3f|%10.2e|%-8G|%+f|% g|%05.1f|%q]', 1/0, 1/0, -1/0, 0/0, 1/0, 1/0, -(0/0), -1/0)", "0"},
	{"EVAL", "redis.call('set', KEYS[1], 1/0) redis.call('set', KEYS[2], 0/0) return redis.call('mget', KEYS[1], KEYS[2])", "2", "{n}inf", "{n}nan"},
	{"EVAL", "return true", "0"},
	{"EVAL", "return false", "0"},
	{"EVAL", "return nil", "0"},
	{"EVAL", "return {1,2,3.7,nil,5}", "0"},
	{"EVAL", "return {1,'a',{2,false,{}}}", "0"},
	{"EVAL", "return {err='my err'}", "0"},
	{"EVAL", "return {ok='fine'}", "0"},
	{"EVAL", "return redis.error_reply('X bad')", "0"},
	{"EVAL", "return redis.status_reply('PONG')", "0"},
	{"EVAL", "return {KEYS[1], KEYS[2], ARGV[1], ARGV[2], #KEYS, #ARGV}", "2", "k1", "k2", "a1", "a2"},
	{"EVAL", "return redis.call('get', KEYS[1])", "1", "str"},
	{"EVAL", "return redis.call('get', KEYS[1])", "1", "nokey"},
	{"EVAL", "return type(redis.call('get', KEYS[1]))", "1", "nokey"},
	{"EVAL", "return redis.call('set', KEYS[1], 'v')", "1", "s1"},
	{"EVAL", "local r = redis.call('set', KEYS[1], 'v') return r.ok", "1", "s1"},
	{"EVAL", "return redis.call('incrby', KEYS[1], 5)", "1", "counter"},
	{"EVAL", "return redis.call('incrby', KEYS[1], 2.5)", "1", "counter"},
	{"EVAL", "redis.call('set', KEYS[1], 0.1) return redis.call('get', KEYS[1])", "1", "f"},
	{"EVAL", "return redis.call('mget', KEYS[1], KEYS[2])", "2", "str", "nokey"},
	{"EVAL", "return redis.call('incr', KEYS[1])", "1", "str"},
	{"EVAL", "return redis.pcall('incr', KEYS[1])", "1", "str"},
	{"EVAL", "local e = redis.pcall('incr', KEYS[1]) return e.err", "1", "str"},
	{"EVAL", "return redis.call('set', KEYS[1], 'v', 'bad')", "1", "k"},
	{"EVAL", "return redis.pcall('set', KEYS[1], 'v', 'bad')", "1", "k"},
	// statements that drop the reply (compiled to a call that builds none)
	{"EVAL", "redis.call('set', KEYS[1], 'w') redis.call('incr', KEYS[2]) return redis.call('mget', KEYS[1], KEYS[2])", "2", "d1", "d2"},
	{"EVAL", "redis.call('incr', KEYS[1]) return 1", "1", "str"},
	{"EVAL", "redis.pcall('incr', KEYS[1]) return 1", "1", "str"},
	{"EVAL", "redis.call('set', KEYS[1], 'v', 'bad') return 1", "1", "k"},
	{"EVAL", "redis.call('nosuchcommand') return 1", "0"},
	{"EVAL", "local redis = {call = function() return 7 end} redis.call('x') return redis.call('x')", "0"},
	{"EVAL", "return redis.call('nosuchcommand')", "0"},
	{"EVAL", "return redis.call('incr')", "0"},
	{"EVAL", "return redis.call()", "0"},
	{"EVAL", "return redis.call('get', {})", "0"},
	{"EVAL", "return redis.call('eval', 'return 1', 0)", "0"},
	{"EVAL", "\n\nerror('boom')", "0"},
	{"EVAL", "x = 5", "0"},
	// the libraries are read-only: no script changes what the next one runs
	{"EVAL", "redis.call = nil return 1", "0"},
	{"EVAL", "string.format = nil return 1", "0"},
	{"EVAL", "math.floor = nil return 1", "0"},
	{"EVAL", "table.concat = nil return 1", "0"},
	{"EVAL", "coroutine.wrap = nil return 1", "0"},
	{"EVAL", "cjson.encode = nil return 1", "0"},
	{"EVAL", "redis.newfield = 1 return 1", "0"},
	{"EVAL", "rawset(redis, 'call', nil) return 1", "0"},
	{"EVAL", "rawset(string, 'format', nil) return 1", "0"},
	{"EVAL", "setmetatable(redis, nil) return 1", "0"},
	{"EVAL", "setmetatable(string, {}) return 1", "0"},
	{"EVAL", "getmetatable('').__index.upper = nil return 1", "0"},
	{"EVAL", "getmetatable('').__index = nil return 1", "0"},
	{"EVAL", "_G.x = 1 return 1", "0"},
	{"EVAL", "rawset(_G, 'x', 1) return 1", "0"},
	{"EVAL", "setmetatable(_G, nil) return 1", "0"},
	{"EVAL", "return {tostring(getmetatable(redis)), tostring(getmetatable(string)), type(getmetatable(_G)), type(getmetatable(''))}", "0"},
	{"EVAL", "local n, m = 0, 0 for k in pairs(redis) do n = n + 1 end for k in pairs(string) do m = m + 1 end return {n, m}", "0"},
	{"EVAL", "local t = setmetatable({}, {__index = string}) rawset(t, 'x', 1) return {t.upper('a'), ('b'):upper(), t.x}", "0"},
	{"EVAL", "getmetatable(_G).__newindex = nil return 1", "0"},
	{"EVAL", "return {redis.call('ping'), string.format('%d', 7), math.floor(2.5), table.concat({'a','b'}), cjson.encode({1})}", "0"},
	{"EVAL", "return undefined_global", "0"},
	{"EVAL", "return os", "0"},
	{"EVAL", "return print", "0"},
	{"EVAL", "return type(loadstring)", "0"},
	{"EVAL", "return _VERSION", "0"},
	{"EVAL", "return redis.sha1hex('')", "0"},
	{"EVAL", "return redis.REPL_ALL", "0"},
	{"EVAL", "return tostring(redis.replicate_commands())", "0"},
	{"EVAL", "return cjson.encode({a=1,b={1,2,'x'}})", "0"},
	{"EVAL", "local t = cjson.decode('{\"a\":[1,2,{\"b\":true}]}') return {t.a[1], t.a[3].b}", "0"},
	{"EVAL", "return tonumber('12') + 1", "0"},
	{"EVAL", "return {tostring(1/3), tostring(1e15), tostring(123456789012345678), tostring(-0.0), tostring(100), tostring(0.1+0.2)}", "0"},
	{"EVAL", "local n = 1700000000123456 return {1/3 .. '', n .. ':' .. 7, 'a' .. 'b' .. 'c', 2 .. 3}", "0"},
	{"EVAL", "return {string.format('%s|%5s|%-8s|%q|%%s|%d', 0.1+0.2, 1/4, 1e15, 1/3, 7), ('%s:%s'):format(1/3, 'x'), string.format('%.3s', 1/3)}", "0"},
	{"EVAL", "return 'x' .. nil", "0"},
	{"EVAL", "return string.format('%d-%s', 5, 'x')", "0"},
	{"EVAL", "return math.floor(7/2)", "0"},
	{"EVAL", "return table.concat({'a','b'}, ',')", "0"},
	{"EVAL", "return redis.setresp(4)", "0"},
	{"EVAL", "return 1", "-1"},
	{"EVAL", "return 1", "3", "a"},
	{"EVAL", "return 1", "x"},
	{"EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0"},
	{"EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"},
	{"SCRIPT", "LOAD", "return 'loaded'"},
	{"EVALSHA", "0a9ba1bd3cfa5a66ffba6b9ae8e45c9c7bb33fac", "0"},
	{"EVALSHA", "0A9BA1BD3CFA5A66FFBA6B9AE8E45C9C7BB33FAC", "0"},
	{"SCRIPT", "EXISTS", "0a9ba1bd3cfa5a66ffba6b9ae8e45c9c7bb33fac", "ffffffffffffffffffffffffffffffffffffffff"},
	{"EVAL_RO", "return redis.call('get', KEYS[1])", "1", "str"},
	{"EVAL_RO", "return redis.call('set', KEYS[1], 'x')", "1", "str"},
	{"SCRIPT", "KILL"},
	{"SCRIPT", "FLUSH"},
	{"SCRIPT", "EXISTS", "0a9ba1bd3cfa5a66ffba6b9ae8e45c9c7bb33fac"},
	{"EVALSHA", "0a9ba1bd3cfa5a66ffba6b9ae8e45c9c7bb33fac", "0"},
	{"GET", "s1"},
	{"GET", "counter"},
	// RESP3 types from a script, and after redis.setresp(3)
	{"EVAL", "return {map={a=1}}", "0"},
	{"EVAL", "return {set={a=true}}", "0"},
	{"EVAL", "return {double=3.5}", "0"},
	{"EVAL", "return {big_number='12345678901234567890'}", "0"},
	{"EVAL", "redis.setresp(3) return redis.call('get', KEYS[1])", "1", "nokey"},
	{"EVAL", "redis.setresp(3) local v = redis.call('get', KEYS[1]) return tostring(v)", "1", "nokey"},
	{"EVAL", "redis.setresp(3) return {true, false}", "0"},
}

// TestScriptsAnswerAsRedis sends the same commands to limitdb and to
// redis-server, in RESP2 and RESP3, and compares the replies byte for byte.
func TestScriptsAnswerAsRedis(t *testing.T) {
	t.Parallel()
	sameAsRedis(t, scriptCases)
}

// sameAsRedis sends cases to redis-server and to limitdb, each from a
// fresh keyspace, in RESP2 then RESP3, and compares the replies byte for
// byte.
func sameAsRedis(t *testing.T, cases [][]string) {
	t.Helper()
	rc := startRedis(t)
	ts := startServer(t)
	for _, proto := range []string{"2", "3"} {
		t.Run("RESP"+proto, func(t *testing.T) {
			red := dialRawNet(t, "unix", rc.Options().Addr)
			lim := dialRaw(t, ts.addr)
			for _, setup := range [][]string{{"HELLO", proto}, {"FLUSHALL"}, {"FUNCTION", "FLUSH"}} {
				red.do(setup...)
				lim.do(setup...)
			}
			for _, args := range cases {
				want, got := red.do(args...), lim.do(args...)
				if got != want {
					t.Errorf("%q:\n got  %q\n want %q", args, got, want)
				}
			}
		})
	}
}

// TestScriptsAreAtomic: a script's commands run as one unit: concurrent
// scripts on one key never see each other half done; a key the script
// did not declare, in a shard it does not hold, is refused clearly; EVAL
// queues in MULTI; a compile error says where.
func TestScriptsAreAtomic(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	const script = "local v = redis.call('incr', KEYS[1]) redis.call('set', KEYS[2], v) " +
		"return tonumber(redis.call('get', KEYS[2])) == v and 1 or 0"
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := redis.NewClient(&redis.Options{Addr: ts.addr})
			defer c.Close()
			for i := 0; i < 300; i++ {
				n, err := c.Eval(ctx, script, []string{"{k}n", "{k}copy"}).Int64()
				if err != nil || n != 1 {
					t.Errorf("run %d: %d, %v", i, n, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	c := ts.client(t, 2)
	require.Equal(t, "1200", c.Get(ctx, "{k}n").Val())
	require.Equal(t, "1200", c.Get(ctx, "{k}copy").Val())

	// Some key lies in another shard than "a" does.
	var other string
	for i := 0; ; i++ {
		other = fmt.Sprint("other", i)
		err := c.Eval(ctx, "return redis.call('get', ARGV[1])", []string{"a"}, other).Err()
		if err != nil {
			require.Contains(t, err.Error(), "that is not in its KEYS and lies in a shard the script does not hold")
			break
		}
		require.Less(t, i, 10000)
	}
	err := c.Eval(ctx, "return redis.call('keys', '*')", []string{"a"}).Err()
	require.ErrorContains(t, err, "it needs the whole keyspace")

	pipe := c.TxPipeline()
	r := pipe.Eval(ctx, "return redis.call('incr', KEYS[1])", []string{"m"})
	_, err = pipe.Exec(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), r.Val())

	err = c.Eval(ctx, "local a = 1\nreturn 1 +", nil).Err()
	require.ErrorContains(t, err, "ERR Error compiling script (new function): user_script:2:")
}

// TestScriptWritesReachReplicas: what a script wrote reaches a replica as
// one unit, entry for entry.
func TestScriptWritesReachReplicas(t *testing.T) {
	t.Parallel()
	primary := startServer(t)
	replica := startServer(t)
	pc, rc := primary.client(t, 2), replica.client(t, 2)
	replicate(t, rc, primary)
	for i := 0; i < 50; i++ {
		require.NoError(t, pc.Eval(ctx, "redis.call('incr', KEYS[1]) return redis.call('CL.THROTTLE', KEYS[2], 5, 10, 60)",
			[]string{fmt.Sprint("n", i%7), fmt.Sprint("cl", i%5)}).Err())
	}
	require.Equal(t, int64(1), pc.Do(ctx, "WAIT", 1, 5000).Val())
	require.Equal(t, keyspaceOf(t, primary.srv.Engine()), keyspaceOf(t, replica.srv.Engine()))
}

// functionCases are FUNCTION and FCALL commands whose replies must match
// Redis's byte for byte.
var functionCases = [][]string{
	{"FUNCTION", "FLUSH"},
	{"SET", "str", "x"},
	{"FUNCTION", "LOAD", fnLib},
	{"FCALL", "incr_by", "1", "fk", "5"},
	{"FCALL", "incr_by", "1", "fk", "5"},
	{"FCALL_RO", "peek", "1", "fk"},
	{"FCALL_RO", "incr_by", "1", "fk", "1"},
	{"FCALL", "incr_by", "1", "str", "1"},
	{"FCALL", "boom", "0"},
	{"FCALL", "nosuch", "0"},
	{"FCALL", "incr_by", "2", "fk"},
	{"FUNCTION", "LOAD", fnLib},
	{"FUNCTION", "LOAD", "REPLACE", fnLib},
	{"FUNCTION", "LIST", "LIBRARYNAME", "nomatch*"},
	{"FUNCTION", "LOAD", "return 1"},
	{"FUNCTION", "LOAD", "#!lua\nredis.register_function('x', function() return 1 end)"},
	{"FUNCTION", "LOAD", "#!lua name=empty\nlocal x = 1"},
	{"FUNCTION", "LOAD", "#!lua name=dup\nredis.register_function('incr_by', function() return 1 end)"},
	{"FUNCTION", "DELETE", "mylib"},
	{"FUNCTION", "DELETE", "mylib"},
	{"FCALL", "incr_by", "1", "fk", "1"},
	{"GET", "fk"},
	// one function a library: FUNCTION LIST's order within a library is
	// Redis's hash table's
	{"FUNCTION", "LOAD", "#!lua name=one\nredis.register_function{function_name='f1', callback=function() return 1 end, flags={'no-writes'}, description='the one'}"},
	{"FUNCTION", "LIST"},
	{"FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "o*"},
	{"FCALL_RO", "f1", "0"},
}

const fnLib = "#!lua name=mylib\n" +
	"redis.register_function('incr_by', function(keys, args) return redis.call('incrby', keys[1], args[1]) end)\n" +
	"redis.register_function{function_name='peek', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}}\n" +
	"redis.register_function('boom', function() error('bad') end)"

// TestFunctionsAnswerAsRedis: FUNCTION LOAD, LIST, DELETE and FCALL
// against redis-server, byte for byte, in RESP2 and RESP3.
func TestFunctionsAnswerAsRedis(t *testing.T) {
	t.Parallel()
	sameAsRedis(t, functionCases)
}

// TestFunctionsAreKept: libraries reach replicas, survive FUNCTION DUMP
// and RESTORE, and a damaged payload is refused.
func TestFunctionsAreKept(t *testing.T) {
	t.Parallel()
	primary, replica := startServer(t), startServer(t)
	pc, rc := primary.client(t, 2), replica.client(t, 2)
	replicate(t, rc, primary)
	require.Equal(t, "mylib", pc.Do(ctx, "FUNCTION", "LOAD", fnLib).Val())
	require.NoError(t, pc.Do(ctx, "FCALL", "incr_by", 1, "n", 7).Err())
	require.Equal(t, int64(1), pc.Do(ctx, "WAIT", 1, 5000).Val())
	require.Equal(t, "7", rc.Do(ctx, "FCALL_RO", "peek", 1, "n").Val())

	dump, err := pc.Do(ctx, "FUNCTION", "DUMP").Text()
	require.NoError(t, err)
	require.NoError(t, pc.Do(ctx, "FUNCTION", "FLUSH").Err())
	require.ErrorContains(t, pc.Do(ctx, "FCALL", "incr_by", 1, "n", 1).Err(), "Function not found")
	bad := []byte(dump)
	bad[len(bad)/2] ^= 1
	require.ErrorContains(t, pc.Do(ctx, "FUNCTION", "RESTORE", string(bad)).Err(), "payload version or checksum are wrong")
	require.NoError(t, pc.Do(ctx, "FUNCTION", "RESTORE", dump).Err())
	require.Equal(t, int64(8), pc.Do(ctx, "FCALL", "incr_by", 1, "n", 1).Val())
	require.ErrorContains(t, pc.Do(ctx, "FUNCTION", "RESTORE", dump).Err(), "already exists")
	require.NoError(t, pc.Do(ctx, "FUNCTION", "RESTORE", dump, "REPLACE").Err())
}

// TestBusyScript: a script past busy-reply-threshold makes others get
// -BUSY; SCRIPT KILL stops one that wrote nothing, and answers
// UNKILLABLE for one that wrote, as Redis does. The server gives each
// connection a goroutine (event-loop no); busy_test.go has the event loop.
func TestBusyScript(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0)
	cfg := config.Default()
	cfg.Save, cfg.Port, cfg.Dir, cfg.EventLoop = 0, 0, t.TempDir(), false
	ts := serve(t, node.New(cfg, engine.New(clk, 0), nil), clk)
	c := ts.client(t, 2)
	// A minute: only the server's clock, stepped here, gets that far
	// while the test runs.
	require.NoError(t, c.ConfigSet(ctx, "busy-reply-threshold", "60000").Err())
	require.Equal(t, "NOTBUSY No scripts in execution right now.", c.Do(ctx, "SCRIPT", "KILL").Err().Error())
	loop := ts.client(t, 2)
	done := make(chan error, 1)
	go func() { done <- loop.Eval(ctx, "local n = 0 while true do n = n + 1 end", nil).Err() }()
	// Each poll steps the watchdog's clock past the threshold: the script
	// is busy once the watchdog has seen it run for that long.
	require.Eventually(t, func() bool {
		clk.Advance(time.Minute)
		err := c.Ping(ctx).Err()
		return err != nil && err.Error() == "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
	}, 5*time.Second, 20*time.Millisecond)
	require.NoError(t, c.Do(ctx, "SCRIPT", "KILL").Err())
	err := <-done
	require.Error(t, err)
	require.True(t, strings.HasPrefix(err.Error(), "ERR Script killed by user with SCRIPT KILL... script: "), err.Error())
	require.NoError(t, c.Set(ctx, "x", "1", 0).Err())

	writer := ts.client(t, 2)
	go func() {
		done <- writer.Eval(ctx, "redis.call('set', KEYS[1], 'v') while true do end", []string{"w"}).Err()
	}()
	require.Eventually(t, func() bool {
		clk.Advance(time.Minute)
		return c.Ping(ctx).Err() != nil
	}, 5*time.Second, 20*time.Millisecond)
	err = c.Do(ctx, "SCRIPT", "KILL").Err()
	require.ErrorContains(t, err, "UNKILLABLE Sorry the script already executed write commands")
	ts.srv.Close() // what SHUTDOWN NOSAVE is for: closing stops it
	require.Error(t, <-done)
}

// TestScriptMemoryLimit: a script that grows a string past
// script-memory-limit is stopped at once, even under pcall; one that fills
// a table is stopped by the watchdog; either way the server goes on and a
// script within the limit runs.
//
// Not parallel: the watchdog measures the process's heap, which the other
// tests' servers share.
func TestScriptMemoryLimit(t *testing.T) {
	clk := clock.NewFake(t0)
	cfg := config.Default()
	cfg.Save, cfg.Port, cfg.Dir = 0, 0, t.TempDir()
	ts := serve(t, node.New(cfg, engine.New(clk, 0), nil), clk)
	c := ts.client(t, 2)
	require.NoError(t, c.ConfigSet(ctx, "script-memory-limit", "1mb").Err())
	require.Equal(t, map[string]string{"script-memory-limit": "1048576"}, c.ConfigGet(ctx, "script-memory-limit").Val())
	stopped := "ERR Script used more memory than script-memory-limit allows script: "
	for name, script := range map[string]string{
		"doubling":                   "local s = 'x' for i = 1, 40 do s = s .. s end return #s",
		"rep":                        "return #string.rep('x', 1e10)",
		"rep as method":              "return #(('xy'):rep(1e9))",
		"format":                     "local s = string.rep('x', 60000) for i = 1, 12 do s = string.format('%s%s', s, s) end return #s",
		"gsub":                       "local s = string.rep('x', 20) s = s:gsub('x', string.rep('y', 1e5)) return #s",
		"gsub of %0":                 "local s = string.rep('x', 4e5) s = s:gsub('^x', string.rep('%0', 1e5)) return #s",
		"gsub by a function":         "local s = string.rep('x', 60000) s = s:gsub('x', function() return s end) return #s",
		"gsub by a table":            "local s = string.rep('x', 60000) s = s:gsub('x', {x = s}) return #s",
		"table.concat of one string": "local s, t = string.rep('x', 60000), {} for i = 1, 1000 do t[i] = s end return #table.concat(t)",
		"table.concat":               "local s = string.rep('x', 60000) for i = 1, 12 do s = table.concat({s, s}) end return #s",
		"cjson.encode":               "local s = string.rep('x', 60000) for i = 1, 12 do s = cjson.encode({s, s}) end return #s",
		"pcall":                      "local s = 'x' local ok = pcall(function() for i = 1, 40 do s = s .. s end end) return 'went on'",
		"a filled table":             "local t = {} for i = 1, 1e9 do t[i] = i end return #t",
	} {
		t.Run(name, func(t *testing.T) {
			stop := ts.stepping(100 * time.Millisecond) // the watchdog stops a filled table
			err := c.Eval(ctx, script, nil).Err()
			stop()
			require.Error(t, err)
			require.True(t, strings.HasPrefix(err.Error(), stopped), err.Error())
		})
	}
	// The watchdog measures a run from the heap of its tick before the run:
	// one more tick, taken, so that is now and not when the stepping ended.
	require.True(t, ts.clk.WaitForTicksTaken(10*time.Second))
	ts.clk.Advance(100 * time.Millisecond)
	require.True(t, ts.clk.WaitForTicksTaken(10*time.Second))
	for script, want := range map[string]int64{
		"local s = 'x' for i = 1, 19 do s = s .. s end return #s":                             1 << 19, // with the half it was made of
		"local s = string.rep('ab', 1000) return #s:gsub('a', 'cc')":                          3000,
		"local s = string.rep('ab', 1000) return #s:gsub('a', function(m) return m .. m end)": 3000,
		"return #string.rep('x', 4e5):gsub('y', string.rep('%0', 1e5))":                       4e5,
		"return select(2, string.rep('ab', 1000):gsub('b', 'xyz', 10))":                       10,
	} {
		require.Equal(t, want, c.Eval(ctx, script, nil).Val(), script)
	}
	require.NoError(t, c.ConfigSet(ctx, "script-memory-limit", "0").Err())
	require.Equal(t, int64(16<<20), c.Eval(ctx, "local s = 'x' for i = 1, 24 do s = s .. s end return #s", nil).Val())
}

// TestFunctionsSurviveARestart: libraries are in the snapshot, scripts
// are not (EVALSHA answers NOSCRIPT after a restart, as in Redis).
func TestFunctionsSurviveARestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := mustStart(t, dir, "--save", "0")
	c := p.client(t)
	require.Equal(t, "mylib", c.Do(ctx, "FUNCTION", "LOAD", fnLib).Val())
	sha, err := c.ScriptLoad(ctx, "return 1").Result()
	require.NoError(t, err)
	require.NoError(t, c.Do(ctx, "SAVE").Err())
	p.kill9(t)

	p = mustStart(t, dir, "--save", "0")
	c = p.client(t)
	require.Equal(t, int64(4), c.Do(ctx, "FCALL", "incr_by", 1, "n", 4).Val())
	require.ErrorContains(t, c.EvalSha(ctx, sha, nil).Err(), "NOSCRIPT No matching script. Please use EVAL.")
}
