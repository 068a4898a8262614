package scripting

import (
	"bytes"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/resp"
	lua "github.com/yuin/gopher-lua"
)

// replyCaller answers every redis.call with a fixed RESP reply.
type replyCaller string

func (r replyCaller) Call([][]byte, int) []byte { return []byte(r) }

func run(t *testing.T, body string, reply string, proto int) string {
	t.Helper()
	c := NewCache()
	s, err := c.Load([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w := resp.NewWriter(&out)
	w.Proto = proto
	NewRunner(Options{}).Run(s, nil, nil, replyCaller(reply), w, nil)
	w.Flush()
	return out.String()
}

// TestReplyConversions: a command's reply, through Lua and back, for
// each RESP type.
func TestReplyConversions(t *testing.T) {
	for _, tc := range []struct{ body, reply, want string }{
		{"return redis.call('x')", ":42\r\n", ":42\r\n"},
		{"return redis.call('x')", "$3\r\nabc\r\n", "$3\r\nabc\r\n"},
		{"return redis.call('x')", "$-1\r\n", "$-1\r\n"},
		{"return redis.call('x')", "*2\r\n:1\r\n$-1\r\n", "*2\r\n:1\r\n$-1\r\n"},
		{"return redis.call('x')", "+OK\r\n", "+OK\r\n"},
		{"return redis.pcall('x')", "-ERR no\r\n", "-ERR no\r\n"},
		{"return redis.call('x').double", ",3.5\r\n", ":3\r\n"},
		{"local m = redis.call('x').map return m.a", "%1\r\n$1\r\na\r\n:7\r\n", ":7\r\n"},
		{"return redis.call('x').set.b and 1 or 0", "~1\r\n$1\r\nb\r\n", ":1\r\n"},
		{"return redis.call('x') == true and 1 or 0", "#t\r\n", ":1\r\n"},
	} {
		if got := run(t, tc.body, tc.reply, 2); got != tc.want {
			t.Errorf("%s with %q: %q, want %q", tc.body, tc.reply, got, tc.want)
		}
	}
}

// TestGlobalsDoNotLeak: what one script does to the globals, the next
// does not see, whichever way it reached them.
func TestGlobalsDoNotLeak(t *testing.T) {
	r := NewRunner(Options{})
	c := NewCache()
	load := func(body string) *Script {
		s, err := c.Load([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	probe := load("return type(redis.call) .. type(KEYS[9]) .. type(KEYS.k) .. type(server.call) .. type(string.format)")
	for _, body := range []string{
		"redis = nil return 1",
		"KEYS[9] = 'x' return 1",
		"KEYS.k = 'x' return 1",
		"local function f() redis = nil end f() return 1",
		"_G.redis = nil return 1",
		"rawset(_G, 'redis', nil) return 1",
		"local g = _G g['redis'] = 1 return 1",
		"loadstring('redis = nil')() return 1",
		"server.call = nil return 1",
		"local s = string s.format = nil return 1",
		"pcall(rawset, server, 'call', nil) return 1",
		"pcall(setmetatable, string, nil) string.format = nil return 1",
		"for k, v in pairs(string) do pcall(function() string[k] = nil end) end return 1",
	} {
		var out bytes.Buffer
		w := resp.NewWriter(&out)
		r.Run(load(body), nil, nil, replyCaller(":1\r\n"), w, nil)
		r.Run(probe, nil, nil, replyCaller(":1\r\n"), w, nil)
		w.Flush()
		if !strings.HasSuffix(out.String(), "$30\r\nfunctionnilnilfunctionfunction\r\n") {
			t.Errorf("after %q the next script saw %q", body, out.String())
		}
	}
	// The run skips putting the globals back only for a script that cannot
	// have changed them.
	for body, want := range map[string]bool{
		"local t = redis.call('TIME') return tonumber(t[1]) + #KEYS": false,
		"return string.format('%d', 1)":                              false,
		"x = 1":                                                      true,
		"return function() y = 2 end":                                true,
		"return _G":                                                  true,
		"return loadstring":                                          true,
	} {
		if got := load(body).setsGlobals; got != want {
			t.Errorf("%q: setsGlobals %v, want %v", body, got, want)
		}
	}
}

// TestArgumentsRefill: a run sees its own arguments, when they repeat the
// last run's and when that run changed them.
func TestArgumentsRefill(t *testing.T) {
	r := NewRunner(Options{})
	c := NewCache()
	s, err := c.Load([]byte("local a = ARGV[1] .. (ARGV[2] or '-') ARGV[1] = 'changed' return a"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w := resp.NewWriter(&out)
	for _, argv := range [][]string{{"a", "b"}, {"a", "b"}, {"a"}, {"c", "b"}} {
		var args [][]byte
		for _, a := range argv {
			args = append(args, []byte(a))
		}
		r.Run(s, nil, args, replyCaller(":1\r\n"), w, nil)
	}
	w.Flush()
	if want := "$2\r\nab\r\n$2\r\nab\r\n$2\r\na-\r\n$2\r\ncb\r\n"; out.String() != want {
		t.Fatalf("got %q, want %q", out.String(), want)
	}
}

// TestFormatPlain: where string.format takes its short way, the text is
// what the library's own string.format gives.
func TestFormatPlain(t *testing.T) {
	plain := lua.NewState()
	defer plain.Close()
	st := NewRunner(Options{}).newState()
	defer st.L.Close()
	nums := []float64{0, 7, -7, 3.7, -3.7, 1e15, 1e20, -1e20, math.MaxInt64, math.Inf(1), math.NaN()}
	strs := []string{"", "abc", "%d", "x y"}
	specs := []string{"%d", "%i", "%s", "a%db", "%d:%s", "%s%s", "%5d", "%.2f", "%d %d", "%", "x%"}
	for _, spec := range specs {
		for _, n := range nums {
			for _, s := range strs {
				args := []lua.LValue{lua.LString(spec), lua.LNumber(n), lua.LString(s)}
				if strings.HasPrefix(spec, "%s") {
					args = []lua.LValue{lua.LString(spec), lua.LString(s), lua.LString(s)}
				}
				st.L.SetTop(0)
				for _, a := range args {
					st.L.Push(a)
				}
				got, ok := st.formatPlain(st.L)
				if !ok {
					continue
				}
				want, err := callFormat(plain, args)
				if err != nil || got != want {
					t.Errorf("string.format(%v) = %q, the library's %q (%v)", args, got, want, err)
				}
			}
		}
	}
	// With %% the library passes fmt one argument too many; the short way
	// gives Redis's text (redis-cli EVAL "return string.format('%d%%', 50)" 0).
	for _, tc := range []struct {
		args []lua.LValue
		want string
	}{
		{[]lua.LValue{lua.LString("%d%%"), lua.LNumber(50)}, "50%"},
		{[]lua.LValue{lua.LString("%%")}, "%"},
		{[]lua.LValue{lua.LString("%%d"), lua.LNumber(1)}, "%d"},
		{[]lua.LValue{lua.LString("%%"), lua.LNumber(1), lua.LNumber(2)}, "%"},
	} {
		st.L.SetTop(0)
		for _, a := range tc.args {
			st.L.Push(a)
		}
		if got, ok := st.formatPlain(st.L); !ok || got != lua.LString(tc.want) {
			t.Errorf("string.format(%v) = %q (%v), want %q", tc.args, got, ok, tc.want)
		}
	}
	for _, spec := range []string{"%5d", "%.2f", "%", "x%", "%d %d"} {
		st.L.SetTop(0)
		st.L.Push(lua.LString(spec))
		st.L.Push(lua.LNumber(1))
		if _, ok := st.formatPlain(st.L); ok {
			t.Errorf("%q took the short way", spec)
		}
	}
}

func callFormat(L *lua.LState, args []lua.LValue) (lua.LValue, error) {
	L.SetTop(0)
	err := L.CallByParam(lua.P{Fn: L.GetField(L.GetGlobal("string"), "format"), NRet: 1, Protect: true}, args...)
	return L.Get(-1), err
}

func TestFunctionsDumpRefusesDamage(t *testing.T) {
	fs := NewFunctions("7.2.0")
	if _, err := fs.Load("#!lua name=l\nredis.register_function('f', function() return 1 end)", false); err != nil {
		t.Fatal(err)
	}
	d := fs.Dump()
	for i := range d {
		bad := append([]byte(nil), d...)
		bad[i] ^= 0x20
		if err := NewFunctions("7.2.0").Restore(bad, "APPEND"); err == nil {
			t.Fatalf("a payload damaged at byte %d restored", i)
		}
	}
	if err := NewFunctions("7.2.0").Restore(d, "APPEND"); err != nil {
		t.Fatal(err)
	}
}

// FuzzParseReply: whatever a command answers, the conversion to Lua never
// panics.
func FuzzParseReply(f *testing.F) {
	f.Add([]byte("*2\r\n:1\r\n$3\r\nabc\r\n"))
	f.Add([]byte("%1\r\n~1\r\n,1.5\r\n#t\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		L := lua.NewState(lua.Options{SkipOpenLibs: true})
		defer L.Close()
		parseReply(L, newValues(), b, 0)
	})
}

// TestCacheGet: a script is found by its SHA1 in either case, and looking
// one up by EVALSHA's argument allocates nothing.
func TestCacheGet(t *testing.T) {
	c := NewCache()
	s, err := c.Load([]byte("return 1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{s.SHA, strings.ToUpper(s.SHA), strings.ToUpper(s.SHA[:1]) + s.SHA[1:]} {
		if got := c.Get([]byte(name)); got != s {
			t.Errorf("Get(%s) = %v, want the script", name, got)
		}
	}
	if got := c.Get([]byte(SHA1([]byte("return 2")))); got != nil {
		t.Errorf("Get of a script never loaded = %v", got)
	}
	sha := []byte(s.SHA)
	if n := testing.AllocsPerRun(100, func() { c.Get(sha) }); n != 0 {
		t.Errorf("Get allocates %v times", n)
	}
}

// TestAppendLuaNumber: the text is LuaNumber's, integers included.
func TestAppendLuaNumber(t *testing.T) {
	fs := []float64{0, math.Copysign(0, -1), 1, -1, 60, 1e14 - 1, 1e14, -1e14 + 1, -1e14, 1e15, 0.5, 0.06,
		94463367.123456, 1e300, math.MaxInt64, math.MinInt64, math.Inf(1), math.Inf(-1), math.NaN()}
	for i := range 1000 {
		fs = append(fs, float64(i*i*i*i*7919), -float64(i)*1e11, float64(i)/7)
	}
	for _, f := range fs {
		if got, want := string(AppendLuaNumber([]byte("x"), f)), "x"+LuaNumber(f); got != want {
			t.Errorf("AppendLuaNumber(%v) = %q, want %q", f, got, want)
		}
	}
}

// TestDiscardedCalls: a statement redis.call(...), and one whose result
// is kept, run the command and raise its error as the call compiled as
// written does; they are compiled to the hidden globals (the call that
// builds no result for a statement) only where redis is the library.
func TestDiscardedCalls(t *testing.T) {
	sha := regexp.MustCompile(`script: [0-9a-f]{40}`)
	for _, reply := range []string{"+OK\r\n", "-ERR boom\r\n", "-WRONGTYPE Operation against a key\r\n", ":5\r\n", "*1\r\n-ERR inner\r\n"} {
		for _, pair := range [][2]string{
			{"redis.call('x') return 1", "local _ = redis.call('x') return 1"},
			{"server.call('x') return 1", "local _ = server.call('x') return 1"},
			{"redis.pcall('x') return 1", "local _ = redis.pcall('x') return 1"},
			{"if true then\n\nredis.call('x')\nend return 1", "if true then\n\nlocal _ = redis.call('x')\nend return 1"},
			{"local function f() redis.call('x') end f() return 1", "local function f() local _ = redis.call('x') end f() return 1"},
		} {
			// Through a local alias the call is compiled as written.
			written := "local lib = redis " + strings.NewReplacer("redis.", "lib.", "server.", "lib.").Replace(pair[1])
			got, kept, want := run(t, pair[0], reply, 2), run(t, pair[1], reply, 2), run(t, written, reply, 2)
			if sha.ReplaceAllString(got, "") != sha.ReplaceAllString(want, "") {
				t.Errorf("%q with %q: %q, as written %q", pair[0], reply, got, want)
			}
			if sha.ReplaceAllString(kept, "") != sha.ReplaceAllString(want, "") {
				t.Errorf("%q with %q: %q, as written %q", pair[1], reply, kept, want)
			}
		}
	}
	// Each body's calls: to the call without a result (void), to the
	// direct one, or as written (neither).
	type compiled struct{ void, direct bool }
	for body, want := range map[string]compiled{
		"redis.call('x')":                                              {void: true},
		"server.pcall('x') return 1":                                   {void: true},
		"return redis.call('x')":                                       {direct: true},
		"local a = server.pcall('x') return a":                         {direct: true},
		"return redis.call('x') + redis.call('y')":                     {direct: true},
		"local redis = {call = function() end} redis.call('x')":        {},
		"local redis = {call = function() end} return redis.call('x')": {},
		"local function f(redis) redis.call('x') end":                  {},
		"for _, server in ipairs({}) do end server.call('x')":          {},
		"redis = {call = function() end} redis.call('x')":              {},
		"redis = {call = function() end} return redis.call('x')":       {},
		"local f = redis.call return f('x')":                           {},
		"redis:call('x')":                                              {},
		"redis.log(redis.LOG_WARNING, 'x')":                            {},
	} {
		s, err := NewCache().Load([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		got := compiled{
			void:   constantsName(s.proto, callVoidName) || constantsName(s.proto, pcallVoidName),
			direct: constantsName(s.proto, callName) || constantsName(s.proto, pcallName),
		}
		if got != want {
			t.Errorf("%q: compiled to the call without a result %v and to the direct call %v, want %v and %v",
				body, got.void, got.direct, want.void, want.direct)
		}
	}
	// A shadowed redis is called as written.
	if got := run(t, "local redis = {call = function() return 7 end} redis.call('x') return redis.call('x')", "-ERR no\r\n", 2); got != ":7\r\n" {
		t.Errorf("a local redis: %q", got)
	}
}

// constantsName reports whether proto, or a function in it, has the
// string constant name.
func constantsName(proto *lua.FunctionProto, name string) bool {
	for _, c := range proto.Constants {
		if s, ok := c.(lua.LString); ok && string(s) == name {
			return true
		}
	}
	for _, p := range proto.FunctionPrototypes {
		if constantsName(p, name) {
			return true
		}
	}
	return false
}

// TestBounded: only a script that cannot run on runs without the context
// that stops a run.
func TestBounded(t *testing.T) {
	for body, want := range map[string]bool{
		"local t = redis.call('TIME') if t[1] then return 1 else return 2 end": true,
		"return redis.call('GET', KEYS[1]) or string.format('%d', 1)":          true,
		"while true do end":                                   false,
		"repeat local x = 1 until false":                      false,
		"for i = 1, 10 do end return 1":                       false,
		"for k in pairs(KEYS) do end return 1":                false,
		"local f = function() end return 1":                   false,
		"return loadstring('while true do end')":              false,
		"x = 1":                                               false,
		"if ARGV[1] then return 1 end return redis.call('x')": true,
	} {
		s, err := NewCache().Load([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if s.bounded != want {
			t.Errorf("%q: bounded %v, want %v", body, s.bounded, want)
		}
	}
	// A bounded run leaves the interpreter able to stop the next one.
	r := NewRunner(Options{})
	c := NewCache()
	short, _ := c.Load([]byte("return 1"))
	loop, _ := c.Load([]byte("while true do end"))
	var out bytes.Buffer
	w := resp.NewWriter(&out)
	r.Run(short, nil, nil, replyCaller(":1\r\n"), w, nil)
	h := &Handle{}
	done := make(chan struct{})
	go func() {
		r.Run(loop, nil, nil, replyCaller(":1\r\n"), w, h)
		close(done)
	}()
	deadline := time.After(10 * time.Second)
	for stopped := false; !stopped; {
		h.Kill() // until the run has begun and sees it
		select {
		case <-done:
			stopped = true
		case <-deadline:
			t.Fatal("a loop after a bounded run could not be stopped")
		case <-time.After(10 * time.Millisecond):
		}
	}
}
