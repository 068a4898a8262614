package scripting

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/limitdb/limitdb/resp"
	lua "github.com/yuin/gopher-lua"
)

// runWith runs body with argv on r and returns the reply.
func runWith(t *testing.T, r *Runner, body string, argv ...string) string {
	t.Helper()
	s, err := NewCache().Load([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	var args [][]byte
	for _, a := range argv {
		args = append(args, []byte(a))
	}
	var out bytes.Buffer
	w := resp.NewWriter(&out)
	r.Run(s, nil, args, replyCaller(":1\r\n"), w, nil)
	w.Flush()
	return out.String()
}

// TestTailCallsKeepNoTrace: an error after a million tail calls, caught
// by the script's pcall or ending the run, costs what the calls cost and
// no more: no traceback line per tail call.
func TestTailCallsKeepNoTrace(t *testing.T) {
	r := NewRunner(Options{})
	const calls = 1e6
	for _, body := range []string{
		"local function f(n) if n == 1e6 then error('deep') end return f(n + 1) end return f(1)",
		"local function f(n) if n == 1e6 then error('deep') end return f(n + 1) end return {pcall(f, 1)}",
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got := runWith(t, r, body)
		runtime.ReadMemStats(&after)
		if !strings.Contains(got, "deep") {
			t.Errorf("%s: %q, want the error", body, got)
		}
		// A number made per call (8 bytes, in gopher-lua's blocks); a
		// traceback adds a string header and its share of the slice.
		perCall := float64(after.TotalAlloc-before.TotalAlloc) / calls
		t.Logf("%s: %.1f bytes per tail call", body, perCall)
		if perCall > 24 {
			t.Errorf("%s: %.1f bytes allocated per tail call", body, perCall)
		}
	}
}

// killingCaller kills its run at its first redis.call, and notes the
// bytes allocated so far.
type killingCaller struct {
	h     *Handle
	alloc uint64
}

func (k *killingCaller) Call([][]byte, int) []byte {
	if k.alloc == 0 {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		k.alloc = m.TotalAlloc
		k.h.Kill()
	}
	return []byte(":1\r\n")
}

// TestEndlessTailRecursionIsKilled: SCRIPT KILL stops an endless tail
// recursion after a million calls at once, allocating next to nothing
// on the way out.
func TestEndlessTailRecursionIsKilled(t *testing.T) {
	s, err := NewCache().Load([]byte("local function f(n) if n == 1e6 then redis.call('ping') end return f(n + 1) end return f(1)"))
	if err != nil {
		t.Fatal(err)
	}
	h := &Handle{}
	k := &killingCaller{h: h}
	var out bytes.Buffer
	w := resp.NewWriter(&out)
	NewRunner(Options{}).Run(s, nil, nil, k, w, h)
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	w.Flush()
	if !strings.HasPrefix(out.String(), "-ERR Script killed by user with SCRIPT KILL... script: ") {
		t.Fatalf("reply %q", out.String())
	}
	if n := m.TotalAlloc - k.alloc; n > 1<<20 {
		t.Errorf("%d bytes allocated between the kill and the reply", n)
	}
}

// TestResultsBoundedAsLua51: unpack, string.byte and recursion stop
// where Redis's Lua stops them, with its errors (each reply as
// redis-server 7.0.15 gives it).
func TestResultsBoundedAsLua51(t *testing.T) {
	r := NewRunner(Options{})
	for _, tc := range []struct{ body, want string }{
		{"return select('#', unpack({}, 1, 1e6))", "-ERR user_script:1: too many results to unpack script: "},
		{"return select('#', unpack({}, 1, 7997))", ":7997\r\n"},
		{"return select('#', unpack({}, 1, 7998))", "-ERR user_script:1: too many results to unpack script: "},
		{"local t = {} for i = 1, 7999 do t[i] = i end return select('#', unpack(t))", ":7999\r\n"},
		{"local t = {} for i = 1, 8000 do t[i] = i end return select('#', unpack(t))", "-ERR user_script:1: too many results to unpack script: "},
		{"return select('#', unpack({}, 5, 1))", ":0\r\n"},
		{"return select('#', unpack({}, -2^31, 2^31 - 2))", "-ERR user_script:1: too many results to unpack script: "},
		{"return {unpack({1, 2, 3}, 2)}", "*2\r\n:2\r\n:3\r\n"},
		{"return {unpack({1, 2, 3}, '2', '3')}", "*2\r\n:2\r\n:3\r\n"},
		{"return {pcall(unpack, {}, 1, 1e6)}", "*2\r\n$-1\r\n$41\r\nuser_script:1: too many results to unpack\r\n"},
		{"return select('#', string.byte(string.rep('x', 1e6), 1, -1))", "-ERR user_script:1: stack overflow (string slice too long) script: "},
		{"return select('#', string.byte(string.rep('x', 8000), 1, 7997))", ":7997\r\n"},
		{"return select('#', string.byte(string.rep('x', 8000), 1, 7998))", "-ERR user_script:1: stack overflow (string slice too long) script: "},
		{"return {string.byte('abc')}", "*1\r\n:97\r\n"},
		{"return {string.byte('abc', -1)}", "*1\r\n:99\r\n"},
		{"return {string.byte('abc', 0)}", "*0\r\n"},
		{"return {string.byte('abc', 2, 10)}", "*2\r\n:98\r\n:99\r\n"},
		{"return {string.byte('abc', -10, 2)}", "*2\r\n:97\r\n:98\r\n"},
		{"return ('abc'):byte(1, -1)", ":97\r\n"},
		{"local function f(n) return 1 + f(n + 1) end return f(1)", "-ERR user_script:1: stack overflow script: "},
		{"local function f(n) return 1 + f(n + 1) end local ok, e = pcall(f, 1) return e", "$29\r\nuser_script:1: stack overflow\r\n"},
		// Lua functions nest 20000 deep (Redis: 19997 here, one frame fewer),
		// pcalls 198 (Redis's own figures).
		{"local d = 0 local function f(n) d = n return 1 + f(n + 1) end pcall(f, 1) return d", ":19998\r\n"},
		{"local d = 0 local function f(n) d = n return pcall(f, n + 1) end f(1) return d", ":199\r\n"},
		{"local d = 0 local function f(n) d = n local ok, e = pcall(f, n + 1) if not ok then error(e, 0) end end local ok, e = pcall(f, 1) return {d, e}",
			"*2\r\n:198\r\n$16\r\nC stack overflow\r\n"},
	} {
		if got := runWith(t, r, tc.body); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.body, got, tc.want)
		}
	}
}

const overLimit = "-ERR Script used more memory than script-memory-limit allows script: "

// TestBuildersReserveFirst: with a 1 MB script-memory-limit, every
// builder of large strings and tables is refused before it makes what
// would pass the limit, alone or with what the run still holds; what the
// run made and dropped does not count.
func TestBuildersReserveFirst(t *testing.T) {
	r := NewRunner(Options{MemoryLimit: func() int64 { return 1 << 20 }})
	big := strings.Repeat("x", 2<<20)
	json := "[" + strings.Repeat("1,", 1e5) + "1]"
	for _, tc := range []struct {
		name, body, arg, want string
	}{
		{"upper", "return #ARGV[1]:upper()", big, overLimit},
		{"lower", "return #ARGV[1]:lower()", strings.ToUpper(big), overLimit},
		{"reverse", "return #ARGV[1]:reverse()", big, overLimit},
		{"held together", "local s = string.rep('x', 4e5) local t = {s:upper(), s:lower(), s:reverse()} return #t", "", overLimit},
		{"rep, held", "local a, b, c = string.rep('x', 4e5), string.rep('y', 4e5), string.rep('z', 4e5) return #a + #b + #c", "", overLimit},
		{"concat, held", "local s = string.rep('x', 3e5) local a = s .. 'a' local b = s .. 'b' local c = s .. 'c' return #c", "", overLimit},
		{"cjson.encode, held", "local s = string.rep('x', 3e5) local a, b, c = cjson.encode({s}), cjson.encode({s}), cjson.encode({s}) return #a + #b + #c", "", overLimit},
		{"cjson.encode, one call", "local s, t = string.rep('x', 3e5), {} for i = 1, 10 do t[i] = s end return #cjson.encode(t)", "", overLimit},
		{"cjson.decode", "return #cjson.decode(ARGV[1])", json, overLimit},
		{"format width", "return #string.format('%99999999d', 1)", "", "-ERR user_script:1: invalid format (width or precision too long) script: "},
		{"format flags", "return string.format('%-+ #0-d', 1)", "", "-ERR user_script:1: invalid format (repeated flags) script: "},
		{"made and dropped", "local s = string.rep('x', 2e5) for i = 1, 20 do local u = s:upper() end return #s", "", ":200000\r\n"},
		{"decoded and dropped", "for i = 1, 5 do local t = cjson.decode(ARGV[1]) end return 1", "[" + strings.Repeat("1,", 1e4) + "1]", ":1\r\n"},
		{"upper of ASCII", "return ('aZ\\233'):upper() .. ('aZ\\233'):lower()", "", "$6\r\nAZ\xe9az\xe9\r\n"},
		{"format within", "return string.format('%5.2f|%-3d|%99s', 1.5, 7, 'x'):sub(1, 10)", "", "$10\r\n 1.50|7  |\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var argv []string
			if tc.arg != "" {
				argv = append(argv, tc.arg)
			}
			if got := runWith(t, r, tc.body, argv...); !strings.HasPrefix(got, tc.want) {
				t.Errorf("%q, want %q", got, tc.want)
			}
		})
	}
}

// TestSHA1HexCopiesNothing: redis.sha1hex hashes its argument where it
// is.
func TestSHA1HexCopiesNothing(t *testing.T) {
	r := NewRunner(Options{MemoryLimit: func() int64 { return 1 << 20 }})
	big := strings.Repeat("x", 4<<20)
	allocated := func(body string) (uint64, string) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got := runWith(t, r, body, big)
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc, got
	}
	args, _ := allocated("return #ARGV[1]") // the argument's copies
	n, got := allocated("return redis.sha1hex(ARGV[1])")
	if want := "$40\r\n" + SHA1([]byte(big)) + "\r\n"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if n > args+1<<20 {
		t.Errorf("%d bytes allocated, %d for the argument", n, args)
	}
}

// TestKillStopsABuilder: SCRIPT KILL stops a run inside a library call
// that makes a large value, even a run without a context of its own
// (a straight-line script).
func TestKillStopsABuilder(t *testing.T) {
	big := strings.Repeat("x", 8<<20)
	for _, body := range []string{
		"redis.call('ping') return #ARGV[1]:upper()",
		"redis.call('ping') return #ARGV[1]:reverse()",
		"redis.call('ping') return #cjson.encode({ARGV[1]})",
		"redis.call('ping') return redis.sha1hex(ARGV[1])",
		"redis.call('ping') return #(ARGV[1] .. ARGV[1])",
		"redis.call('ping') return #string.rep(ARGV[1], 2)",
	} {
		s, err := NewCache().Load([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if !s.bounded {
			t.Fatalf("%s: not a straight-line script", body)
		}
		h := &Handle{}
		var out bytes.Buffer
		w := resp.NewWriter(&out)
		NewRunner(Options{}).Run(s, nil, [][]byte{[]byte(big)}, &killingCaller{h: h}, w, h)
		w.Flush()
		if !strings.HasPrefix(out.String(), "-ERR Script killed by user with SCRIPT KILL... script: ") {
			t.Errorf("%s: %q", body, out.String())
		}
	}
}

// TestKillStopsAPatternMatch: SCRIPT KILL reaches a script inside a
// pattern match that backtracks for long (lazy wildcards over a string
// that never matches), in every function that matches patterns.
func TestKillStopsAPatternMatch(t *testing.T) {
	subject := strings.Repeat("a", 400) // '.-.-b' tries every split at every start: 400^3 steps
	for _, body := range []string{
		"redis.call('ping') return string.find(ARGV[1], '.-.-b')",
		"redis.call('ping') return string.match(ARGV[1], '.-.-b')",
		"redis.call('ping') return select(2, string.gsub(ARGV[1], '.-.-b', ''))",
		"redis.call('ping') for m in string.gmatch(ARGV[1], '.-.-b') do return m end return 0",
	} {
		s, err := NewCache().Load([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		h := &Handle{}
		var out bytes.Buffer
		w := resp.NewWriter(&out)
		NewRunner(Options{}).Run(s, nil, [][]byte{[]byte(subject)}, &killingCaller{h: h}, w, h)
		w.Flush()
		if !strings.HasPrefix(out.String(), "-ERR Script killed by user with SCRIPT KILL... script: ") {
			t.Errorf("%s: %q", body, out.String())
		}
	}
}

// TestKillStopsASort: a cancelled run stops inside table.sort without a
// comparator, which runs no Lua code while it sorts: the sort is called
// straight from Go on an interpreter whose context is already cancelled,
// so only the sort's own look at the context can end it.
func TestKillStopsASort(t *testing.T) {
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer L.Close()
	lua.OpenTable(L)
	tbl := L.NewTable()
	for i := 1; i <= 100000; i++ {
		tbl.Append(lua.LNumber((i * 7919) % 100003))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	L.SetContext(ctx)
	sortFn := L.GetField(L.GetGlobal("table"), "sort")
	err := L.CallByParam(lua.P{Fn: sortFn, NRet: 0, Protect: true}, tbl)
	if err == nil || !strings.Contains(err.Error(), context.Canceled.Error()) {
		t.Errorf("sorting on a cancelled run: %v, want the context's error", err)
	}
}
