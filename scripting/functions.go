package scripting

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/limitdb/limitdb/resp"
	lua "github.com/yuin/gopher-lua"
)

// Functions are Redis 7's FUNCTION libraries: Lua code that registers
// named functions with redis.register_function when it is loaded. The
// registry keeps each library's code; each interpreter loads a library
// the first time one of its functions is called there, and again after
// the registry changes.
type Functions struct {
	redisVersion string // redis.REDIS_VERSION while a library loads
	mu           sync.RWMutex
	libs         map[string]*Library
	byName       map[string]*Function
	version      uint64
}

// Library is one FUNCTION LOAD.
type Library struct {
	Name      string
	Code      string
	Functions []*Function // by name
	proto     *lua.FunctionProto
}

// Function is one registered function.
type Function struct {
	Name        string
	Description string
	Flags       []string // no-writes, allow-oom, allow-stale, no-cluster, allow-cross-slot-keys
	Lib         *Library
}

// NoWrites reports whether the function declared the no-writes flag
// (FCALL_RO may call only those).
func (f *Function) NoWrites() bool {
	for _, fl := range f.Flags {
		if fl == "no-writes" {
			return true
		}
	}
	return false
}

// NewFunctions returns an empty registry whose libraries see
// redisVersion as redis.REDIS_VERSION while they load.
func NewFunctions(redisVersion string) *Functions {
	return &Functions{redisVersion: redisVersion, libs: map[string]*Library{}, byName: map[string]*Function{}}
}

// functionFlags are the flags redis.register_function takes, any case.
var functionFlags = []string{"no-writes", "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys"}

// parseLibrary reads "#!lua name=<lib>" and compiles the code, then runs
// it once in a scratch interpreter to learn the functions it registers.
func parseLibrary(code, version string) (*Library, error) {
	first, _, _ := strings.Cut(code, "\n")
	if !strings.HasPrefix(first, "#!") {
		return nil, errors.New("ERR Missing library metadata")
	}
	fields := strings.Fields(strings.TrimPrefix(first, "#!"))
	if len(fields) == 0 {
		return nil, errors.New("ERR Missing library metadata")
	}
	if fields[0] != "lua" {
		return nil, fmt.Errorf("ERR Engine '%s' not found", fields[0])
	}
	lib := &Library{Code: code}
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k != "name" {
			return nil, fmt.Errorf("ERR Invalid metadata value given: %s", f)
		}
		lib.Name = v
	}
	if lib.Name == "" {
		return nil, errors.New("ERR Library name was not given")
	}
	if !validName(lib.Name) {
		return nil, errors.New("ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long")
	}
	// The shebang line stays in the code as a comment for the parser.
	proto, err := compileNamed(strings.Replace(code, "#!", "--", 1), "user_function", false)
	if err != nil {
		return nil, fmt.Errorf("ERR Error compiling function: %s", err.Error())
	}
	lib.proto = proto
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer L.Close()
	openLibs(L, newValues())
	fns, err := registerAll(L, lib, version)
	if err != nil {
		return nil, err
	}
	if len(fns) == 0 {
		return nil, errors.New("ERR No functions registered")
	}
	for _, f := range fns {
		lib.Functions = append(lib.Functions, f.meta)
	}
	sort.Slice(lib.Functions, func(i, j int) bool { return lib.Functions[i].Name < lib.Functions[j].Name })
	return lib, nil
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// registered is a function a library registered in one interpreter.
type registered struct {
	meta *Function
	fn   *lua.LFunction
}

// registerAll runs a library's code in L as Redis 7.0 loads a library,
// and returns what it registered. While it loads, the code sees one
// global, redis, with only register_function, log, the LOG_ levels and
// REDIS_VERSION(_NUM); once loaded, its functions see every global. It
// can create or assign no global, neither then nor when its functions
// run: its globals are an empty table that reads through and refuses
// writes, as Redis's are.
func registerAll(L *lua.LState, lib *Library, version string) (map[string]registered, error) {
	fns := map[string]registered{}
	missing := L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.CheckAny(2).String())
		return 0
	})
	refuse := L.NewFunction(func(L *lua.LState) int {
		L.RaiseError(readonlyError)
		return 0
	})
	// readOnly is an empty table that reads data (whose missing names
	// raise missing) and refuses every write.
	readOnly := func(data *lua.LTable) (*lua.LTable, *lua.LTable) {
		dm := L.NewTable()
		dm.RawSetString("__index", missing)
		L.SetMetatable(data, dm)
		v, mt := L.NewTable(), L.NewTable()
		mt.RawSetString("__index", data)
		mt.RawSetString("__newindex", refuse)
		L.SetMetatable(v, mt)
		return v, mt
	}
	fail := func(msg string) { // Redis's error table: no position
		e := L.NewTable()
		e.RawSetString("err", lua.LString("ERR "+msg))
		L.Error(e, 0)
	}
	r := L.NewTable()
	r.RawSetString("register_function", L.NewFunction(func(L *lua.LState) int {
		meta := &Function{Lib: lib}
		var cb *lua.LFunction
		switch L.GetTop() {
		case 1:
			cb = readNamedArgs(L, meta, fail)
		case 2:
			name, ok := L.Get(1).(lua.LString)
			if n, isNum := L.Get(1).(lua.LNumber); isNum {
				name, ok = lua.LString(n.String()), true
			}
			if !ok {
				fail("first argument to redis.register_function must be a string")
			}
			if cb, ok = L.Get(2).(*lua.LFunction); !ok {
				fail("second argument to redis.register_function must be a function")
			}
			meta.Name = string(name)
		default:
			fail("wrong number of arguments to redis.register_function")
		}
		if !validName(meta.Name) { // Redis 7.0's words, "Library" included
			fail("Library names can only contain letters, numbers, or underscores(_) and must be at least one character long")
		}
		if _, dup := fns[meta.Name]; dup {
			fail("Function already exists in the library")
		}
		fns[meta.Name] = registered{meta: meta, fn: cb}
		return 0
	}))
	r.RawSetString("log", L.NewFunction(func(L *lua.LState) int { return 0 }))
	for name, v := range map[string]int{"LOG_DEBUG": LogDebug, "LOG_VERBOSE": LogVerbose, "LOG_NOTICE": LogNotice, "LOG_WARNING": LogWarning} {
		r.RawSetString(name, lua.LNumber(v))
	}
	r.RawSetString("REDIS_VERSION", lua.LString(version))
	r.RawSetString("REDIS_VERSION_NUM", lua.LNumber(versionNum(version)))
	api, _ := readOnly(r)
	loading := L.NewTable()
	loading.RawSetString("redis", api)
	env, envMeta := readOnly(loading)
	fn := L.NewFunctionFromProto(lib.proto)
	fn.Env = env
	L.Push(fn)
	err := L.PCall(0, 0, L.NewFunction(keepError)) // no traceback (results.go)
	envMeta.RawSetString("__index", L.G.Global)    // what the functions see when they run
	if err != nil {
		return nil, fmt.Errorf("ERR Error registering functions: %s", strings.ReplaceAll(loadErrorText(err), "\n", " "))
	}
	return fns, nil
}

// readNamedArgs reads redis.register_function's one table of named
// arguments (names in any case) into meta, and returns the callback;
// it raises Redis's errors through fail.
func readNamedArgs(L *lua.LState, meta *Function, fail func(string)) *lua.LFunction {
	t, ok := L.Get(1).(*lua.LTable)
	if !ok {
		fail("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).")
	}
	var cb *lua.LFunction
	named := false
	asString := func(v lua.LValue) (string, bool) {
		switch v := v.(type) {
		case lua.LString:
			return string(v), true
		case lua.LNumber:
			return v.String(), true
		}
		return "", false
	}
	t.ForEach(func(k, v lua.LValue) {
		key, ok := asString(k)
		if !ok {
			fail("named argument key given to redis.register_function is not a string")
		}
		switch strings.ToLower(key) {
		case "function_name":
			if meta.Name, ok = asString(v); !ok {
				fail("function_name argument given to redis.register_function must be a string")
			}
			named = true
		case "description":
			if meta.Description, ok = asString(v); !ok {
				fail("description argument given to redis.register_function must be a string")
			}
		case "callback":
			if cb, ok = v.(*lua.LFunction); !ok {
				fail("callback argument given to redis.register_function must be a function")
			}
		case "flags":
			ft, ok := v.(*lua.LTable)
			if !ok {
				fail("flags argument to redis.register_function must be a table representing function flags")
			}
			meta.Flags = meta.Flags[:0]
			for i := 1; ; i++ {
				fv := ft.RawGetInt(i)
				if fv == lua.LNil {
					break
				}
				f, ok := asString(fv)
				j := slices.IndexFunc(functionFlags, func(name string) bool { return strings.EqualFold(name, f) })
				if !ok || j < 0 {
					fail("unknown flag given")
				}
				meta.Flags = append(meta.Flags, functionFlags[j])
			}
		default:
			fail("unknown argument given to redis.register_function")
		}
	})
	if !named {
		fail("redis.register_function must get a function name argument")
	}
	if cb == nil {
		fail("redis.register_function must get a callback argument")
	}
	return cb
}

// loadErrorText is what a library's failed load says after "Error
// registering functions: ", as Redis says it: an error table's text, or
// ERR and a raised string.
func loadErrorText(err error) string {
	var apiErr *lua.ApiError
	if !errors.As(err, &apiErr) {
		return "ERR " + err.Error()
	}
	if t, ok := apiErr.Object.(*lua.LTable); ok {
		return lua.LVAsString(t.RawGetString("err"))
	}
	return "ERR " + apiErr.Object.String()
}

// Load adds the library in code (FUNCTION LOAD), replacing one of the
// same name when replace is set, and returns its name.
func (fs *Functions) Load(code string, replace bool) (string, error) {
	lib, err := parseLibrary(code, fs.redisVersion)
	if err != nil {
		return "", err
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if err := fs.addLocked(lib, replace); err != nil {
		return "", err
	}
	return lib.Name, nil
}

func (fs *Functions) addLocked(lib *Library, replace bool) error {
	old := fs.libs[lib.Name]
	if old != nil && !replace {
		return fmt.Errorf("ERR Library '%s' already exists", lib.Name)
	}
	for _, f := range lib.Functions {
		if other := fs.byName[f.Name]; other != nil && other.Lib.Name != lib.Name {
			return fmt.Errorf("ERR Function %s already exists", f.Name)
		}
	}
	if old != nil {
		for _, f := range old.Functions {
			delete(fs.byName, f.Name)
		}
	}
	fs.libs[lib.Name] = lib
	for _, f := range lib.Functions {
		fs.byName[f.Name] = f
	}
	fs.version++
	return nil
}

// Delete removes a library (FUNCTION DELETE).
func (fs *Functions) Delete(name string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	lib := fs.libs[name]
	if lib == nil {
		return errors.New("ERR Library not found")
	}
	for _, f := range lib.Functions {
		delete(fs.byName, f.Name)
	}
	delete(fs.libs, name)
	fs.version++
	return nil
}

// Flush removes every library.
func (fs *Functions) Flush() {
	fs.mu.Lock()
	fs.libs, fs.byName = map[string]*Library{}, map[string]*Function{}
	fs.version++
	fs.mu.Unlock()
}

// Get returns the function named name, or nil.
func (fs *Functions) Get(name string) *Function {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	return fs.byName[name]
}

// Libraries lists the libraries by name.
func (fs *Functions) Libraries() []*Library {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	out := make([]*Library, 0, len(fs.libs))
	for _, l := range fs.libs {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (fs *Functions) current() uint64 {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	return fs.version
}

// dumpMagic starts a FUNCTION DUMP payload: limitdb's own format, not
// Redis's RDB encoding (a payload goes back to the server that made it, or
// to another limitdb).
var dumpMagic = []byte("LDBFN\x01")

// Dump serialises every library (FUNCTION DUMP): magic, then each
// library's code as uvarint length and bytes, then a CRC-32C.
func (fs *Functions) Dump() []byte {
	b := append([]byte(nil), dumpMagic...)
	for _, l := range fs.Libraries() {
		b = binary.AppendUvarint(b, uint64(len(l.Code)))
		b = append(b, l.Code...)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}

// Restore loads a Dump payload (FUNCTION RESTORE) with policy FLUSH,
// APPEND (a library that exists is an error) or REPLACE.
func (fs *Functions) Restore(payload []byte, policy string) error {
	codes, err := parseDump(payload)
	if err != nil {
		return err
	}
	var libs []*Library
	for _, code := range codes {
		lib, err := parseLibrary(code, fs.redisVersion)
		if err != nil {
			return err
		}
		libs = append(libs, lib)
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	oldLibs, oldNames := fs.libs, fs.byName
	if policy == "FLUSH" {
		fs.libs, fs.byName = map[string]*Library{}, map[string]*Function{}
	} else {
		fs.libs, fs.byName = copyMap(oldLibs), copyMap(oldNames)
	}
	for _, lib := range libs {
		if err := fs.addLocked(lib, policy == "REPLACE"); err != nil {
			fs.libs, fs.byName = oldLibs, oldNames
			return err
		}
	}
	fs.version++
	return nil
}

func copyMap[V any](m map[string]V) map[string]V {
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func parseDump(p []byte) ([]string, error) {
	bad := errors.New("ERR payload version or checksum are wrong")
	if len(p) < len(dumpMagic)+4 || !bytes.HasPrefix(p, dumpMagic) {
		return nil, bad
	}
	body, sum := p[:len(p)-4], binary.LittleEndian.Uint32(p[len(p)-4:])
	if crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)) != sum {
		return nil, bad
	}
	var out []string
	for rest := body[len(dumpMagic):]; len(rest) > 0; {
		n, k := binary.Uvarint(rest)
		if k <= 0 || n > uint64(len(rest)-k) {
			return nil, bad
		}
		out = append(out, string(rest[k:k+int(n)]))
		rest = rest[k+int(n):]
	}
	return out, nil
}

// Save and LoadSection are the snapshot section "functions": the
// libraries survive a restart and reach replicas, as in Redis.
func (fs *Functions) Save() ([]byte, error) { return fs.Dump(), nil }

// LoadSection replaces the libraries with a Save payload.
func (fs *Functions) LoadSection(data []byte) error { return fs.Restore(data, "FLUSH") }

// Call runs function f with keys and args, as Run runs a script.
func (r *Runner) Call(fs *Functions, f *Function, keys, args [][]byte, caller Caller, w *resp.Writer, h *Handle) error {
	st := r.pool.Get().(*state)
	defer r.pool.Put(st)
	fn, err := st.function(fs, f)
	if err != nil {
		w.Error(err.Error())
		return err
	}
	L := st.L
	return r.runFunc(st, fn, f.Name, func() { L.Push(stringsTable(L, keys)); L.Push(stringsTable(L, args)) }, 2, true, caller, w, h)
}

// function returns f's callback in st's interpreter, loading its library
// there first when the registry changed since.
func (st *state) function(fs *Functions, f *Function) (*lua.LFunction, error) {
	if v := fs.current(); st.fnVersion != v || st.fns == nil {
		st.fns, st.loadedLibs, st.fnVersion = map[string]*lua.LFunction{}, map[string]bool{}, v
	}
	if fn := st.fns[f.Name]; fn != nil {
		return fn, nil
	}
	if st.loadedLibs[f.Lib.Name] {
		return nil, errors.New("ERR Function not found")
	}
	st.loadedLibs[f.Lib.Name] = true
	fns, err := registerAll(st.L, f.Lib, fs.redisVersion)
	if err != nil {
		return nil, err
	}
	for name, reg := range fns {
		st.fns[name] = reg.fn
	}
	if fn := st.fns[f.Name]; fn != nil {
		return fn, nil
	}
	return nil, errors.New("ERR Function not found")
}
