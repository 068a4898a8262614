package scripting

import lua "github.com/yuin/gopher-lua"

// Table constructors sized for what they hold.
//
// gopher-lua's compiler counts a constructor's last field as a keyed one
// when it is a call or `...` (whose values go to the array part), so
// `return {a, b, math.ceil(x)}` makes a table with a hash part it never
// uses and an array part one short: three allocations more than the
// table needs, in the statement most limiter scripts end with (go test
// -bench EvalSHA -benchmem ./command/scripts/). sizeTables corrects the sizes
// of such constructors after compiling: no keyed field, and room in the
// array part for the call's first value.

// gopher-lua's instruction encoding (its opcode.go): the opcode in the top
// 6 bits, A in the next 8, then C and B in 9 bits each (Bx and sBx: the
// low 18).
func opcode(inst uint32) int { return int(inst >> 26) }
func argA(inst uint32) int   { return int(inst>>18) & 0xff }
func argB(inst uint32) int   { return int(inst & 0x1ff) }
func argC(inst uint32) int   { return int(inst>>9) & 0x1ff }

func withBC(inst uint32, b, c int) uint32 {
	return inst&^0x3ffff | uint32(c&0x1ff)<<9 | uint32(b&0x1ff)
}

// sizeTables corrects, in proto and the functions it makes, the sizes of
// the array constructors whose last field is a call or `...`.
func sizeTables(proto *lua.FunctionProto) {
	code := proto.Code
	for pc, inst := range code {
		// Such a constructor compiles to NEWTABLE A B 1, its fields, and a
		// last SETLIST A 0: B counts the fields before the last, and the
		// hash size of 1 is the last. A keyed field would be a SETTABLE on
		// A in between.
		if opcode(inst) != lua.OP_NEWTABLE || argC(inst) != 1 || argB(inst) >= 0x1ff {
			continue
		}
		if arrayOnly(code, pc) {
			code[pc] = withBC(inst, argB(inst)+1, 0)
		}
	}
	for _, p := range proto.FunctionPrototypes {
		sizeTables(p)
	}
}

// arrayOnly reports whether the constructor whose NEWTABLE A is at pc ends
// in a SETLIST A 0 (its last field a call or `...`) with no keyed field
// before it.
func arrayOnly(code []uint32, pc int) bool {
	a := argA(code[pc])
	for i := pc + 1; i < len(code); i++ {
		inst := code[i]
		switch opcode(inst) {
		case lua.OP_NEWTABLE:
			if argA(inst) == a { // another constructor in the same register: ours ended
				return false
			}
		case lua.OP_SETTABLE, lua.OP_SETTABLEKS:
			if argA(inst) == a { // a keyed field
				return false
			}
		case lua.OP_SETLIST:
			if argA(inst) == a && argB(inst) == 0 {
				return true
			}
			if argC(inst) == 0 { // the batch number is the next word, not an instruction
				i++
			}
		}
	}
	return false
}
