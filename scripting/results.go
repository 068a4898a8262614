package scripting

import (
	lua "github.com/yuin/gopher-lua"
)

// Lua 5.1's bounds on a run's stack, with its errors.
//
// A C function of Lua 5.1 may hold at most LUAI_MAXCSTACK (8000) values on
// its stack, its arguments included: unpack answers "too many results to
// unpack" and string.byte "stack overflow (string slice too long)" past
// it, before pushing anything. gopher-lua's own unpack and string.byte
// push whatever range they are given (a million values, the registry
// grown a few slots at a time), so both are replaced.
//
// Calls nest as Redis's Lua 5.1 lets them: Lua functions up to
// callStackSize frames (LUAI_MAXCALLS), past which the run fails with
// "stack overflow", Lua's words (a pcall gets it as its error), and
// protected calls maxProtected deep (LUAI_MAXCCALLS counts them with the
// other C calls), past which pcall answers false, "C stack overflow".
// The interpreter's stack of frames grows as a run needs it, in segments,
// so an interpreter that never recurses holds a few frames, not 20000. A
// tail call reuses its frame, as in Lua: an endless tail recursion runs in
// constant memory until it is stopped.
// gopher-lua counts a frame's tail calls and, when an error ends a
// protected call without a message handler, writes a traceback line for
// each of them (millions of lines, hundreds of megabytes, seconds after
// SCRIPT KILL): every protected call of this package, and the script's
// pcall, therefore run with keepError as their handler, which gives the
// error as it is and makes no traceback.

// maxResults is Lua 5.1's LUAI_MAXCSTACK: the most values a library
// function may have on its stack.
const maxResults = 8000

// callStackSize is the most call frames of a run: Lua functions, and the
// library functions between them (Lua 5.1's LUAI_MAXCALLS). The frames come
// in segments of eight, and a recursion inside pcall reaches one level
// deeper than in Redis (19998 against 19997).
const callStackSize = 20000

// maxProtected is how deep pcalls nest: the 199th nested pcall fails, as
// in Redis, whose LUAI_MAXCCALLS of 200 counts the C call into the script
// too.
const maxProtected = 198

// keepError is the message handler of a protected call: the error as it
// was raised.
func keepError(L *lua.LState) int { return 1 }

// boundResults replaces unpack, string.byte and pcall in the globals g
// (the string library opened).
func boundResults(L *lua.LState, g *lua.LTable) {
	keep := L.NewFunction(keepError)
	g.RawSetString("unpack", L.NewFunction(unpack))
	if str, ok := g.RawGetString("string").(*lua.LTable); ok {
		str.RawSetString("byte", L.NewFunction(stringByte))
	}
	depth := 0 // pcalls under way, nested
	g.RawSetString("pcall", L.NewFunction(func(L *lua.LState) int {
		L.CheckAny(1)
		if depth >= maxProtected {
			L.Push(lua.LFalse)
			L.Push(lua.LString("C stack overflow"))
			return 2
		}
		depth++
		defer func() { depth-- }()
		v := L.Get(1)
		if v.Type() != lua.LTFunction && L.GetMetaField(v, "__call").Type() != lua.LTFunction {
			L.Push(lua.LFalse)
			L.Push(lua.LString("attempt to call a " + v.Type().String() + " value"))
			return 2
		}
		if err := L.PCall(L.GetTop()-1, lua.MultRet, keep); err != nil {
			L.Push(lua.LFalse)
			if apiErr, ok := err.(*lua.ApiError); ok {
				L.Push(apiErr.Object)
			} else {
				L.Push(lua.LString(err.Error()))
			}
			return 2
		}
		L.Insert(lua.LTrue, 1)
		return L.GetTop()
	}))
}

// unpack is Lua 5.1's unpack(t [, i [, j]]): t[i] ... t[j], i 1 and j #t
// when not given.
func unpack(L *lua.LState) int {
	t := L.CheckTable(1)
	i := intArg(L, 2, 1)
	j := intArg(L, 3, int64(t.Len()))
	if i > j {
		return 0
	}
	n := j - i + 1
	if n <= 0 || n+int64(L.GetTop()) > maxResults {
		L.RaiseError("too many results to unpack")
	}
	for k := i; k <= j; k++ {
		L.Push(t.RawGetInt(int(k)))
	}
	return int(n)
}

// stringByte is Lua 5.1's string.byte(s [, i [, j]]): the codes of
// s[i..j], i 1 and j i when not given, negative positions from the end.
func stringByte(L *lua.LState) int {
	s := L.CheckString(1)
	first := position(intArg(L, 2, 1), len(s))
	last := position(intArg(L, 3, first), len(s))
	first = max(first, 1)
	last = min(last, int64(len(s)))
	if first > last {
		return 0
	}
	n := last - first + 1
	if n+int64(L.GetTop()) > maxResults {
		L.RaiseError("stack overflow (string slice too long)")
	}
	for k := first; k <= last; k++ {
		L.Push(lua.LNumber(s[k-1]))
	}
	return int(n)
}

// intArg is argument n as Lua 5.1's luaL_optint reads it: a number or a
// string that converts to one, truncated; def when absent or nil.
func intArg(L *lua.LState, n int, def int64) int64 {
	if L.Get(n) == lua.LNil {
		return def
	}
	return int64(L.CheckNumber(n))
}

// position is Lua 5.1's posrelat: a negative position counts from the
// end of a string of length n, and one before its start is 0.
func position(pos int64, n int) int64 {
	if pos < 0 {
		pos += int64(n) + 1
	}
	return max(pos, 0)
}

// registryStep is how many slots the registry grows by past what a call
// needs.
const registryStep = 1 << 14
