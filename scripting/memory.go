package scripting

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"runtime"
	"strings"
	"unsafe"
	"weak"

	lua "github.com/yuin/gopher-lua"
)

// script-memory-limit, inside the interpreter. A string is the only value
// a script can grow exponentially (s = s .. s doubles it at every step),
// and one library call can make a string or a table far larger than its
// inputs (string.rep, a gsub of every character by a long string,
// table.concat of many references to one string, cjson.decode), so every
// library function that makes one reserves its size before it allocates
// (reserve):
//
//	a .. b, string.rep      the exact size
//	upper, lower, reverse   the exact size (the subject's)
//	table.concat            the exact size (the parts' lengths)
//	string.format           its string arguments' lengths together, and a
//	                        width or precision of at most two digits, as
//	                        Lua 5.1 allows
//	cjson.encode            the text, as it is written
//	cjson.decode            the values, as they are made: a slot for each
//	                        element, a header for each string and table
//	string.gsub             a string replacement: at most as many matches as
//	                        fit; a function or table one: what it returns,
//	                        counted as gsub asks for it
//
// string.sub, string.byte, unpack and redis.sha1hex make nothing large:
// a substring shares its subject's bytes, the others are bounded by
// Lua's 8000 results (results.go) or make 40 bytes.
//
// One value larger than the limit stops the run at once. Values of
// bigString bytes or more are also added up, as reserved: while a run's
// total stays within the limit, nothing more is done; past it, a
// collection shows which of the values the run made are still alive (each
// is held by a weak pointer), and those and the new one together must fit
// in the limit. So three strings of 60 MB held at once do not pass a 128
// MB limit, where a 60 MB string made and dropped a hundred times does.
//
// A run over the limit is stopped: its context is cancelled, so a pcall in
// the script cannot go on past it, and the client gets "Script used more
// memory than script-memory-limit allows". The same builders check the
// run's context as they go, so SCRIPT KILL stops one that is making a
// large string (even a run that has no context of its own, script.go's
// bounded). Growth by many small values (a table filled in a loop) is
// linear, and the server's watchdog stops a run whose heap growth passes
// the limit (command/scripts' busyScripts).

// smallString is the size up to which `..` does not read the limit: most
// joins of a script are small, and the limit is meant for megabytes.
const smallString = 4 << 10

// bigString is the size from which a string counts towards a run's total
// (reserve); a builder that writes as it goes reserves by this much.
const bigString = 64 << 10

// limit is script-memory-limit in bytes, 0 for none.
func (st *state) limit() int64 {
	if st.memoryLimit == nil {
		return 0
	}
	return max(st.memoryLimit(), 0)
}

// stopOverMemory stops the run with the limit's error.
func (st *state) stopOverMemory(L *lua.LState) {
	st.overMemory = true
	st.cancel()
	L.RaiseError("script-memory-limit exceeded")
}

// check stops the run when a string of n bytes would pass the limit.
func (st *state) check(L *lua.LState, n float64, limit int64) {
	if limit > 0 && n > float64(limit) {
		st.stopOverMemory(L)
	}
}

// stopped raises the run's cancellation (SCRIPT KILL, SHUTDOWN, the
// watchdog) inside a library call that runs long.
func (st *state) stopped(L *lua.LState) {
	if st.ctx.Err() != nil {
		L.RaiseError("%s", context.Canceled.Error())
	}
}

// runMemory is what a run has made of large values, for reserve.
type runMemory struct {
	made     int64        // bytes reserved since the live values were last counted
	large    []largeValue // the large values the run made, weakly
	building int64        // bytes reserved for a value not yet made whole (cjson's)
}

// largeValue is a large string's bytes, or a large table, and its size.
type largeValue struct {
	p weak.Pointer[byte]
	n int64
}

// reserve stops the run when n more bytes would take it past the limit
// (see above), and when it was cancelled.
func (st *state) reserve(L *lua.LState, n float64) {
	limit := st.limit()
	if limit <= 0 {
		st.stopped(L)
		return
	}
	st.check(L, n, limit)
	if n < bigString {
		return
	}
	st.stopped(L)
	m := &st.mem
	if m.made += int64(n); m.made <= limit {
		return
	}
	runtime.GC() // the run's values that died are collected: their weak pointers are nil
	live := m.live() + m.building
	if live+int64(n) > limit {
		st.stopOverMemory(L)
	}
	m.made = live + int64(n)
}

// live is the size of the run's large values still alive, the others
// forgotten.
func (m *runMemory) live() int64 {
	var n int64
	kept := m.large[:0]
	for _, v := range m.large {
		if v.p.Value() != nil {
			kept = append(kept, v)
			n += v.n
		}
	}
	clear(m.large[len(kept):])
	m.large = kept
	return n
}

// keep notes v, when it is a large string, as one the run made.
func (st *state) keep(v lua.LValue) {
	if s, ok := v.(lua.LString); ok && len(s) >= bigString && st.limit() > 0 {
		st.mem.large = append(st.mem.large, largeValue{weak.Make(unsafe.StringData(string(s))), int64(len(s))})
	}
}

// keepTable notes t, of about n bytes, as a table the run made.
func (st *state) keepTable(t *lua.LTable, n int) {
	if n >= bigString && st.limit() > 0 {
		st.mem.large = append(st.mem.large, largeValue{weak.Make((*byte)(unsafe.Pointer(t))), int64(n)})
	}
}

// limitStrings installs `..` and the checked string makers.
func (st *state) limitStrings() {
	L := st.L
	g := L.G.Global
	g.RawSetString(concatName, L.NewFunction(func(L *lua.LState) int {
		a, b := concatPart(L, L.CheckAny(1)), concatPart(L, L.CheckAny(2))
		n := len(a) + len(b)
		if n <= smallString {
			L.Push(lua.LString(a + b))
			return 1
		}
		st.reserve(L, float64(n))
		v := lua.LString(a + b)
		st.keep(v)
		L.Push(v)
		return 1
	}))
	if str, ok := g.RawGetString("string").(*lua.LTable); ok {
		st.guard(str, "rep", func(L *lua.LState, limit int64) {
			if n := float64(len(L.CheckString(1))) * float64(L.OptInt(2, 0)); n > smallString {
				st.reserve(L, n)
			}
		}, nil)
		// string.format's %s and %q also take a number as Lua 5.1 writes
		// it. The string table is strings' methods table too:
		// ("%s"):format(n).
		st.guard(str, "format", func(L *lua.LState, limit int64) {
			spec := L.CheckString(1)
			checkFormat(L, spec)
			numbersAsLua51(L, spec)
			if limit <= 0 {
				return
			}
			n := len(spec)
			for i := 2; i <= L.GetTop(); i++ {
				if s, ok := L.Get(i).(lua.LString); ok {
					n += len(s)
				}
			}
			if n > smallString {
				st.reserve(L, float64(n))
			}
		}, st.formatPlain)
		st.limitGsub(str)
		for name, from := range map[string]byte{"upper": 'a', "lower": 'A'} {
			str.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
				v := lua.LString(st.changeCase(L, L.CheckString(1), from))
				st.keep(v)
				L.Push(v)
				return 1
			}))
		}
		str.RawSetString("reverse", L.NewFunction(func(L *lua.LState) int {
			v := lua.LString(st.reverse(L, L.CheckString(1)))
			st.keep(v)
			L.Push(v)
			return 1
		}))
	}
	if tab, ok := g.RawGetString("table").(*lua.LTable); ok {
		st.guard(tab, "concat", func(L *lua.LState, limit int64) {
			t := L.CheckTable(1)
			sep := len(L.OptString(2, ""))
			i, j := L.OptInt(3, 1), L.OptInt(4, t.Len())
			n := 0
			for k := i; k <= j && (limit <= 0 || float64(n) <= float64(limit)); k++ {
				if s, ok := t.RawGetInt(k).(lua.LString); ok {
					n += len(s)
				}
				n += sep
				if k&0xffff == 0 {
					st.stopped(L)
				}
			}
			if n > smallString {
				st.reserve(L, float64(n))
			}
		}, nil)
	}
}

// checkFormat refuses a string.format spec as Lua 5.1 does: more than
// five flags, or a width or precision of more than two digits (which
// would have the interpreter's fmt pad a number to any size).
func checkFormat(L *lua.LState, spec string) {
	for i := 0; i < len(spec); i++ {
		if spec[i] != '%' {
			continue
		}
		if i++; i < len(spec) && spec[i] == '%' {
			continue
		}
		flags := i
		for i < len(spec) && strings.IndexByte("-+ #0", spec[i]) >= 0 {
			i++
		}
		if i-flags >= 6 {
			L.RaiseError("invalid format (repeated flags)")
		}
		i = skipDigits(spec, i, 2)
		if i < len(spec) && spec[i] == '.' {
			i = skipDigits(spec, i+1, 2)
		}
		if i < len(spec) && '0' <= spec[i] && spec[i] <= '9' {
			L.RaiseError("invalid format (width or precision too long)")
		}
	}
}

// skipDigits skips up to n digits of s from i.
func skipDigits(s string, i, n int) int {
	for ; n > 0 && i < len(s) && '0' <= s[i] && s[i] <= '9'; n-- {
		i++
	}
	return i
}

// A chunk is how much of a large string a builder makes between two
// looks at the run's context.
const chunk = 1 << 20

// changeCase is string.upper (from 'a') or string.lower (from 'A'): the 26
// letters from `from` change case, every other byte stays, as C's toupper
// and tolower do in the "C" locale that Redis's Lua runs in (gopher-lua's
// strings.ToUpper reads UTF-8 and writes U+FFFD for every byte that is
// not, and so may triple a string).
func (st *state) changeCase(L *lua.LState, s string, from byte) string {
	changes := func(c byte) bool { return c-from < 26 }
	i := 0
	for i < len(s) && !changes(s[i]) {
		i++
	}
	if i == len(s) { // nothing changes: the same string
		return s
	}
	st.reserve(L, float64(len(s)))
	out := make([]byte, len(s))
	copy(out, s[:i])
	for ; i < len(s); i++ {
		c := s[i]
		if changes(c) {
			c ^= 0x20
		}
		out[i] = c
		if i%chunk == chunk-1 {
			st.stopped(L)
		}
	}
	return unsafe.String(&out[0], len(out)) // out is not written again
}

// reverse is string.reverse.
func (st *state) reverse(L *lua.LState, s string) string {
	if len(s) < 2 {
		return s
	}
	st.reserve(L, float64(len(s)))
	out := make([]byte, len(s))
	for i := range out {
		out[i] = s[len(s)-1-i]
		if i%chunk == chunk-1 {
			st.stopped(L)
		}
	}
	return unsafe.String(&out[0], len(out)) // out is not written again
}

// sha1hex is redis.sha1hex of s: hashed where it is, a chunk at a time.
func (st *state) sha1hex(L *lua.LState, s string) string {
	h := sha1.New()
	for len(s) > 0 {
		n := min(len(s), chunk)
		h.Write(unsafe.Slice(unsafe.StringData(s), n))
		s = s[n:]
		st.stopped(L)
	}
	var sum [sha1.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0]))
}

// guard replaces t[name] with a function that runs pre with the limit (0:
// none) and then gives fast's result where fast is not nil and can (ok),
// or calls the original; the result is kept (keep).
func (st *state) guard(t *lua.LTable, name string, pre func(L *lua.LState, limit int64), fast func(L *lua.LState) (lua.LValue, bool)) {
	fn, ok := t.RawGetString(name).(*lua.LFunction)
	if !ok {
		return
	}
	t.RawSetString(name, st.L.NewFunction(func(L *lua.LState) int {
		pre(L, st.limit())
		if fast != nil {
			if v, ok := fast(L); ok {
				st.keep(v)
				L.Push(v)
				return 1
			}
		}
		n := callWith(L, fn)
		if n > 0 {
			st.keep(L.Get(-n))
		}
		return n
	}))
}

// limitGsub replaces string.gsub(s, pattern, repl [, n]) with one bounded
// by the limit. With a string repl each match adds at most repl's length,
// plus s's length for each capture it names (%0-%9): the call may make as
// many replacements as surely fit, and one more shows the result would
// not; where not even one fits, only a pattern that matches nowhere goes on.
// Any other repl is counted by what it returns, as gsub calls it.
func (st *state) limitGsub(str *lua.LTable) {
	gsub, ok := str.RawGetString("gsub").(*lua.LFunction)
	if !ok {
		return
	}
	bounded := st.gsubWithin(gsub)
	str.RawSetString("gsub", st.L.NewFunction(func(L *lua.LState) int {
		n := bounded(L)
		if n > 0 {
			st.keep(L.Get(-n))
		}
		return n
	}))
}

// gsubWithin is string.gsub within the limit (limitGsub).
func (st *state) gsubWithin(gsub *lua.LFunction) lua.LGFunction {
	return func(L *lua.LState) int {
		limit := st.limit()
		if limit <= 0 {
			return callWith(L, gsub)
		}
		s := L.CheckString(1)
		switch repl := L.Get(3).(type) {
		case lua.LString:
			each := float64(len(repl)) + float64(strings.Count(string(repl), "%"))*float64(len(s))
			if each == 0 {
				return callWith(L, gsub)
			}
			fits := int64((float64(limit) - float64(len(s))) / each)
			if fits < 1 { // only a pattern that matches nowhere is fine
				L.SetTop(2)
				L.Push(lua.LString(""))
				L.Push(lua.LNumber(1))
				callWith(L, gsub)
				if n, ok := L.Get(-1).(lua.LNumber); ok && n > 0 {
					st.stopOverMemory(L)
				}
				L.Push(lua.LString(s))
				L.Push(lua.LNumber(0))
				return 2
			}
			if n, ok := L.Get(4).(lua.LNumber); ok && int64(n) <= fits {
				return callWith(L, gsub)
			}
			L.SetTop(3)
			L.Push(lua.LNumber(fits + 1))
			results := callWith(L, gsub)
			if n, ok := L.Get(-1).(lua.LNumber); ok && int64(n) > fits {
				st.stopOverMemory(L)
			}
			return results
		case *lua.LFunction, *lua.LTable:
			total := float64(len(s))
			L.Replace(3, L.NewFunction(func(L *lua.LState) int {
				var v lua.LValue
				if t, ok := repl.(*lua.LTable); ok {
					v = L.GetTable(t, L.Get(1))
				} else {
					L.Insert(repl, 1)
					L.Call(L.GetTop()-1, 1)
					v = L.Get(-1)
				}
				if s, ok := v.(lua.LString); ok {
					total += float64(len(s))
					st.check(L, total, limit)
				}
				L.Push(v)
				return 1
			}))
		}
		return callWith(L, gsub)
	}
}

// callWith calls fn with the arguments on L's stack and returns its
// results.
func callWith(L *lua.LState, fn *lua.LFunction) int {
	top := L.GetTop()
	L.Push(fn)
	for i := 1; i <= top; i++ {
		L.Push(L.Get(i))
	}
	L.Call(top, lua.MultRet)
	return L.GetTop() - top
}
