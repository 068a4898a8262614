package scripting

import (
	"bytes"
	"errors"
	"math"
	"strconv"

	"github.com/limitdb/limitdb/resp"
	lua "github.com/yuin/gopher-lua"
)

var errBadReply = errors.New("bad reply from the command")

// parseReply converts the RESP reply at b[i:] to a Lua value (doc.go) and
// returns the index after it; vals makes its numbers and strings.
func parseReply(L *lua.LState, vals *values, b []byte, i int) (lua.LValue, int, error) {
	if i >= len(b) {
		return lua.LNil, i, errBadReply
	}
	end := bytes.Index(b[i:], []byte("\r\n"))
	if end < 1 {
		return lua.LNil, i, errBadReply
	}
	line := b[i+1 : i+end]
	next := i + end + 2
	switch b[i] {
	case '+':
		t := L.CreateTable(0, 1)
		ok := lua.LValue(lua.LString("OK")) // a constant: the common reply allocates no string
		if string(line) != "OK" {
			ok = lua.LString(line)
		}
		t.RawSetString("ok", ok)
		return t, next, nil
	case '-':
		t := L.CreateTable(0, 1)
		t.RawSetString("err", lua.LString(line))
		return t, next, nil
	case ':':
		n, err := strconv.ParseInt(string(line), 10, 64)
		if err != nil {
			return lua.LNil, i, errBadReply
		}
		return vals.number(float64(n)), next, nil
	case '$', '=':
		n, err := strconv.Atoi(string(line))
		if err != nil {
			return lua.LNil, i, errBadReply
		}
		if n < 0 {
			return lua.LFalse, next, nil
		}
		if next+n+2 > len(b) {
			return lua.LNil, i, errBadReply
		}
		s := b[next : next+n]
		if b[i] == '=' { // verbatim: "txt:" then the text
			t, v := L.CreateTable(0, 2), L.CreateTable(0, 1)
			if len(s) >= 4 {
				v.RawSetString("format", lua.LString(s[:3]))
				v.RawSetString("string", lua.LString(s[4:]))
			}
			t.RawSetString("verbatim_string", v)
			return t, next + n + 2, nil
		}
		return vals.str(s), next + n + 2, nil
	case '*', '~', '%', '>':
		n, err := strconv.Atoi(string(line))
		if err != nil {
			return lua.LNil, i, errBadReply
		}
		if n < 0 {
			return lua.LFalse, next, nil
		}
		kind := b[i]
		items := n
		if kind == '%' {
			items = 2 * n
		}
		t := L.CreateTable(min(items, 1024), 0) // a reply's count is not trusted for memory
		var key lua.LValue
		for j := 0; j < items; j++ {
			var v lua.LValue
			if v, next, err = parseReply(L, vals, b, next); err != nil {
				return lua.LNil, i, err
			}
			switch kind {
			case '%':
				if j%2 == 0 {
					key = v
				} else {
					t.RawSet(key, v)
				}
			case '~':
				t.RawSet(v, lua.LTrue)
			default:
				t.RawSetInt(j+1, v)
			}
		}
		switch kind {
		case '%':
			w := L.CreateTable(0, 1)
			w.RawSetString("map", t)
			return w, next, nil
		case '~':
			w := L.CreateTable(0, 1)
			w.RawSetString("set", t)
			return w, next, nil
		}
		return t, next, nil
	case '_':
		return lua.LNil, next, nil
	case '#':
		return lua.LBool(len(line) == 1 && line[0] == 't'), next, nil
	case ',':
		f, err := strconv.ParseFloat(string(line), 64)
		if err != nil {
			switch string(line) {
			case "inf":
				f = math.Inf(1)
			case "-inf":
				f = math.Inf(-1)
			case "nan":
				f = math.NaN()
			default:
				return lua.LNil, i, errBadReply
			}
		}
		t := L.CreateTable(0, 1)
		t.RawSetString("double", lua.LNumber(f))
		return t, next, nil
	case '(':
		t := L.CreateTable(0, 1)
		t.RawSetString("big_number", lua.LString(line))
		return t, next, nil
	}
	return lua.LNil, i, errBadReply
}

// maxDepth bounds the nesting of a result: a table that holds itself
// must not recurse forever.
const maxDepth = 1000

// writeValue writes a script's result as its reply (doc.go), in w's
// protocol.
func writeValue(w *resp.Writer, v lua.LValue, proto, depth int) {
	switch v := v.(type) {
	case lua.LNumber:
		w.Int(toInteger(float64(v)))
	case lua.LString:
		w.BulkString(string(v))
	case lua.LBool:
		switch { // the script's protocol (redis.setresp) decides, as in Redis
		case proto == 3 && w.Proto == 3:
			w.Raw([]byte(map[bool]string{true: "#t\r\n", false: "#f\r\n"}[bool(v)]))
		case proto == 3:
			w.Int(map[bool]int64{true: 1, false: 0}[bool(v)])
		case bool(v):
			w.Int(1)
		default:
			w.Null()
		}
	case *lua.LTable:
		if depth >= maxDepth {
			w.Error("ERR reached lua stack limit")
			return
		}
		writeTable(w, v, proto, depth)
	default:
		w.Null()
	}
}

func writeTable(w *resp.Writer, t *lua.LTable, proto, depth int) {
	if e, ok := t.RawGetString("err").(lua.LString); ok {
		w.Error(string(e))
		return
	}
	if s, ok := t.RawGetString("ok").(lua.LString); ok {
		w.Simple(string(s))
		return
	}
	if d, ok := t.RawGetString("double").(lua.LNumber); ok {
		if w.Proto == 3 {
			w.Double(float64(d))
		} else {
			w.BulkString(strconv.FormatFloat(float64(d), 'g', 17, 64))
		}
		return
	}
	if s, ok := t.RawGetString("big_number").(lua.LString); ok {
		if w.Proto == 3 {
			w.Raw([]byte("(" + string(s) + "\r\n"))
		} else {
			w.BulkString(string(s))
		}
		return
	}
	if m, ok := t.RawGetString("map").(*lua.LTable); ok {
		var keys, vals []lua.LValue
		m.ForEach(func(k, v lua.LValue) { keys, vals = append(keys, k), append(vals, v) })
		if w.Proto == 3 {
			w.Map(len(keys))
		} else {
			w.Array(2 * len(keys))
		}
		for i := range keys {
			writeValue(w, keys[i], proto, depth+1)
			writeValue(w, vals[i], proto, depth+1)
		}
		return
	}
	if s, ok := t.RawGetString("set").(*lua.LTable); ok {
		var keys []lua.LValue
		s.ForEach(func(k, _ lua.LValue) { keys = append(keys, k) })
		if w.Proto == 3 {
			w.Set(len(keys))
		} else {
			w.Array(len(keys))
		}
		for _, k := range keys {
			writeValue(w, k, proto, depth+1)
		}
		return
	}
	if vs, ok := t.RawGetString("verbatim_string").(*lua.LTable); ok {
		s := lua.LVAsString(vs.RawGetString("string"))
		if w.Proto == 3 {
			w.Verbatim(s)
		} else {
			w.BulkString(s)
		}
		return
	}
	n := 0
	for t.RawGetInt(n+1) != lua.LNil {
		n++
	}
	w.Array(n)
	for i := 1; i <= n; i++ {
		writeValue(w, t.RawGetInt(i), proto, depth+1)
	}
}

// toInteger is C's (long long) cast of a Lua number, as Redis converts
// one: toward zero, saturating where C would be undefined.
func toInteger(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return math.MinInt64
	case f >= math.MaxInt64:
		return math.MinInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}
