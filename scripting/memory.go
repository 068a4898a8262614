package scripting

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// script-memory-limit, inside the interpreter. A string is the only value
// a script can grow exponentially (s = s .. s doubles it at every step),
// and one library call can make a string far larger than its inputs
// (string.rep, a gsub of every character by a long string, table.concat of
// many references to one string), so every way of making a larger string
// checks, before it allocates, that the new string stays within the limit:
//
//	a .. b, string.rep     the exact size
//	table.concat           the exact size (the parts' lengths)
//	string.format          its string arguments' lengths together
//	cjson.encode           the strings and keys it will write, one byte
//	                       for every other value
//	string.gsub            a string replacement: at most as many matches as
//	                       fit; a function or table one: what it returns,
//	                       counted as gsub asks for it
//
// A string over the limit stops the run: its context is cancelled, so a
// pcall in the script cannot go on past it, and the client gets "Script
// used more memory than script-memory-limit allows". Growth by many values
// (a table filled in a loop) is linear, and the server's watchdog stops a
// run whose heap growth passes the limit (command's busyScripts).

// smallString is the size up to which `..` does not read the limit: most
// joins of a script are small, and the limit is meant for megabytes.
const smallString = 4 << 10

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

// limitStrings installs `..` and the checked string makers.
func (st *state) limitStrings() {
	L := st.L
	g := L.G.Global
	g.RawSetString(concatName, L.NewFunction(func(L *lua.LState) int {
		a, b := concatPart(L, L.CheckAny(1)), concatPart(L, L.CheckAny(2))
		if n := len(a) + len(b); n > smallString {
			st.check(L, float64(n), st.limit())
		}
		L.Push(lua.LString(a + b))
		return 1
	}))
	if str, ok := g.RawGetString("string").(*lua.LTable); ok {
		st.guard(str, "rep", func(L *lua.LState, limit int64) {
			st.check(L, float64(len(L.CheckString(1)))*float64(L.OptInt(2, 0)), limit)
		}, nil)
		// string.format's %s and %q also take a number as Lua 5.1 writes
		// it. The string table is strings' methods table too:
		// ("%s"):format(n).
		st.guard(str, "format", func(L *lua.LState, limit int64) {
			numbersAsLua51(L, L.CheckString(1))
			if limit <= 0 {
				return
			}
			n := 0
			for i := 2; i <= L.GetTop(); i++ {
				if s, ok := L.Get(i).(lua.LString); ok {
					n += len(s)
				}
			}
			st.check(L, float64(n), limit)
		}, st.formatPlain)
		st.limitGsub(str)
	}
	if tab, ok := g.RawGetString("table").(*lua.LTable); ok {
		st.guard(tab, "concat", func(L *lua.LState, limit int64) {
			if limit <= 0 {
				return
			}
			t := L.CheckTable(1)
			sep := len(L.OptString(2, ""))
			i, j := L.OptInt(3, 1), L.OptInt(4, t.Len())
			n := 0
			for k := i; k <= j && float64(n) <= float64(limit); k++ {
				if s, ok := t.RawGetInt(k).(lua.LString); ok {
					n += len(s)
				}
				n += sep
			}
			st.check(L, float64(n), limit)
		}, nil)
	}
	if cj, ok := g.RawGetString("cjson").(*lua.LTable); ok {
		st.guard(cj, "encode", func(L *lua.LState, limit int64) {
			if limit <= 0 {
				return
			}
			n := 0
			encodedAtLeast(L.Get(1), &n, limit, 0)
			st.check(L, float64(n), limit)
		}, nil)
	}
}

// guard replaces t[name] with a function that runs pre with the limit (0:
// none) and then gives fast's result where fast is not nil and can (ok),
// or calls the original.
func (st *state) guard(t *lua.LTable, name string, pre func(L *lua.LState, limit int64), fast func(L *lua.LState) (lua.LValue, bool)) {
	fn, ok := t.RawGetString(name).(*lua.LFunction)
	if !ok {
		return
	}
	t.RawSetString(name, st.L.NewFunction(func(L *lua.LState) int {
		pre(L, st.limit())
		if fast != nil {
			if v, ok := fast(L); ok {
				L.Push(v)
				return 1
			}
		}
		return callWith(L, fn)
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
	str.RawSetString("gsub", st.L.NewFunction(func(L *lua.LState) int {
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
	}))
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

// encodedAtLeast adds to n a lower bound of the bytes cjson.encode writes
// for v: its strings and keys, and a byte for every other value; it stops
// once n passes limit or below cjson's nesting limit.
func encodedAtLeast(v lua.LValue, n *int, limit int64, depth int) {
	if float64(*n) > float64(limit) || depth > 1000 {
		return
	}
	switch v := v.(type) {
	case lua.LString:
		*n += len(v)
	case *lua.LTable:
		v.ForEach(func(k, e lua.LValue) {
			if s, ok := k.(lua.LString); ok {
				*n += len(s)
			}
			encodedAtLeast(e, n, limit, depth+1)
		})
	default:
		*n++
	}
}
