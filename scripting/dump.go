package scripting

import (
	"encoding/binary"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// luaHeader is the header of a Lua 5.1 binary chunk as Redis's Lua
// writes it on x86-64: "\x1bLua", version 5.1, the official format,
// little-endian, 4-byte int, 8-byte size_t, 4-byte instruction, 8-byte
// floating-point number.
const luaHeader = "\x1bLuaQ\x00\x01\x04\x08\x04\x08\x00"

// stringDump is string.dump as far as gopher-lua can give it: a Lua 5.1
// binary chunk's header and the start of the function's description (its
// source, first and last line, upvalues, parameters, vararg flags and
// registers), which is what Redis's Lua writes first. gopher-lua compiles
// to instructions of its own, so the instructions, constants and debug
// information Lua would write next are not written; no script can load
// either kind, as Redis's loadstring refuses binary chunks
// (loadString).
func stringDump(L *lua.LState) int {
	fn, ok := L.Get(1).(*lua.LFunction)
	if !ok {
		got := "no value"
		if L.GetTop() >= 1 {
			got = L.Get(1).Type().String()
		}
		L.RaiseError("bad argument #1 to 'dump' (function expected, got %s)", got)
	}
	if fn.IsG {
		L.RaiseError("unable to dump given function")
	}
	p := fn.Proto
	b := make([]byte, 0, len(luaHeader)+8+len(p.SourceName)+2+12)
	b = append(b, luaHeader...)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(p.SourceName)+2))
	b = append(b, '@')
	b = append(b, p.SourceName...)
	b = append(b, 0)
	b = binary.LittleEndian.AppendUint32(b, uint32(p.LineDefined))
	b = binary.LittleEndian.AppendUint32(b, uint32(p.LastLineDefined))
	b = append(b, p.NumUpvalues, p.NumParameters, p.IsVarArg, p.NumUsedRegisters)
	L.Push(lua.LString(b))
	return 1
}

// loadString wraps loadstring: a chunk that starts with ESC, as a binary
// chunk does, gets nil and the error Redis's Lua gives it (Redis removed
// Lua's binary loader, so its lexer meets the ESC); anything else goes to
// load.
func loadString(load lua.LGFunction) lua.LGFunction {
	return func(L *lua.LState) int {
		s := L.CheckString(1)
		if !strings.HasPrefix(s, "\x1b") {
			return load(L)
		}
		L.Push(lua.LNil)
		L.Push(lua.LString(chunkID(L.OptString(2, s)) + ":1: unexpected symbol near 'char(27)'"))
		return 2
	}
}

// chunkID is how Lua 5.1's lexer names a chunk in an error (luaO_chunkid
// with llex.c's MAXSRC of 80): "=name" as name, "@file" as file (its
// last part when long), and source text as [string "its first line"],
// cut with "..." when longer. The name is a C string: it ends at a NUL.
func chunkID(source string) string {
	const size = 80
	if i := strings.IndexByte(source, 0); i >= 0 {
		source = source[:i]
	}
	switch {
	case strings.HasPrefix(source, "="):
		return source[1:min(len(source), size)]
	case strings.HasPrefix(source, "@"):
		if s, n := source[1:], size-len(" '...' ")-1; len(s) > n {
			return "..." + s[len(s)-n:]
		} else {
			return s
		}
	}
	n := strings.IndexAny(source, "\n\r")
	if n < 0 {
		n = len(source)
	}
	n = min(n, size-len(` [string "..."] `)-1)
	if n < len(source) {
		return `[string "` + source[:n] + `..."]`
	}
	return `[string "` + source + `"]`
}
