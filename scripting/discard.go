package scripting

import (
	"reflect"

	"github.com/yuin/gopher-lua/ast"
)

// A statement `redis.call(...)` drops what the command answered. Building
// it anyway costs: a status reply such as SET's +OK is a table, which
// gopher-lua keeps in two Go maps, two fifths of the bytes a short script
// allocates (go test -bench EvalSHA -benchmem ./command/). So such a
// statement is compiled as a call to callVoidName (pcallVoidName for
// redis.pcall): the same command, the same error raised for an error
// reply, and no result. server.call is the same. Where a script names a
// local `redis` (or `server`) anywhere, or can assign a global
// (maySetGlobals), its calls are left as written.
const (
	callVoidName  = "__limitdb_call_void"
	pcallVoidName = "__limitdb_pcall_void"
)

// rewriteDiscarded rewrites, below v, the statements that call
// redis.call, redis.pcall, server.call or server.pcall.
func rewriteDiscarded(v reflect.Value) {
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
	walkAST(v, func(v reflect.Value) {
		if v.Kind() != reflect.Pointer || v.IsNil() {
			return
		}
		stmt, ok := v.Interface().(*ast.FuncCallStmt)
		if !ok {
			return
		}
		call, ok := stmt.Expr.(*ast.FuncCallExpr)
		if !ok || call.Receiver != nil {
			return
		}
		get, ok := call.Func.(*ast.AttrGetExpr)
		if !ok {
			return
		}
		lib, ok1 := get.Object.(*ast.IdentExpr)
		fn, ok2 := get.Key.(*ast.StringExpr)
		if !ok1 || !ok2 || (lib.Value != "redis" && lib.Value != "server") || local[lib.Value] {
			return
		}
		var name string
		switch fn.Value {
		case "call":
			name = callVoidName
		case "pcall":
			name = pcallVoidName
		default:
			return
		}
		id := &ast.IdentExpr{Value: name}
		id.SetLine(get.Line())
		id.SetLastLine(get.LastLine())
		call.Func = id
	})
}
