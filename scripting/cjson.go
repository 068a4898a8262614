package scripting

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"
)

// cjsonLib is the part of lua-cjson that limiter scripts use:
// cjson.encode, cjson.decode and cjson.null. Both functions reserve what
// they make as they make it (memory.go), and so notice a cancelled run.
func (st *state) cjsonLib(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	null := L.NewUserData()
	t.RawSetString("null", null)
	t.RawSetString("encode", L.NewFunction(func(L *lua.LState) int {
		e := jsonEncoder{st: st, L: L, null: null}
		if err := e.value(L.CheckAny(1), 0); err != "" {
			L.RaiseError("Cannot serialise %s", err)
		}
		v := lua.LString(e.b.String())
		st.mem.building = 0
		st.keep(v)
		L.Push(v)
		return 1
	}))
	t.RawSetString("decode", L.NewFunction(func(L *lua.LState) int {
		d := jsonDecoder{st: st, L: L, s: L.CheckString(1), null: null}
		v := d.value(0)
		d.space()
		if d.i < len(d.s) {
			d.fail("the end", d.i)
		}
		d.flush()
		st.mem.building = 0
		if t, ok := v.(*lua.LTable); ok {
			st.keepTable(t, d.total)
		}
		L.Push(v)
		return 1
	}))
	return t
}

// jsonEncoder writes cjson.encode's text, reserving it by bigString
// bytes at a time before it writes it.
type jsonEncoder struct {
	st       *state
	L        *lua.LState
	null     *lua.LUserData
	b        strings.Builder
	reserved int // bytes of b reserved
}

// grow reserves room for n more bytes.
func (e *jsonEncoder) grow(n int) {
	if end := e.b.Len() + n; end > e.reserved {
		more := max(end-e.reserved, bigString)
		e.st.mem.building = int64(e.reserved)
		e.st.reserve(e.L, float64(more))
		e.reserved += more
	}
}

func (e *jsonEncoder) value(v lua.LValue, depth int) string {
	if depth > 1000 {
		return "table: excessive nesting"
	}
	switch v := v.(type) {
	case lua.LBool:
		e.grow(5)
		e.b.WriteString(strconv.FormatBool(bool(v)))
	case lua.LNumber:
		f := float64(v)
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return "number: must not be NaN or Inf"
		}
		e.grow(24)
		var buf [32]byte
		e.b.Write(strconv.AppendFloat(buf[:0], f, 'g', 14, 64))
	case lua.LString:
		e.str(string(v))
	case *lua.LTable:
		return e.table(v, depth)
	case *lua.LUserData:
		if v != e.null {
			return "userdata"
		}
		e.grow(4)
		e.b.WriteString("null")
	default:
		if v == lua.LNil {
			e.grow(4)
			e.b.WriteString("null")
			return ""
		}
		return v.Type().String()
	}
	return ""
}

// table writes t as an array when its keys are 1..n, else as an object
// of sorted keys.
func (e *jsonEncoder) table(t *lua.LTable, depth int) string {
	n, keys := t.MaxN(), 0
	t.ForEach(func(lua.LValue, lua.LValue) { keys++ })
	if n > 0 && n == keys {
		e.grow(2)
		e.b.WriteByte('[')
		for i := 1; i <= n; i++ {
			if i > 1 {
				e.grow(1)
				e.b.WriteByte(',')
			}
			if err := e.value(t.RawGetInt(i), depth+1); err != "" {
				return err
			}
		}
		e.b.WriteByte(']')
		return ""
	}
	type kv struct {
		k string
		v lua.LValue
	}
	var kvs []kv
	bad := ""
	t.ForEach(func(k, val lua.LValue) {
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
	e.grow(2)
	e.b.WriteByte('{')
	for i, kv := range kvs {
		if i > 0 {
			e.grow(1)
			e.b.WriteByte(',')
		}
		e.str(kv.k)
		e.grow(1)
		e.b.WriteByte(':')
		if err := e.value(kv.v, depth+1); err != "" {
			return err
		}
	}
	e.b.WriteByte('}')
	return ""
}

// str writes s quoted as lua-cjson quotes it: `"`, `\`, `/` and the
// control characters escaped, DEL as \u007f, every other byte as it is.
func (e *jsonEncoder) str(s string) {
	n := 2
	for i := 0; i < len(s); i++ {
		n += len(jsonEscape(s[i]))
	}
	e.grow(n)
	e.b.WriteByte('"')
	done := 0
	for i := 0; i < len(s); i++ {
		if esc := jsonEscape(s[i]); len(esc) != 1 {
			e.b.WriteString(s[done:i])
			e.b.WriteString(esc)
			done = i + 1
		}
	}
	e.b.WriteString(s[done:])
	e.b.WriteByte('"')
}

// jsonEscape is c as lua-cjson writes it in a string: itself (one byte)
// or its escape.
func jsonEscape(c byte) string {
	switch c {
	case '"':
		return `\"`
	case '\\':
		return `\\`
	case '/':
		return `\/`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	}
	if c < 0x20 || c == 0x7f {
		return jsonControl[c]
	}
	return jsonPlain[c : int(c)+1]
}

// jsonControl is each control character's escape.
var jsonControl = func() (esc [0x80]string) {
	for c := range esc {
		esc[c] = `\u00` + strconv.FormatInt(int64(c>>4), 16) + strconv.FormatInt(int64(c&0xf), 16)
	}
	return esc
}()

// jsonPlain holds every byte at its own index, so that jsonEscape can give
// a byte as a string without allocating.
const jsonPlain = "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f" +
	"\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f" +
	" !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~\x7f" +
	"\x80\x81\x82\x83\x84\x85\x86\x87\x88\x89\x8a\x8b\x8c\x8d\x8e\x8f" +
	"\x90\x91\x92\x93\x94\x95\x96\x97\x98\x99\x9a\x9b\x9c\x9d\x9e\x9f" +
	"\xa0\xa1\xa2\xa3\xa4\xa5\xa6\xa7\xa8\xa9\xaa\xab\xac\xad\xae\xaf" +
	"\xb0\xb1\xb2\xb3\xb4\xb5\xb6\xb7\xb8\xb9\xba\xbb\xbc\xbd\xbe\xbf" +
	"\xc0\xc1\xc2\xc3\xc4\xc5\xc6\xc7\xc8\xc9\xca\xcb\xcc\xcd\xce\xcf" +
	"\xd0\xd1\xd2\xd3\xd4\xd5\xd6\xd7\xd8\xd9\xda\xdb\xdc\xdd\xde\xdf" +
	"\xe0\xe1\xe2\xe3\xe4\xe5\xe6\xe7\xe8\xe9\xea\xeb\xec\xed\xee\xef" +
	"\xf0\xf1\xf2\xf3\xf4\xf5\xf6\xf7\xf8\xf9\xfa\xfb\xfc\xfd\xfe\xff"

// Sizes cjson.decode reserves for what it makes: a table, an entry of
// one (a slot of its array or its hash), a string's header.
const (
	jsonTableSize  = 128
	jsonEntrySize  = 40
	jsonStringSize = 16
)

// maxJSONDepth is lua-cjson's decode_max_depth.
const maxJSONDepth = 1000

// jsonDecoder reads cjson.decode's text into Lua values, reserving them
// as it makes them and failing with lua-cjson's errors ("Expected value
// but found T_END at character 3").
type jsonDecoder struct {
	st      *state
	L       *lua.LState
	s       string
	i       int
	null    *lua.LUserData
	pending int // bytes made but not yet reserved
	total   int // bytes made
}

// made counts n bytes about to be made, reserving them by bigString.
func (d *jsonDecoder) made(n int) {
	d.total += n
	if d.pending += n; d.pending >= bigString {
		d.flush()
	}
}

func (d *jsonDecoder) flush() {
	if d.pending > 0 {
		d.st.mem.building = int64(d.total - d.pending)
		d.st.reserve(d.L, float64(d.pending))
		d.pending = 0
	}
}

func (d *jsonDecoder) space() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// token names the token at i as lua-cjson does in its errors.
func (d *jsonDecoder) token(i int) string {
	if i >= len(d.s) {
		return "T_END"
	}
	switch c := d.s[i]; {
	case c == '{':
		return "T_OBJ_BEGIN"
	case c == '}':
		return "T_OBJ_END"
	case c == '[':
		return "T_ARR_BEGIN"
	case c == ']':
		return "T_ARR_END"
	case c == ',':
		return "T_COMMA"
	case c == ':':
		return "T_COLON"
	case c == '"':
		return "T_STRING"
	case c == '-' || '0' <= c && c <= '9':
		return "T_NUMBER"
	case strings.HasPrefix(d.s[i:], "true"), strings.HasPrefix(d.s[i:], "false"):
		return "T_BOOLEAN"
	case strings.HasPrefix(d.s[i:], "null"):
		return "T_NULL"
	}
	return "invalid token"
}

// fail raises lua-cjson's error: what was expected, and the token found
// at i.
func (d *jsonDecoder) fail(expected string, i int) {
	d.failWith(expected, d.token(i), i)
}

func (d *jsonDecoder) failWith(expected, found string, i int) {
	d.L.RaiseError("Expected %s but found %s at character %d", expected, found, i+1)
}

func (d *jsonDecoder) value(depth int) lua.LValue {
	d.space()
	if d.i >= len(d.s) {
		d.fail("value", d.i)
	}
	switch c := d.s[d.i]; {
	case c == '{':
		return d.object(depth + 1)
	case c == '[':
		return d.array(depth + 1)
	case c == '"':
		return d.str()
	case c == '-' || '0' <= c && c <= '9':
		return d.number()
	}
	for _, lit := range []struct {
		text string
		v    lua.LValue
	}{{"true", lua.LTrue}, {"false", lua.LFalse}, {"null", d.null}} {
		if strings.HasPrefix(d.s[d.i:], lit.text) {
			d.i += len(lit.text)
			return lit.v
		}
	}
	d.fail("value", d.i)
	return nil
}

func (d *jsonDecoder) nest(depth, at int) {
	if depth > maxJSONDepth {
		d.L.RaiseError("Found too many nested data structures (%d) at character %d", depth, at+1)
	}
	d.made(jsonTableSize)
}

func (d *jsonDecoder) array(depth int) lua.LValue {
	d.nest(depth, d.i)
	d.i++ // [
	t := d.L.NewTable()
	d.space()
	if d.i < len(d.s) && d.s[d.i] == ']' {
		d.i++
		return t
	}
	for n := 1; ; n++ {
		d.made(jsonEntrySize)
		t.RawSetInt(n, d.value(depth))
		d.space()
		if d.i < len(d.s) && d.s[d.i] == ',' {
			d.i++
			continue
		}
		if d.i < len(d.s) && d.s[d.i] == ']' {
			d.i++
			return t
		}
		d.fail("comma or array end", d.i)
	}
}

func (d *jsonDecoder) object(depth int) lua.LValue {
	d.nest(depth, d.i)
	d.i++ // {
	t := d.L.NewTable()
	d.space()
	if d.i < len(d.s) && d.s[d.i] == '}' {
		d.i++
		return t
	}
	for {
		d.space()
		if d.i >= len(d.s) || d.s[d.i] != '"' {
			d.fail("object key string", d.i)
		}
		k := d.str()
		d.space()
		if d.i >= len(d.s) || d.s[d.i] != ':' {
			d.fail("colon", d.i)
		}
		d.i++
		d.made(jsonEntrySize)
		t.RawSet(k, d.value(depth))
		d.space()
		if d.i < len(d.s) && d.s[d.i] == ',' {
			d.i++
			continue
		}
		if d.i < len(d.s) && d.s[d.i] == '}' {
			d.i++
			return t
		}
		d.fail("comma or object end", d.i)
	}
}

// str reads a string at i (its opening quote).
func (d *jsonDecoder) str() lua.LString {
	d.i++
	end := d.i
	for end < len(d.s) && d.s[end] != '"' && d.s[end] != '\\' {
		end++
	}
	if end < len(d.s) && d.s[end] == '"' { // no escapes: the subject's own bytes
		d.made(jsonStringSize)
		s := d.s[d.i:end]
		d.i = end + 1
		return lua.LString(s)
	}
	var b []byte
	counted := 0
	for {
		if d.i >= len(d.s) {
			d.failWith("value", "unexpected end of string", d.i)
		}
		c := d.s[d.i]
		if c == '"' {
			d.i++
			break
		}
		if c != '\\' {
			b = append(b, c)
			d.i++
			continue
		}
		esc := d.i
		if d.i+1 >= len(d.s) {
			d.failWith("value", "invalid escape code", esc)
		}
		d.i += 2
		switch e := d.s[d.i-1]; e {
		case '"', '\\', '/':
			b = append(b, e)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r, ok := d.codepoint()
			if !ok {
				d.failWith("value", "invalid unicode escape code", esc)
			}
			b = utf8.AppendRune(b, r)
		default:
			d.failWith("value", "invalid escape code", esc)
		}
		if len(b)-counted >= bigString {
			d.made(len(b) - counted)
			counted = len(b)
		}
	}
	d.made(jsonStringSize + len(b) - counted)
	return lua.LString(b)
}

// codepoint reads the four hex digits after \u at i, and the low half
// of a surrogate pair after them.
func (d *jsonDecoder) codepoint() (rune, bool) {
	hex4 := func() (rune, bool) {
		if d.i+4 > len(d.s) {
			return 0, false
		}
		n, err := strconv.ParseUint(d.s[d.i:d.i+4], 16, 16)
		if err != nil {
			return 0, false
		}
		d.i += 4
		return rune(n), true
	}
	r, ok := hex4()
	switch {
	case !ok:
		return 0, false
	case r >= 0xdc00 && r <= 0xdfff:
		return 0, false
	case r >= 0xd800 && r <= 0xdbff:
		if !strings.HasPrefix(d.s[d.i:], `\u`) {
			return 0, false
		}
		d.i += 2
		lo, ok := hex4()
		if !ok || lo < 0xdc00 || lo > 0xdfff {
			return 0, false
		}
		return 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00), true
	}
	return r, true
}

// number reads a number at i as lua-cjson does, with strtod: a sign,
// digits with an optional point (at least one digit), and an exponent
// when digits follow its e.
func (d *jsonDecoder) number() lua.LValue {
	start := d.i
	if d.s[d.i] == '-' {
		d.i++
	}
	digits := func() int {
		from := d.i
		for d.i < len(d.s) && '0' <= d.s[d.i] && d.s[d.i] <= '9' {
			d.i++
		}
		return d.i - from
	}
	n := digits()
	if d.i < len(d.s) && d.s[d.i] == '.' {
		d.i++
		n += digits()
	}
	if n == 0 {
		d.failWith("value", "invalid number", start)
	}
	if d.i < len(d.s) && (d.s[d.i] == 'e' || d.s[d.i] == 'E') {
		mantissa := d.i
		d.i++
		if d.i < len(d.s) && (d.s[d.i] == '+' || d.s[d.i] == '-') {
			d.i++
		}
		if digits() == 0 {
			d.i = mantissa
		}
	}
	f, err := strconv.ParseFloat(d.s[start:d.i], 64)
	if err != nil && !math.IsInf(f, 0) {
		d.failWith("value", "invalid number", start)
	}
	return d.st.vals.number(f)
}
