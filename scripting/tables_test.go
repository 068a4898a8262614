package scripting

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// TestSizedTablesHoldTheSame runs constructors with and without
// sizeTables and compares what they hold, key by key.
func TestSizedTablesHoldTheSame(t *testing.T) {
	long := make([]string, 60)
	for i := range long {
		long[i] = fmt.Sprint(i)
	}
	cases := []struct {
		body  string
		sized int // constructors sizeTables corrects
	}{
		{"return {1, 2, two()}", 1},
		{"return {two()}", 1},
		{"return {none()}", 1},
		{"return {...}", 1},
		{"return {1, nil, two()}", 1},
		{"return {x = 1, two()}", 0},
		{"return {two(), x = 1}", 0},
		{"return {[3] = 'c', two()}", 0},
		{"local t = {1, two()}; t.x = 5; return t", 1},
		{"local t = {1, 2}; t.x = {two()}; return t", 1},
		{"return {{two()}, two()}", 2},
		{"return {" + strings.Join(long, ", ") + ", two()}", 1},
		{"local f = function() return {7, two()} end; return f()", 1},
		{"local t = {}; for i = 1, 3 do t = {i, two()} end; return t", 1},
		{"return {1, 2, (two())}", 0},
	}
	for _, c := range cases {
		plain, sized := compileTwice(t, c.body)
		if got := changed(plain, sized); got != c.sized {
			t.Errorf("%s: %d constructors resized, want %d", c.body, got, c.sized)
		}
		if a, b := runTable(t, plain), runTable(t, sized); a != b {
			t.Errorf("%s: sized %s, as compiled %s", c.body, b, a)
		}
	}
}

func compileTwice(t *testing.T, body string) (plain, sized *lua.FunctionProto) {
	t.Helper()
	for _, p := range []**lua.FunctionProto{&plain, &sized} {
		chunk, err := parse.Parse(strings.NewReader(body), "t")
		if err != nil {
			t.Fatal(err)
		}
		if *p, err = lua.Compile(chunk, "t"); err != nil {
			t.Fatal(err)
		}
	}
	sizeTables(sized)
	return plain, sized
}

// changed counts the instructions that differ in a and b and the
// functions they make.
func changed(a, b *lua.FunctionProto) int {
	n := 0
	for i := range a.Code {
		if a.Code[i] != b.Code[i] {
			n++
		}
	}
	for i := range a.FunctionPrototypes {
		n += changed(a.FunctionPrototypes[i], b.FunctionPrototypes[i])
	}
	return n
}

// runTable runs proto with ... = "a", "b" and writes out the table it
// returns, nested tables included, keys sorted.
func runTable(t *testing.T, proto *lua.FunctionProto) string {
	t.Helper()
	L := lua.NewState()
	defer L.Close()
	if err := L.DoString("function two() return 'x', 'y' end; function none() end"); err != nil {
		t.Fatal(err)
	}
	L.Push(L.NewFunctionFromProto(proto))
	L.Push(lua.LString("a"))
	L.Push(lua.LString("b"))
	if err := L.PCall(2, 1, nil); err != nil {
		t.Fatal(err)
	}
	return dump(L.Get(-1))
}

func dump(v lua.LValue) string {
	tb, ok := v.(*lua.LTable)
	if !ok {
		return v.String()
	}
	var parts []string
	tb.ForEach(func(k, v lua.LValue) { parts = append(parts, k.String()+"="+dump(v)) })
	slices.Sort(parts)
	return fmt.Sprintf("{%s #%d}", strings.Join(parts, " "), tb.Len())
}
