package scripting

import lua "github.com/yuin/gopher-lua"

// readonlyError is Redis 7's error for a write to a protected table.
const readonlyError = "Attempt to modify a readonly table"

// libraryNames are the globals that hold libraries: Redis 7 makes each
// read-only, so that no script can change what the next one runs.
var libraryNames = []string{"redis", "server", "string", "math", "table", "coroutine", "cjson"}

// protectLibraries puts a read-only view of every library in the globals,
// as Redis 7 does (gopher-lua has no read-only tables): an empty table
// that reads through to the library and refuses writes, rawset and
// setmetatable included. Strings' methods stay the library's own (one
// lookup), but getmetatable("") shows a read-only view too. getmetatable
// of a view is nil and pairs walks the library, as in Redis. The globals
// table itself is not a view (every global read would take three
// lookups): a new global is refused by its metatable, and only a script
// that may assign one runs with a view of the globals (protectGlobals).
func (st *state) protectLibraries() {
	L := st.L
	g := L.G.Global
	st.hidden = L.NewTable()
	st.views = map[*lua.LTable]*lua.LTable{}
	refuse := L.NewFunction(func(L *lua.LState) int {
		L.RaiseError(readonlyError) // with the script's line, as Redis's
		return 0
	})
	view := func(t *lua.LTable) *lua.LTable {
		v, mt := L.NewTable(), L.NewTable()
		mt.RawSetString("__index", t)
		mt.RawSetString("__newindex", refuse)
		mt.RawSetString("__metatable", st.hidden)
		L.SetMetatable(v, mt)
		st.views[v] = t
		return v
	}
	made := map[*lua.LTable]*lua.LTable{} // redis and server: one view
	for _, name := range libraryNames {
		t, ok := g.RawGetString(name).(*lua.LTable)
		if !ok {
			continue
		}
		if made[t] == nil {
			made[t] = view(t)
		}
		g.RawSetString(name, made[t])
	}
	// gopher-lua makes the string library strings' metatable, with an
	// __index of itself; Redis's library has no __index, and its strings'
	// metatable is a table of its own.
	if strView, ok := made[L.GetMetatable(lua.LString("")).(*lua.LTable)]; ok {
		strLib := st.views[strView]
		strLib.RawSetString("__index", lua.LNil)
		mt, shown := L.NewTable(), L.NewTable()
		mt.RawSetString("__index", strLib)
		shown.RawSetString("__index", strView)
		mt.RawSetString("__metatable", view(shown))
		L.SetMetatable(lua.LString(""), mt)
	}
	// The globals' metatable: seen read-only.
	if mt, ok := L.GetMetatable(g).(*lua.LTable); ok {
		shown := L.NewTable()
		mt.ForEach(func(k, v lua.LValue) { shown.RawSet(k, v) })
		mt.RawSetString("__metatable", view(shown))
	}
	g.RawSetString("rawset", L.NewFunction(func(L *lua.LState) int {
		t := L.CheckTable(1)
		st.refuseProtected(L, t)
		L.RawSet(t, L.CheckAny(2), L.CheckAny(3))
		L.SetTop(1)
		return 1
	}))
	g.RawSetString("setmetatable", L.NewFunction(func(L *lua.LState) int {
		st.refuseProtected(L, L.CheckTable(1))
		L.CheckTypes(2, lua.LTNil, lua.LTTable)
		L.SetMetatable(L.Get(1), L.Get(2))
		L.SetTop(1)
		return 1
	}))
	g.RawSetString("getmetatable", L.NewFunction(func(L *lua.LState) int {
		mt := L.GetMetatable(L.CheckAny(1))
		if mt == st.hidden {
			mt = lua.LNil
		}
		L.Push(mt)
		return 1
	}))
	pairs, _ := g.RawGetString("pairs").(*lua.LFunction)
	g.RawSetString("pairs", L.NewFunction(func(L *lua.LState) int {
		t, ok := L.Get(1).(*lua.LTable)
		if lib := st.views[t]; ok && lib != nil {
			L.Push(L.NewFunction(func(L *lua.LState) int { // next over the library, the view never handed out
				k, v := lib.Next(L.Get(2))
				if k == lua.LNil {
					L.Push(lua.LNil)
					return 1
				}
				L.Push(k)
				L.Push(v)
				return 2
			}))
			L.Push(t)
			L.Push(lua.LNil)
			return 3
		}
		return callWith(L, pairs)
	}))
}

// protectGlobals makes the globals read-only for the scripts that could
// write them, as Redis 7's are: _G, the globals of a script that may
// assign a global (Script.setsGlobals, so that scripts that cannot pay
// no extra lookup) and the globals of a chunk loadstring makes are one
// empty view that reads through to the globals and refuses every write,
// to a global that exists too. pairs(_G) walks the globals, and
// getmetatable(_G) is what it is of the globals.
func (st *state) protectGlobals() {
	L := st.L
	g := L.G.Global
	refuse := L.NewFunction(func(L *lua.LState) int {
		L.RaiseError(readonlyError)
		return 0
	})
	v, mt := L.NewTable(), L.NewTable()
	mt.RawSetString("__index", g)
	mt.RawSetString("__newindex", refuse)
	mt.RawSetString("__metatable", L.GetMetatable(g)) // the globals' own __metatable: their read-only view
	L.SetMetatable(v, mt)
	st.views[v] = g
	st.globalsView = v
	g.RawSetString("_G", v)
	if ls, ok := g.RawGetString("loadstring").(*lua.LFunction); ok && ls.IsG {
		load := ls.GFunction
		g.RawSetString("loadstring", L.NewFunction(func(L *lua.LState) int {
			n := load(L)
			if fn, ok := L.Get(-n).(*lua.LFunction); ok {
				fn.Env = v
			}
			return n
		}))
	}
	if ld, ok := g.RawGetString("load").(*lua.LFunction); ok && ld.IsG {
		load := ld.GFunction
		g.RawSetString("load", L.NewFunction(func(L *lua.LState) int {
			n := load(L)
			if fn, ok := L.Get(-n).(*lua.LFunction); ok {
				fn.Env = v
			}
			return n
		}))
	}
}

// refuseProtected raises Redis's error for a write, by rawset or
// setmetatable, to a library's view or to the globals.
func (st *state) refuseProtected(L *lua.LState, t *lua.LTable) {
	if st.views[t] != nil || t == L.G.Global {
		raise(L, "ERR "+readonlyError) // no position in front, as Redis's
	}
}
