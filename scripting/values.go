package scripting

import (
	"hash/maphash"
	"math"
	"unsafe"

	lua "github.com/yuin/gopher-lua"
)

// Lua values made without an allocation each.
//
// A number or a string becomes a Lua value (an interface) through an
// allocation of its own: 8 bytes for a number, 16 for a string's header
// and more for its bytes. A script's run makes a dozen of them (TIME's
// fields, KEYS, replies, `..`), and at a hundred thousand runs a second
// that garbage sets the pace of Go's collector, whose cycles show in the
// tail latency (bench/scripts.sh, p99). values makes them the way
// gopher-lua's own arithmetic does (its alloc.go): numbers, string
// headers and short strings' bytes are written into blocks allocated a
// few hundred at a time, and the value points into its block. A block
// lives while any value in it does, so a value kept (in a FUNCTION
// library's table) keeps its block's kilobytes: little, since a run's
// values are dropped with the run.

const (
	blockValues = 128  // numbers and string headers in a block
	blockText   = 4096 // bytes of short strings in a block
	shortText   = 64   // the longest string written in a block
	recentSlots = 16   // the short strings remembered (recent)
)

// values makes one interpreter's Lua values. Not safe for concurrent use:
// an interpreter runs one script at a time.
type values struct {
	small   []lua.LValue // the integers below 1024, each boxed once
	numbers []float64
	headers []string
	text    []byte

	// recent remembers short strings by their bytes' hash, so the ones
	// replies repeat (TIME's seconds, small counts) are made once.
	recent [recentSlots]lua.LValue
	seed   maphash.Seed
}

func newValues() *values {
	v := &values{small: make([]lua.LValue, 1024), seed: maphash.MakeSeed()}
	for i := range v.small {
		v.small[i] = lua.LNumber(i)
	}
	return v
}

// iface is the layout of an interface value (Go's runtime.iface): its
// type's word, and a pointer to its value.
type iface struct {
	tab  unsafe.Pointer
	data unsafe.Pointer
}

// number is f as a Lua value: one of small for its integers (-0 is not:
// it keeps its sign), otherwise boxed in the current block.
func (v *values) number(f float64) lua.LValue {
	if f >= 0 && f < float64(len(v.small)) && f == math.Trunc(f) && !(f == 0 && math.Signbit(f)) {
		return v.small[int(f)]
	}
	if len(v.numbers) == cap(v.numbers) {
		v.numbers = make([]float64, 0, blockValues)
	}
	v.numbers = append(v.numbers, f)
	var x lua.LValue = lua.LNumber(0) // a constant: no allocation
	(*iface)(unsafe.Pointer(&x)).data = unsafe.Pointer(&v.numbers[len(v.numbers)-1])
	return x
}

// str is a copy of b as a Lua string.
func (v *values) str(b []byte) lua.LValue {
	if len(b) == 0 || len(b) > shortText {
		return lua.LString(b)
	}
	h := maphash.Bytes(v.seed, b)
	slot := &v.recent[h%recentSlots]
	if s, ok := (*slot).(lua.LString); ok && string(s) == string(b) {
		return s
	}
	if len(v.text)+len(b) > cap(v.text) {
		v.text = make([]byte, 0, blockText)
	}
	start := len(v.text)
	v.text = append(v.text, b...)
	s := unsafe.String(unsafe.SliceData(v.text[start:]), len(b))
	if len(v.headers) == cap(v.headers) {
		v.headers = make([]string, 0, blockValues)
	}
	v.headers = append(v.headers, s)
	var x lua.LValue = lua.LString("") // a constant: no allocation
	(*iface)(unsafe.Pointer(&x)).data = unsafe.Pointer(&v.headers[len(v.headers)-1])
	*slot = x
	return x
}
