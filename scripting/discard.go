package scripting

import (
	"reflect"

	"github.com/yuin/gopher-lua/ast"
)

// A statement `redis.call(...)` drops what the command answered. Building
// it anyway costs: a status reply such as SET's +OK is a table, which
// gopher-lua keeps in two Go maps, two fifths of the bytes a short script
// allocates (go test -bench EvalSHA -benchmem ./command/scripts/). So such a
// statement is compiled as a call to callVoidName (pcallVoidName for
// redis.pcall): the same command, the same error raised for an error
// reply, and no result. Every other call of redis.call or redis.pcall is
// compiled as a call to callName or pcallName, the same functions reached
// in one global lookup instead of four (the global, the read-only view,
// its metatable, the library: readonly.go). server.call is the same. Where
// a script names a local `redis` (or `server`) anywhere, or can assign a
// global (maySetGlobals), its calls are left as written.
const (
	callName      = "__limitdb_call"
	pcallName     = "__limitdb_pcall"
	callVoidName  = "__limitdb_call_void"
	pcallVoidName = "__limitdb_pcall_void"
)

// rewriteCalls rewrites, below v, the calls of redis.call, redis.pcall,
// server.call and server.pcall.
func rewriteCalls(v reflect.Value) {
	local := map[string]bool{}
	walkAST(v, func(v reflect.Value) {
		if v.Kind() != reflect.Pointer || v.IsNil() {
			return
		}
		var names []string
		switch n := v.Interface().(type) {
		case *ast.LocalAssignStmt:
			names = n.Names
		case *ast.NumberForStmt:
			names = []string{n.Name}
		case *ast.GenericForStmt:
			names = n.Names
		case *ast.ParList:
			names = n.Names
		}
		for _, name := range names {
			local[name] = true
		}
	})
	// walkAST visits a statement after its expression: the call is
	// renamed first, then made void where it is a statement.
	walkAST(v, func(v reflect.Value) {
		if v.Kind() != reflect.Pointer || v.IsNil() {
			return
		}
		switch n := v.Interface().(type) {
		case *ast.FuncCallExpr:
			get, ok := n.Func.(*ast.AttrGetExpr)
			if !ok || n.Receiver != nil {
				return
			}
			lib, ok1 := get.Object.(*ast.IdentExpr)
			fn, ok2 := get.Key.(*ast.StringExpr)
			if !ok1 || !ok2 || (lib.Value != "redis" && lib.Value != "server") || local[lib.Value] {
				return
			}
			switch fn.Value {
			case "call":
				n.Func = renamed(get, callName)
			case "pcall":
				n.Func = renamed(get, pcallName)
			}
		case *ast.FuncCallStmt:
			call, ok := n.Expr.(*ast.FuncCallExpr)
			if !ok {
				return
			}
			if id, ok := call.Func.(*ast.IdentExpr); ok {
				switch id.Value {
				case callName:
					id.Value = callVoidName
				case pcallName:
					id.Value = pcallVoidName
				}
			}
		}
	})
}

// renamed is the global name in place of the expression at.
func renamed(at ast.Expr, name string) *ast.IdentExpr {
	id := &ast.IdentExpr{Value: name}
	id.SetLine(at.Line())
	id.SetLastLine(at.LastLine())
	return id
}
