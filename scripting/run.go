package scripting

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/limitdb/limitdb/resp"
	lua "github.com/yuin/gopher-lua"
)

// Caller runs the commands of redis.call and redis.pcall for one run.
type Caller interface {
	// Call runs args as a command and returns its reply in RESP2, or in
	// RESP3 when proto is 3; the bytes are read before the next Call.
	// A command a script may not run answers with an error reply.
	Call(args [][]byte, proto int) []byte
}

// Log levels of redis.log, as Redis numbers them.
const (
	LogDebug = iota
	LogVerbose
	LogNotice
	LogWarning
)

// Options configure a Runner.
type Options struct {
	RedisVersion string                      // redis.REDIS_VERSION
	Log          func(level int, msg string) // redis.log; nil drops the lines
	// MemoryLimit is script-memory-limit in bytes, read when a script
	// makes a large string (0 or nil: no limit; see memory.go).
	MemoryLimit func() int64
}

// Runner runs scripts, each on an interpreter of its own taken from a pool:
// scripts on different keys run at once.
type Runner struct {
	opts Options
	pool sync.Pool
}

// NewRunner returns a Runner.
func NewRunner(opts Options) *Runner {
	r := &Runner{opts: opts}
	r.pool.New = func() any { return r.newState() }
	return r
}

// Handle lets another goroutine stop a run (SCRIPT KILL, SHUTDOWN, the
// memory watchdog).
type Handle struct {
	cancel atomic.Pointer[context.CancelFunc]
	why    atomic.Int32 // a stop reason, 0 while the run may go on
}

// Why a run was stopped from outside.
const (
	stoppedByUser   = 1 + iota // SCRIPT KILL, SHUTDOWN
	stoppedByMemory            // script-memory-limit
)

// Reset readies a handle for another run.
func (h *Handle) Reset() {
	h.why.Store(0)
	h.cancel.Store(nil)
}

// Kill stops the run at its next instruction; it answers Redis's
// "Script killed by user" error.
func (h *Handle) Kill() { h.stop(stoppedByUser) }

// StopOverMemory stops the run at its next instruction with the
// script-memory-limit error.
func (h *Handle) StopOverMemory() { h.stop(stoppedByMemory) }

func (h *Handle) stop(why int32) {
	h.why.CompareAndSwap(0, why)
	if f := h.cancel.Load(); f != nil {
		(*f)()
	}
}

// state is one interpreter with the sandbox set up, and the run it serves.
type state struct {
	L       *lua.LState
	ctx     context.Context
	cancel  context.CancelFunc
	globals []global // what every run starts from
	caller  Caller
	proto   int // redis.setresp
	argBuf  [][]byte
	numBuf  []byte
	textBuf []byte // string.format's result, while it is built

	// FUNCTION libraries loaded in this interpreter, as of a registry
	// version
	fnVersion  uint64
	fns        map[string]*lua.LFunction
	loadedLibs map[string]bool

	closures   map[*Script]*lua.LFunction // each script's function in this interpreter
	keys, argv *lua.LTable                // KEYS and ARGV, refilled for each run
	vals       *values                    // numbers and strings made for the script (values.go)

	views  map[*lua.LTable]*lua.LTable // each library's read-only view, to the library (readonly.go)
	hidden *lua.LTable                 // a protected metatable's __metatable: getmetatable gives nil
	// globalsView is _G, and the globals of a script that may assign one
	// (Script.setsGlobals) and of what loadstring makes: an empty table
	// that reads the globals and refuses every write (readonly.go).
	globalsView *lua.LTable

	keepError *lua.LFunction // the message handler of a run's protected call (results.go)

	memoryLimit func() int64
	overMemory  bool      // this run made a string larger than memoryLimit
	mem         runMemory // this run's large strings (memory.go)
}

type global struct {
	name string
	v    lua.LValue
}

// redisGlobals are the globals Redis 7 gives a script, beside KEYS, ARGV
// and the libraries this package adds.
var redisGlobals = []string{"_G", "_VERSION", "assert", "collectgarbage", "coroutine", "error", "getmetatable",
	"ipairs", "load", "loadstring", "math", "next", "pairs", "pcall", "rawequal", "rawget", "rawset", "select",
	"setmetatable", "string", "table", "tonumber", "tostring", "type", "unpack", "xpcall"}

// openLibs opens the libraries Redis gives scripts and drops the globals
// it does not.
func openLibs(L *lua.LState, vals *values) {
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath}, {lua.CoroutineLibName, lua.OpenCoroutine}} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	g := L.G.Global
	if m, ok := g.RawGetString("math").(*lua.LTable); ok {
		openRandom(L, m)
	}
	if s, ok := g.RawGetString("string").(*lua.LTable); ok {
		s.RawSetString("dump", L.NewFunction(stringDump)) // dump.go
	}
	if ls, ok := g.RawGetString("loadstring").(*lua.LFunction); ok && ls.IsG {
		g.RawSetString("loadstring", L.NewFunction(loadString(ls.GFunction)))
	}
	keep := map[string]bool{}
	for _, n := range redisGlobals {
		keep[n] = true
	}
	var drop []lua.LValue
	g.ForEach(func(k, _ lua.LValue) {
		if s, ok := k.(lua.LString); !ok || !keep[string(s)] {
			drop = append(drop, k)
		}
	})
	for _, k := range drop {
		g.RawSet(k, lua.LNil)
	}
	g.RawSetString("gcinfo", L.NewFunction(func(L *lua.LState) int { L.Push(lua.LNumber(0)); return 1 }))
	// Lua 5.1 writes a number as "%.14g" (1/3: 0.33333333333333, 1e15:
	// 1e+15); gopher-lua's own tostring writes Go's shortest form.
	g.RawSetString("tostring", L.NewFunction(func(L *lua.LState) int {
		v := L.CheckAny(1)
		if n, ok := v.(lua.LNumber); ok {
			L.Push(lua.LString(LuaNumber(float64(n))))
		} else {
			L.Push(L.ToStringMeta(v))
		}
		return 1
	}))
	g.RawSetString("tonumber", L.NewFunction(toNumber(vals))) // number.go
}

// numbersAsLua51 makes string.format's arguments on L's stack format as
// Lua 5.1's C printf formats them: each number a %s or %q of spec formats
// becomes its Lua 5.1 text, and an infinity or NaN that a %e, %f or %g
// formats becomes C's text ("inf", "-nan", "INF" for %E...), the
// conversion turned into a %s of the same width and justification.
func numbersAsLua51(L *lua.LState, spec string) {
	arg := 2
	var out []byte // spec rewritten, once a conversion had to be
	done := 0      // spec[:done] is in out
	for i := 0; i < len(spec); i++ {
		if spec[i] != '%' {
			continue
		}
		start := i
		if i++; i < len(spec) && spec[i] == '%' {
			continue
		}
		for i < len(spec) && strings.IndexByte("-+ #0123456789.", spec[i]) >= 0 {
			i++
		}
		if i >= len(spec) || arg > L.GetTop() {
			break
		}
		n, isNum := L.Get(arg).(lua.LNumber)
		switch c := spec[i]; {
		case !isNum:
		case c == 's' || c == 'q':
			L.Replace(arg, lua.LString(LuaNumber(float64(n))))
		case strings.IndexByte("eEfFgG", c) >= 0:
			text, ok := cNonFinite(float64(n))
			if !ok {
				break
			}
			flags := spec[start+1 : i]
			if text[0] != '-' && strings.ContainsRune(flags, '+') {
				text = "+" + text
			} else if text[0] != '-' && strings.ContainsRune(flags, ' ') {
				text = " " + text
			}
			if c == 'E' || c == 'F' || c == 'G' {
				text = strings.ToUpper(text)
			}
			width, _, _ := strings.Cut(strings.TrimLeft(flags, "-+ #0"), ".")
			out = append(out, spec[done:start]...)
			out = append(out, '%')
			if strings.ContainsRune(flags, '-') {
				out = append(out, '-')
			}
			out = append(append(out, width...), 's')
			done = i + 1
			L.Replace(arg, lua.LString(text))
		}
		arg++
	}
	if out != nil {
		L.Replace(1, lua.LString(append(out, spec[done:]...)))
	}
}

// formatPlain is string.format for a spec whose conversions are all a
// bare %d or %i of a number, %s of a string or %%, with an argument for
// each: the text the library's format gives, without its fmt.Sprintf of
// every argument. ok is false for any other spec (numbersAsLua51 has run:
// a number for %s is a string by now).
func (st *state) formatPlain(L *lua.LState) (v lua.LValue, ok bool) {
	spec, ok := L.Get(1).(lua.LString)
	if !ok {
		return nil, false
	}
	out := st.textBuf[:0]
	arg := 2
	for i := 0; i < len(spec); i++ {
		c := spec[i]
		if c != '%' {
			out = append(out, c)
			continue
		}
		if i++; i == len(spec) {
			return nil, false
		}
		switch spec[i] {
		case '%':
			out = append(out, '%')
			continue
		case 'd', 'i':
			n, ok := L.Get(arg).(lua.LNumber)
			if !ok {
				return nil, false
			}
			out = strconv.AppendInt(out, int64(n), 10)
		case 's':
			s, ok := L.Get(arg).(lua.LString)
			if !ok {
				return nil, false
			}
			out = append(out, s...)
		default:
			return nil, false
		}
		arg++
	}
	if cap(out) <= 1<<16 { // a large one goes with this call
		st.textBuf = out[:0]
	}
	return lua.LString(out), true
}

// cNonFinite is C's printf text of an infinity or a NaN, as Lua 5.1 and
// Redis write them ("inf", "-inf", "nan", "-nan": the sign is the sign
// bit's, and 0/0 computed on amd64 has it set); ok is false for a finite f.
func cNonFinite(f float64) (text string, ok bool) {
	switch {
	case math.IsInf(f, 1):
		return "inf", true
	case math.IsInf(f, -1):
		return "-inf", true
	case math.IsNaN(f) && math.Signbit(f):
		return "-nan", true
	case math.IsNaN(f):
		return "nan", true
	}
	return "", false
}

// AppendCallNumber appends the text redis.call gives a command for a Lua
// number argument: "%.17g", as Redis formats it.
func AppendCallNumber(dst []byte, f float64) []byte {
	if text, ok := cNonFinite(f); ok {
		return append(dst, text...)
	}
	return strconv.AppendFloat(dst, f, 'g', 17, 64)
}

// LuaNumber is Lua 5.1's text of a number: "%.14g".
func LuaNumber(f float64) string {
	var buf [32]byte
	return string(AppendLuaNumber(buf[:0], f))
}

// AppendLuaNumber appends LuaNumber(f) to dst.
func AppendLuaNumber(dst []byte, f float64) []byte {
	if text, ok := cNonFinite(f); ok {
		return append(dst, text...)
	}
	// "%.14g" prints an integer of up to 14 digits as its digits, and -0
	// as "-0": the integers go the short way.
	if i := int64(f); float64(i) == f && i > -1e14 && i < 1e14 && (i != 0 || !math.Signbit(f)) {
		return strconv.AppendInt(dst, i, 10)
	}
	return strconv.AppendFloat(dst, f, 'g', 14, 64)
}

func (r *Runner) newState() *state {
	// The registry (the values of every frame of a run) grows by
	// registryStep slots at a time, not gopher-lua's 32: a run that needs
	// its thousands of slots gets them in a few copies, not thousands.
	L := lua.NewState(lua.Options{SkipOpenLibs: true, CallStackSize: callStackSize, MinimizeStackMemory: true,
		RegistrySize: 1024, RegistryMaxSize: 1 << 20, RegistryGrowStep: registryStep})
	vals := newValues()
	openLibs(L, vals)
	g := L.G.Global
	boundResults(L, g)
	st := &state{L: L, memoryLimit: r.opts.MemoryLimit, vals: vals, keepError: L.NewFunction(keepError)}
	g.RawSetString("cjson", st.cjsonLib(L))
	st.limitStrings()
	rl := st.redisLib(r.opts)
	g.RawSetString("redis", rl)
	g.RawSetString("server", rl)
	g.RawSetString(callName, rl.RawGetString("call"))
	g.RawSetString(pcallName, rl.RawGetString("pcall"))
	g.RawSetString(callVoidName, L.NewFunction(func(L *lua.LState) int { return st.call(L, true, false) }))
	g.RawSetString(pcallVoidName, L.NewFunction(func(L *lua.LState) int { return st.call(L, false, false) }))
	st.keys, st.argv, st.closures = L.NewTable(), L.NewTable(), map[*Script]*lua.LFunction{}
	g.RawSetString("KEYS", st.keys)
	g.RawSetString("ARGV", st.argv)
	mt := L.NewTable()
	mt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.CheckAny(2).String())
		return 0
	}))
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Attempt to modify a readonly table")
		return 0
	}))
	L.SetMetatable(g, mt)
	st.protectLibraries()
	st.protectGlobals()
	st.globals = st.globals[:0]
	g.ForEach(func(k, v lua.LValue) { st.globals = append(st.globals, global{string(k.(lua.LString)), v}) })
	st.ctx, st.cancel = context.WithCancel(context.Background())
	L.SetContext(st.ctx)
	return st
}

// Run runs s with keys and argv, its commands through caller, and writes
// its result (or its error) to w in w's protocol. h, when not nil, can
// kill the run from another goroutine. It reports the error the client
// got, if any.
func (r *Runner) Run(s *Script, keys, argv [][]byte, caller Caller, w *resp.Writer, h *Handle) error {
	st := r.pool.Get().(*state)
	defer r.pool.Put(st)
	L := st.L
	st.fill(st.keys, keys)
	st.fill(st.argv, argv)
	s.Runs.Add(1)
	fn := st.closures[s]
	if fn == nil {
		if len(st.closures) >= 1024 { // scripts flushed or many: start over
			clear(st.closures)
		}
		fn = L.NewFunctionFromProto(s.proto)
		if s.setsGlobals { // its assignments to globals meet the view, which refuses them
			fn.Env = st.globalsView
		}
		st.closures[s] = fn
	}
	if s.bounded {
		L.RemoveContext()
		defer func() { L.SetContext(st.ctx) }() // after runFunc, which may renew st.ctx
	}
	return r.runFunc(st, fn, s.SHA, nil, 0, s.setsGlobals, caller, w, h)
}

// runFunc calls fn with the arguments push pushes, and writes its result
// or its error (naming name: a script's SHA1 or a function's name).
func (r *Runner) runFunc(st *state, fn *lua.LFunction, name string, push func(), nargs int, setsGlobals bool, caller Caller, w *resp.Writer, h *Handle) error {
	st.caller, st.proto = caller, 2
	L := st.L
	g := L.G.Global
	if h != nil {
		// A copy: the run renews st.cancel when it was killed, while a
		// stop from another goroutine may still be reading what it loaded.
		cancel := st.cancel
		h.cancel.Store(&cancel)
	}
	L.Push(fn)
	if push != nil {
		push()
	}
	err := L.PCall(nargs, 1, st.keepError) // no traceback (results.go)
	if h != nil {
		h.cancel.Store(nil)
	}
	var replyErr error
	if err != nil {
		chunk := "user_script"
		if nargs > 0 {
			chunk = "user_function"
		}
		msg := errorReply(name, chunk, err)
		why := int32(0)
		if h != nil {
			why = h.why.Load()
		}
		if st.overMemory {
			why = stoppedByMemory
		}
		if _, where, ok := strings.Cut(msg, " script: "); ok && why != 0 { // with the position
			switch why {
			case stoppedByUser: // Redis's words
				msg = "ERR Script killed by user with SCRIPT KILL... script: " + where
			case stoppedByMemory:
				msg = "ERR Script used more memory than script-memory-limit allows script: " + where
			}
		}
		w.Error(msg)
		replyErr = errors.New(msg)
	} else {
		writeValue(w, L.Get(-1), st.proto, 0)
	}
	L.SetTop(0)
	for i := 0; setsGlobals && i < len(st.globals); i++ { // what a script assigned to a global goes
		if gl := st.globals[i]; g.RawGetString(gl.name) != gl.v {
			g.RawSetString(gl.name, gl.v)
		}
	}
	st.caller, st.overMemory, st.mem = nil, false, runMemory{}
	if st.ctx.Err() != nil { // killed: this interpreter needs a live context
		st.ctx, st.cancel = context.WithCancel(context.Background())
		L.SetContext(st.ctx)
	}
	return replyErr
}

// fill makes t the array of items, in place. An item equal to the string
// already in its place stays: a library's arguments repeat from call to
// call, and each new string is two allocations. Whatever else the last run
// put in t goes.
func (st *state) fill(t *lua.LTable, items [][]byte) {
	for i, b := range items {
		if old, ok := t.RawGetInt(i + 1).(lua.LString); ok && string(old) == string(b) {
			continue
		}
		t.RawSetInt(i+1, st.vals.str(b))
	}
	after := st.vals.number(float64(len(items)))
	if len(items) == 0 {
		after = lua.LNil // Next's start
	}
	var extra []lua.LValue
	for k, _ := t.Next(after); k != lua.LNil; k, _ = t.Next(k) {
		extra = append(extra, k)
	}
	for _, k := range extra {
		t.RawSet(k, lua.LNil)
	}
}

func stringsTable(L *lua.LState, items [][]byte) *lua.LTable {
	t := L.CreateTable(len(items), 0)
	for i, b := range items {
		t.RawSetInt(i+1, lua.LString(b))
	}
	return t
}

// errorReply is the error a client gets from a failed run, in Redis 7's
// words: "<error> script: <sha>, on @user_script:<line>.".
func errorReply(name, chunk string, err error) string {
	var msg, line string
	var apiErr *lua.ApiError
	if !errors.As(err, &apiErr) {
		return "ERR " + err.Error()
	}
	switch v := apiErr.Object.(type) {
	case *lua.LTable:
		msg = lua.LVAsString(v.RawGetString("err"))
		if msg == "" {
			msg = "ERR unknown error"
		}
		line = lua.LVAsString(v.RawGetString("line"))
	default:
		text := v.String()
		if rest, ok := cutChunk(text); ok {
			if n, _, ok := strings.Cut(rest, ":"); ok {
				line = n
			}
		}
		msg = "ERR " + text
	}
	if line == "" {
		line = "?"
	}
	msg = strings.NewReplacer("\r", " ", "\n", " ").Replace(msg)
	return fmt.Sprintf("%s script: %s, on @%s:%s.", msg, name, chunk, line)
}

// errorReplyText is the err field redis.error_reply(s) makes, as Redis
// makes it: s's first word after an optional '-' is the error code when s
// has a space, else the code is ERR and all of s the message; the message
// loses leading and trailing CR and LF. An empty text is "ERR ".
func errorReplyText(s string) string {
	s = strings.TrimPrefix(s, "-")
	code, msg, ok := strings.Cut(s, " ")
	if !ok {
		code, msg = "ERR", s
	}
	return code + " " + strings.Trim(msg, "\r\n")
}

// redisLib is the redis table of one interpreter.
func (st *state) redisLib(opts Options) *lua.LTable {
	L := st.L
	t := L.NewTable()
	fns := map[string]lua.LGFunction{
		"call":  func(L *lua.LState) int { return st.call(L, true, true) },
		"pcall": func(L *lua.LState) int { return st.call(L, false, true) },
		"error_reply": func(L *lua.LState) int {
			text := "ERR wrong number or type of arguments"
			if s, ok := L.Get(1).(lua.LString); ok && L.GetTop() == 1 {
				text = errorReplyText(string(s))
			}
			e := L.NewTable()
			e.RawSetString("err", lua.LString(text))
			L.Push(e)
			return 1
		},
		"status_reply": func(L *lua.LState) int {
			e := L.NewTable()
			e.RawSetString("ok", lua.LString(L.CheckString(1)))
			L.Push(e)
			return 1
		},
		"sha1hex": func(L *lua.LState) int {
			if L.GetTop() != 1 {
				raise(L, "ERR wrong number of arguments")
			}
			L.Push(lua.LString(st.sha1hex(L, L.ToString(1))))
			return 1
		},
		"log": func(L *lua.LState) int {
			if L.GetTop() < 2 {
				raise(L, "ERR redis.log() requires two arguments or more.")
			}
			level, ok := L.Get(1).(lua.LNumber)
			if !ok || level < LogDebug || level > LogWarning {
				raise(L, "ERR Invalid debug level.")
			}
			var parts []string
			for i := 2; i <= L.GetTop(); i++ {
				parts = append(parts, L.ToString(i))
			}
			if opts.Log != nil {
				opts.Log(int(level), strings.Join(parts, " "))
			}
			return 0
		},
		"setresp": func(L *lua.LState) int {
			if L.GetTop() != 1 {
				raise(L, "ERR redis.setresp() requires one argument.")
			}
			n := L.ToInt(1)
			if n != 2 && n != 3 {
				raise(L, "ERR RESP version must be 2 or 3.")
			}
			st.proto = n
			return 0
		},
		"replicate_commands": func(L *lua.LState) int { L.Push(lua.LTrue); return 1 },
		"set_repl":           func(L *lua.LState) int { return 0 },
		"breakpoint":         func(L *lua.LState) int { L.Push(lua.LFalse); return 1 },
		"debug":              func(L *lua.LState) int { return 0 },
		"acl_check_cmd":      func(L *lua.LState) int { L.Push(lua.LTrue); return 1 },
	}
	for name, fn := range fns {
		t.RawSetString(name, L.NewFunction(fn))
	}
	for name, v := range map[string]int{"LOG_DEBUG": LogDebug, "LOG_VERBOSE": LogVerbose, "LOG_NOTICE": LogNotice,
		"LOG_WARNING": LogWarning, "REPL_NONE": 0, "REPL_SLAVE": 1, "REPL_REPLICA": 1, "REPL_AOF": 2, "REPL_ALL": 3} {
		t.RawSetString(name, lua.LNumber(v))
	}
	t.RawSetString("REDIS_VERSION", lua.LString(opts.RedisVersion))
	t.RawSetString("REDIS_VERSION_NUM", lua.LNumber(versionNum(opts.RedisVersion)))
	return t
}

// versionNum is "7.2.4" as 0x070204.
func versionNum(v string) int {
	n := 0
	parts := strings.SplitN(v, ".", 3)
	for i := 0; i < 3; i++ {
		x := 0
		if i < len(parts) {
			x, _ = strconv.Atoi(parts[i])
		}
		n = n<<8 | x&0xff
	}
	return n
}

// raise raises Redis's error table {err = msg, line = n}: the error of a
// redis.* function, which the reply shows as "msg script: ..., on
// @user_script:n." with no position in front.
func raise(L *lua.LState, msg string) {
	e := L.NewTable()
	e.RawSetString("err", lua.LString(msg))
	if rest, ok := cutChunk(L.Where(1)); ok {
		e.RawSetString("line", lua.LString(strings.TrimSuffix(rest, ":")))
	}
	L.Error(e, 0)
}

// call is redis.call (raise) and redis.pcall (return the error table);
// without keep it returns nothing, the call of a statement (discard.go),
// and redis.call raises for an error reply all the same.
func (st *state) call(L *lua.LState, raiseErr, keep bool) int {
	n := L.GetTop()
	fail := func(msg string) int {
		if raiseErr {
			raise(L, msg)
			return 0
		}
		e := L.NewTable()
		e.RawSetString("err", lua.LString(msg))
		L.Push(e)
		return 1
	}
	if n == 0 {
		return fail("ERR Please specify at least one argument for this redis lib call")
	}
	args := st.argBuf[:0]
	st.numBuf = st.numBuf[:0] // numbers' text for this call (a grown buffer leaves earlier ones where they were)
	for i := 1; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			// Commands never keep their arguments (they come from a
			// connection's read buffer otherwise), so the string's bytes
			// are lent, not copied.
			args = append(args, unsafe.Slice(unsafe.StringData(string(v)), len(v)))
		case lua.LNumber:
			start := len(st.numBuf)
			st.numBuf = AppendCallNumber(st.numBuf, float64(v))
			args = append(args, st.numBuf[start:len(st.numBuf):len(st.numBuf)])
		default:
			return fail("ERR Lua redis lib command arguments must be strings or integers")
		}
	}
	st.argBuf = args[:0]
	reply := st.caller.Call(args, st.proto)
	if !keep {
		if raiseErr && len(reply) > 0 && reply[0] == '-' {
			line, _, _ := bytes.Cut(reply[1:], []byte("\r\n"))
			return fail(string(line))
		}
		return 0
	}
	v, _, err := parseReply(L, st.vals, reply, 0)
	if err != nil {
		return fail("ERR " + err.Error())
	}
	if t, ok := v.(*lua.LTable); ok && isError(t) {
		return fail(lua.LVAsString(t.RawGetString("err")))
	}
	L.Push(v)
	return 1
}

// isError reports whether t is an error reply's table: {err = "..."}.
func isError(t *lua.LTable) bool {
	_, ok := t.RawGetString("err").(lua.LString)
	return ok
}

// cutChunk cuts a script's or a function's chunk name, and its colon, off
// the front of an error position ("user_script:3: ...").
func cutChunk(s string) (string, bool) {
	for _, c := range []string{"user_script:", "user_function:"} {
		if rest, ok := strings.CutPrefix(s, c); ok {
			return rest, true
		}
	}
	return s, false
}
