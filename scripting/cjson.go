package scripting

import (
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// cjsonLib is the part of lua-cjson that limiter scripts use:
// cjson.encode, cjson.decode and cjson.null.
func cjsonLib(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	null := L.NewUserData()
	t.RawSetString("null", null)
	t.RawSetString("encode", L.NewFunction(func(L *lua.LState) int {
		var b strings.Builder
		if err := encodeJSON(&b, L.CheckAny(1), null, 0); err != "" {
			L.RaiseError("Cannot serialise %s", err)
		}
		L.Push(lua.LString(b.String()))
		return 1
	}))
	t.RawSetString("decode", L.NewFunction(func(L *lua.LState) int {
		var v any
		if err := json.Unmarshal([]byte(L.CheckString(1)), &v); err != nil {
			L.RaiseError("Expected value but found invalid token")
		}
		L.Push(decodeJSON(L, v, null))
		return 1
	}))
	return t
}

func encodeJSON(b *strings.Builder, v lua.LValue, null *lua.LUserData, depth int) string {
	if depth > 1000 {
		return "table: excessive nesting"
	}
	switch v := v.(type) {
	case lua.LBool:
		b.WriteString(strconv.FormatBool(bool(v)))
	case lua.LNumber:
		f := float64(v)
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return "number: must not be NaN or Inf"
		}
		b.WriteString(strconv.FormatFloat(f, 'g', 14, 64))
	case lua.LString:
		s, _ := json.Marshal(string(v))
		b.WriteString(strings.ReplaceAll(string(s), "/", `\/`))
	case *lua.LTable:
		n, keys := v.MaxN(), 0
		v.ForEach(func(lua.LValue, lua.LValue) { keys++ })
		if n > 0 && n == keys {
			b.WriteByte('[')
			for i := 1; i <= n; i++ {
				if i > 1 {
					b.WriteByte(',')
				}
				if err := encodeJSON(b, v.RawGetInt(i), null, depth+1); err != "" {
					return err
				}
			}
			b.WriteByte(']')
			return ""
		}
		type kv struct {
			k string
			v lua.LValue
		}
		var kvs []kv
		bad := ""
		v.ForEach(func(k, val lua.LValue) {
			switch k.(type) {
			case lua.LString, lua.LNumber:
				kvs = append(kvs, kv{k.String(), val})
			default:
				bad = "table key must be a number or string"
			}
		})
		if bad != "" {
			return bad
		}
		sort.Slice(kvs, func(i, j int) bool { return kvs[i].k < kvs[j].k })
		b.WriteByte('{')
		for i, e := range kvs {
			if i > 0 {
				b.WriteByte(',')
			}
			encodeJSON(b, lua.LString(e.k), null, depth+1)
			b.WriteByte(':')
			if err := encodeJSON(b, e.v, null, depth+1); err != "" {
				return err
			}
		}
		b.WriteByte('}')
	case *lua.LUserData:
		if v != null {
			return "userdata"
		}
		b.WriteString("null")
	default:
		if v == lua.LNil {
			b.WriteString("null")
			return ""
		}
		return v.Type().String()
	}
	return ""
}

func decodeJSON(L *lua.LState, v any, null *lua.LUserData) lua.LValue {
	switch v := v.(type) {
	case nil:
		return null
	case bool:
		return lua.LBool(v)
	case float64:
		return lua.LNumber(v)
	case string:
		return lua.LString(v)
	case []any:
		t := L.CreateTable(len(v), 0)
		for i, x := range v {
			t.RawSetInt(i+1, decodeJSON(L, x, null))
		}
		return t
	case map[string]any:
		t := L.CreateTable(0, len(v))
		for k, x := range v {
			t.RawSetString(k, decodeJSON(L, x, null))
		}
		return t
	}
	return lua.LNil
}
