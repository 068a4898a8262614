package scripting

import (
	"reflect"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
)

// Lua 5.1 joins a number to a string with `..` as "%.14g" writes it
// (1/3 .. "" is "0.33333333333333"); gopher-lua writes Go's shortest
// form ("0.3333333333333333"). Scripts build stored values that way (a
// sliding log's member `now .. ':' .. n`), so every `..` of a script is
// compiled as a call to concatName, which joins as Lua 5.1 does.
const concatName = "__lua51_concat"

var exprType = reflect.TypeOf((*ast.Expr)(nil)).Elem()

// rewriteConcat replaces, below v, every `a .. b` with concatName(a, b).
func rewriteConcat(v reflect.Value) {
	walkAST(v, func(v reflect.Value) {
		if v.Kind() != reflect.Interface || v.IsNil() || v.Type() != exprType || !v.CanSet() {
			return
		}
		if c, ok := v.Elem().Interface().(*ast.StringConcatOpExpr); ok {
			fn := &ast.IdentExpr{Value: concatName}
			fn.SetLine(c.Line())
			call := &ast.FuncCallExpr{Func: fn, Args: []ast.Expr{c.Lhs, c.Rhs}}
			call.SetLine(c.Line())
			call.SetLastLine(c.LastLine())
			v.Set(reflect.ValueOf(call))
		}
	})
}

// walkAST calls fn for every value below v and for v, children first:
// the nodes of a parsed chunk, their fields, slices and interfaces.
func walkAST(v reflect.Value, fn func(reflect.Value)) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return
		}
		walkAST(v.Elem(), fn)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				walkAST(v.Field(i), fn)
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			walkAST(v.Index(i), fn)
		}
	}
	fn(v)
}

// concatPart is one side of `..` as Lua 5.1 writes it.
func concatPart(L *lua.LState, v lua.LValue) string {
	switch v := v.(type) {
	case lua.LString:
		return string(v)
	case lua.LNumber:
		return LuaNumber(float64(v))
	}
	L.RaiseError("attempt to concatenate a %s value", v.Type().String())
	return ""
}
