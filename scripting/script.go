package scripting

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// Script is a compiled script, known by the SHA1 of its body.
type Script struct {
	SHA   string
	Body  []byte
	proto *lua.FunctionProto
	Runs  atomic.Int64

	// setsGlobals is false for a script that cannot assign a global: a
	// run of it need not put the globals back.
	setsGlobals bool
	// bounded: the script runs each instruction at most once (straightLine)
	// and cannot reach other Lua code, so it runs without the context
	// gopher-lua checks before every instruction, which only a run that
	// could go on forever needs.
	bounded bool
}

// Cache holds the scripts EVAL and SCRIPT LOAD compiled, by SHA1, until
// SCRIPT FLUSH or a restart (as in Redis, scripts are not persisted).
type Cache struct {
	mu      sync.RWMutex
	m       map[string]*Script
	flushes atomic.Uint64
}

// NewCache returns an empty cache.
func NewCache() *Cache { return &Cache{m: map[string]*Script{}} }

// SHA1 is the lowercase hex SHA1 of body, a script's name.
func SHA1(body []byte) string {
	h := sha1.Sum(body)
	return hex.EncodeToString(h[:])
}

// Get returns the script named sha (any case), or nil. It takes the
// name as EVALSHA's argument holds it, and allocates nothing for a name
// in lowercase.
func (c *Cache) Get(sha []byte) *Script {
	if s := c.get(sha); s != nil || !hasUpper(sha) {
		return s
	}
	return c.get(bytes.ToLower(sha))
}

func (c *Cache) get(sha []byte) *Script {
	c.mu.RLock()
	s := c.m[string(sha)]
	c.mu.RUnlock()
	return s
}

func hasUpper(b []byte) bool {
	for _, ch := range b {
		if 'A' <= ch && ch <= 'Z' {
			return true
		}
	}
	return false
}

// Load compiles body and caches it; a body already cached is not compiled
// again. A body that does not compile is an error in Redis's words.
func (c *Cache) Load(body []byte) (*Script, error) {
	sha := SHA1(body)
	c.mu.RLock()
	s := c.m[sha]
	c.mu.RUnlock()
	if s != nil {
		return s, nil
	}
	proto, sets, err := compile(body)
	if err != nil {
		return nil, err
	}
	s = &Script{SHA: sha, Body: append([]byte(nil), body...), proto: proto, setsGlobals: sets,
		bounded: !sets && straightLine(proto)}
	c.mu.Lock()
	if old := c.m[sha]; old != nil {
		s = old
	} else {
		c.m[sha] = s
	}
	c.mu.Unlock()
	return s, nil
}

// Flush forgets every script.
func (c *Cache) Flush() {
	c.mu.Lock()
	c.m = map[string]*Script{}
	c.flushes.Add(1)
	c.mu.Unlock()
}

// Flushes counts the calls of Flush: a caller that keeps a script it
// looked up may run it again while the count has not changed since.
func (c *Cache) Flushes() uint64 { return c.flushes.Load() }

// Len is the number of cached scripts.
func (c *Cache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}

// Memory estimates the bytes the cached bodies hold (INFO's
// used_memory_scripts_eval).
func (c *Cache) Memory() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var n int64
	for _, s := range c.m {
		n += int64(len(s.Body))*3 + 200
	}
	return n
}

// compile parses body as the body of a function, as Redis does, and
// reports whether it may assign a global (maySetGlobals).
func compile(body []byte) (proto *lua.FunctionProto, setsGlobals bool, err error) {
	proto, err = compileNamed(string(body), "user_script", true)
	if err == nil && maySetGlobals(proto) { // redis may not be the library: calls as written
		setsGlobals = true
		proto, err = compileNamed(string(body), "user_script", false)
	}
	if err != nil {
		return nil, false, fmt.Errorf("Error compiling script (new function): %s", err.Error())
	}
	return proto, setsGlobals, nil
}

// compileNamed compiles code as chunk name (which error positions show);
// with hidden, redis.call and redis.pcall are called through hidden
// globals (discard.go).
func compileNamed(code, name string, hidden bool) (*lua.FunctionProto, error) {
	chunk, err := parse.Parse(strings.NewReader(code), name)
	if err != nil {
		return nil, errors.New(compileMessage(err, name))
	}
	rewriteConcat(reflect.ValueOf(&chunk).Elem())
	if hidden {
		rewriteCalls(reflect.ValueOf(&chunk).Elem())
	}
	proto, err := lua.Compile(chunk, name)
	if err != nil {
		return nil, errors.New(compileMessage(err, name))
	}
	// Redis runs a body as a function of no arguments; gopher-lua compiles
	// a chunk as a vararg one and, for Lua 5.1's `arg`, builds a table on
	// every call: three quarters of what a run allocated
	// (go test -bench EvalSHA -benchmem ./command/scripts/).
	proto.IsVarArg &^= lua.VarArgNeedsArg
	sizeTables(proto)
	return proto, nil
}

// globalsReachers are the globals through which a script can reach the
// globals table, or code that can, without naming a global in an
// assignment.
var globalsReachers = []string{"_G", "getfenv", "setfenv", "load", "loadstring"}

// maySetGlobals reports whether code compiled as proto might assign a
// global: an assignment to one (SETGLOBAL, here or in a nested function),
// or any constant naming a way to the globals table. A script that cannot
// assign one is most scripts; for it the run skips putting every global
// back, a twentieth of a short script's run.
func maySetGlobals(proto *lua.FunctionProto) bool {
	for _, inst := range proto.Code {
		if opcode(inst) == lua.OP_SETGLOBAL {
			return true
		}
	}
	for _, c := range proto.Constants {
		if s, ok := c.(lua.LString); ok && slices.Contains(globalsReachers, string(s)) {
			return true
		}
	}
	return slices.ContainsFunc(proto.FunctionPrototypes, maySetGlobals)
}

// straightLine reports whether proto has no loop (a backward jump, a
// numeric or generic for) and makes no function: each of its instructions
// runs at most once a call. With maySetGlobals false (no load, loadstring
// or _G) such a script can reach no Lua function but itself, which it has
// no name for, so its run ends after at most its length in instructions
// and the Go functions it calls. gopher-lua has only a context to stop a
// run, and checks it before every instruction.
func straightLine(proto *lua.FunctionProto) bool {
	for _, inst := range proto.Code {
		switch opcode(inst) {
		case lua.OP_FORLOOP, lua.OP_FORPREP, lua.OP_TFORLOOP, lua.OP_CLOSURE:
			return false
		case lua.OP_JMP:
			if sbx := int(inst&0x3ffff) - 0x3ffff>>1; sbx < 0 {
				return false
			}
		}
	}
	for _, c := range proto.Constants {
		if name, ok := c.(lua.LString); ok && backtracks(string(name)) {
			return false
		}
	}
	return len(proto.FunctionPrototypes) == 0
}

// backtracks names the library functions one call of which can run for
// long without building anything the memory checks see: the pattern
// matchers, and table.sort. A script that names one keeps the context,
// which they check as they backtrack or compare.
func backtracks(name string) bool {
	switch name {
	case "find", "match", "gmatch", "gsub", "sort":
		return true
	}
	return false
}

// compileMessage turns gopher-lua's parse error into Lua's "user_script:1:
// ..." form.
func compileMessage(err error, name string) string {
	msg := err.Error()
	if pe, ok := err.(*parse.Error); ok {
		line := pe.Pos.Line
		if line < 1 { // the end of the body
			line = strings.Count(msg, "\n") + 1
		}
		return fmt.Sprintf("%s:%d: %s near '%s'", name, line, pe.Message, pe.Token)
	}
	return strings.ReplaceAll(msg, "\n", " ")
}
