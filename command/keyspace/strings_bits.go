package keyspace

import (
	"math"
	mbits "math/bits"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
)

// String ranges and bits: APPEND, SETRANGE, GETRANGE, SUBSTR, SETBIT,
// GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD and BITFIELD_RO, for the
// applications that keep bitmaps and counters packed in strings beside
// their limits. Replies, error texts and the order in which arguments and
// keys are checked are Redis 7.0's. A string longer than
// proto-max-bulk-len is refused, as Redis refuses it.

func registerStringBits(t *command.Table, env command.Env) {
	b := &bits{config: env.Config}
	c := func(name, group string, arity int, flags command.Flag, first, last int, complexity, summary, syntax string, h func(*command.Client, [][]byte)) *command.Command {
		return &command.Command{Name: name, Arity: arity, Flags: flags, FirstKey: first, LastKey: last, Step: 1,
			Group: group, Since: "0.3.0", Complexity: complexity, Summary: summary, Syntax: syntax, Handler: h}
	}
	w, ro := command.FlagWrite|command.FlagDenyOOM|command.FlagGrows, command.FlagReadonly
	t.Register(
		c("append", "string", 3, w|command.FlagFast, 1, 1, "O(1)", "Appends a string to the value of a key, creating it; answers the new length.", "key value", b.cmdAppend),
		c("setrange", "string", 4, w, 1, 1, "O(1), not counting the time taken to copy the new string in place",
			"Overwrites part of a string at an offset, padding with zero bytes; answers the new length.", "key offset value", b.cmdSetRange),
		c("getrange", "string", 4, ro, 1, 1, "O(N) where N is the length of the returned string",
			"Returns a substring of a string value, by inclusive byte offsets (negative from the end).", "key start end", cmdGetRange),
		c("substr", "string", 4, ro, 1, 1, "O(N) where N is the length of the returned string",
			"Returns a substring of a string value (GETRANGE's old name).", "key start end", cmdGetRange),
		c("setbit", "bitmap", 4, w, 1, 1, "O(1)", "Sets or clears a bit of a string, padding it with zero bytes; answers the old bit.", "key offset value", b.cmdSetBit),
		c("getbit", "bitmap", 3, ro|command.FlagFast, 1, 1, "O(1)", "Returns a bit of a string (0 past its end or for an absent key).", "key offset", b.cmdGetBit),
		c("bitcount", "bitmap", -2, ro, 1, 1, "O(N)", "Counts the set bits of a string, or of a range of its bytes or bits.", "key [start end [BYTE|BIT]]", cmdBitCount),
		c("bitpos", "bitmap", -3, ro, 1, 1, "O(N)", "Finds the first set or clear bit of a string, or of a range of its bytes or bits.",
			"key bit [start [end [BYTE|BIT]]]", cmdBitPos),
		c("bitop", "bitmap", -4, w, 2, -1, "O(N)", "Stores the bitwise AND, OR, XOR of strings, or NOT of one, in a key; answers its length.",
			"AND|OR|XOR|NOT destkey key [key ...]", cmdBitOp),
		c("bitfield", "bitmap", -2, w, 1, 1, "O(1) for each subcommand specified",
			"Reads, sets and increments integers of any width up to 64 bits at any bit offset of a string, with a chosen overflow behaviour.",
			"key [GET encoding offset|[OVERFLOW WRAP|SAT|FAIL] SET encoding offset value|INCRBY encoding offset increment ...]", b.cmdBitField(false)),
		c("bitfield_ro", "bitmap", -2, ro|command.FlagFast, 1, 1, "O(1) for each subcommand specified",
			"Reads integers of any width up to 64 bits at any bit offset of a string (BITFIELD's GET alone).", "key [GET encoding offset ...]", b.cmdBitField(true)),
	)
}

// bits is what the string commands read of the configuration.
type bits struct {
	config func() config.Config
}

// maxBulk is proto-max-bulk-len: the longest string a write may leave.
func (b *bits) maxBulk() int64 {
	if b.config == nil {
		return 512 << 20
	}
	return b.config().MaxBulkLen
}

func (b *bits) cmdAppend(c *command.Client, args [][]byte) {
	n, err := c.Engine().Append(args[1], c.Now(), args[2], b.maxBulk())
	if err == nil {
		c.Notify(config.NotifyString, "append", args[1])
	}
	c.IntOrError(int64(n), err)
}

func (b *bits) cmdSetRange(c *command.Client, args [][]byte) {
	off, err := command.ParseInt(args[2])
	if err != nil {
		c.Error(err)
		return
	}
	if off < 0 {
		c.Err("ERR offset is out of range")
		return
	}
	val, max := args[3], b.maxBulk()
	n, wrote := 0, false
	var opErr error
	err = c.Engine().DoStringBytes(args[1], c.Now(), func(v []byte, _ bool) ([]byte, bool) {
		n = len(v)
		if len(val) == 0 {
			return nil, false
		}
		if off > max-int64(len(val)) {
			opErr = engine.ErrStringTooLong
			return nil, false
		}
		v = engine.GrowZero(v, int(off)+len(val))
		copy(v[off:], val)
		n, wrote = len(v), true
		return v, true
	})
	if err == nil && opErr == nil && wrote {
		c.Notify(config.NotifyString, "setrange", args[1])
	}
	if err == nil {
		err = opErr
	}
	c.IntOrError(int64(n), err)
}

// cmdGetRange answers GETRANGE and SUBSTR: the offsets are read first,
// the key next.
func cmdGetRange(c *command.Client, args [][]byte) {
	start, err := command.ParseInt(args[2])
	if err != nil {
		c.Error(err)
		return
	}
	end, err := command.ParseInt(args[3])
	if err != nil {
		c.Error(err)
		return
	}
	val, _, err := c.Engine().GetString(args[1], c.Now(), c.Scratch())
	if err != nil {
		c.Error(err)
		return
	}
	c.SetScratch(val)
	n := int64(len(val))
	if start < 0 && end < 0 && start > end {
		c.Bulk(nil)
		return
	}
	if start < 0 {
		start = max(n+start, 0)
	}
	if end < 0 {
		end = max(n+end, 0)
	}
	if end >= n {
		end = n - 1
	}
	if start > end || n == 0 {
		c.Bulk(val[:0])
		return
	}
	c.Bulk(val[start : end+1])
}

// bitOffset reads a bit offset as Redis does: a non-negative integer whose
// byte is within proto-max-bulk-len; with hash, "#n" is n times bits (a
// BITFIELD offset counted in fields).
func (b *bits) bitOffset(c *command.Client, arg []byte, hash bool, width int) (uint64, bool) {
	usehash := hash && len(arg) > 1 && arg[0] == '#'
	if usehash {
		arg = arg[1:]
	}
	n, err := command.ParseInt(arg)
	if err == nil && usehash {
		n *= int64(width)
	}
	if err != nil || n < 0 || n>>3 >= b.maxBulk() {
		c.Err("ERR bit offset is not an integer or out of range")
		return 0, false
	}
	return uint64(n), true
}

func (b *bits) cmdSetBit(c *command.Client, args [][]byte) {
	off, ok := b.bitOffset(c, args[2], false, 0)
	if !ok {
		return
	}
	on, err := command.ParseInt(args[3])
	if err != nil || on&^1 != 0 {
		c.Err("ERR bit is not an integer or out of range")
		return
	}
	old := int64(0)
	err = c.Engine().DoStringBytes(args[1], c.Now(), func(v []byte, _ bool) ([]byte, bool) {
		v = engine.GrowZero(v, int(off>>3)+1)
		old = int64(engine.GetBits(v, off, 1))
		engine.SetBits(v, off, 1, uint64(on))
		return v, true
	})
	if err == nil {
		c.Notify(config.NotifyString, "setbit", args[1])
	}
	c.IntOrError(old, err)
}

func (b *bits) cmdGetBit(c *command.Client, args [][]byte) {
	off, ok := b.bitOffset(c, args[2], false, 0)
	if !ok {
		return
	}
	bit := int64(0)
	err := c.Engine().DoStringBytes(args[1], c.Now(), func(v []byte, _ bool) ([]byte, bool) {
		bit = int64(engine.GetBits(v, off, 1))
		return nil, false
	})
	c.IntOrError(bit, err)
}

// bitRange turns BITCOUNT's and BITPOS's start and end (bytes, or bits
// with isBit) into a range of bytes of a string of n bytes, with the bits
// of its first and last bytes that lie outside it (Redis's negative
// masks). empty is true when nothing is left.
func bitRange(start, end, n int64, isBit bool) (first, last int64, firstMask, lastMask byte, empty bool) {
	total := n
	if isBit {
		total <<= 3
	}
	if start < 0 {
		start = total + start
	}
	if end < 0 {
		end = total + end
	}
	start, end = max(start, 0), max(end, 0)
	if end >= total {
		end = total - 1
	}
	if start > end {
		return 0, 0, 0, 0, true
	}
	if isBit {
		firstMask = ^byte((1 << (8 - start&7)) - 1)
		lastMask = byte((1 << (7 - end&7)) - 1)
		start >>= 3
		end >>= 3
	}
	return start, end, firstMask, lastMask, false
}

// rangeUnit reads BYTE or BIT.
func rangeUnit(arg []byte) (isBit, ok bool) {
	switch {
	case command.EqualFold(arg, "bit"):
		return true, true
	case command.EqualFold(arg, "byte"):
		return false, true
	}
	return false, false
}

func popcount(b []byte) int64 {
	n := 0
	for _, x := range b {
		n += mbits.OnesCount8(x)
	}
	return int64(n)
}

// cmdBitCount answers BITCOUNT. As in Redis 7.0, an absent key answers 0
// before the arguments are read.
func cmdBitCount(c *command.Client, args [][]byte) {
	var out int64
	var opErr error
	err := c.Engine().DoStringBytes(args[1], c.Now(), func(v []byte, exists bool) ([]byte, bool) {
		if !exists {
			return nil, false
		}
		out, opErr = bitCount(v, args[2:])
		return nil, false
	})
	switch {
	case err != nil:
		c.Error(err)
	case opErr != nil:
		c.Error(opErr)
	default:
		c.Int(out)
	}
}

func bitCount(v []byte, opts [][]byte) (int64, error) {
	if len(opts) == 0 {
		return popcount(v), nil
	}
	if len(opts) != 2 && len(opts) != 3 {
		return 0, command.ErrSyntax
	}
	start, err := command.ParseInt(opts[0])
	if err != nil {
		return 0, err
	}
	end, err := command.ParseInt(opts[1])
	if err != nil {
		return 0, err
	}
	if start < 0 && end < 0 && start > end {
		return 0, nil
	}
	isBit := false
	if len(opts) == 3 {
		var ok bool
		if isBit, ok = rangeUnit(opts[2]); !ok {
			return 0, command.ErrSyntax
		}
	}
	first, last, fm, lm, empty := bitRange(start, end, int64(len(v)), isBit)
	if empty {
		return 0, nil
	}
	n := popcount(v[first : last+1])
	n -= int64(mbits.OnesCount8(v[first]&fm) + mbits.OnesCount8(v[last]&lm))
	return n, nil
}

// cmdBitPos answers BITPOS: the bit first, then the key (absent: a string
// of zero bits without end), then the range.
func cmdBitPos(c *command.Client, args [][]byte) {
	bit, err := command.ParseInt(args[2])
	if err != nil {
		c.Error(err)
		return
	}
	if bit != 0 && bit != 1 {
		c.Err("ERR The bit argument must be 1 or 0.")
		return
	}
	var out int64
	var opErr error
	err = c.Engine().DoStringBytes(args[1], c.Now(), func(v []byte, exists bool) ([]byte, bool) {
		if !exists {
			out = -bit
			return nil, false
		}
		out, opErr = bitPos(v, byte(bit), args[3:])
		return nil, false
	})
	switch {
	case err != nil:
		c.Error(err)
	case opErr != nil:
		c.Error(opErr)
	default:
		c.Int(out)
	}
}

func bitPos(v []byte, bit byte, opts [][]byte) (int64, error) {
	n := int64(len(v))
	start, end := int64(0), n-1
	isBit, endGiven := false, false
	if len(opts) > 3 {
		return 0, command.ErrSyntax
	}
	if len(opts) >= 1 {
		var err error
		if start, err = command.ParseInt(opts[0]); err != nil {
			return 0, err
		}
		if len(opts) == 3 {
			var ok bool
			if isBit, ok = rangeUnit(opts[2]); !ok {
				return 0, command.ErrSyntax
			}
		}
		if len(opts) >= 2 {
			if end, err = command.ParseInt(opts[1]); err != nil {
				return 0, err
			}
			endGiven = true
		} else if isBit {
			end = n<<3 + 7
		}
	}
	var first, last int64
	var fm, lm byte
	if len(opts) == 0 {
		if start > end {
			return -1, nil
		}
		first, last = start, end
	} else {
		var empty bool
		if first, last, fm, lm, empty = bitRange(start, end, n, isBit); empty {
			return -1, nil
		}
	}
	// The bits in range, from the first of byte first: a masked-out bit
	// counts as the opposite of the one sought.
	for i := first; i <= last; i++ {
		x := v[i]
		if i == first {
			x = maskOut(x, fm, bit)
		}
		if i == last {
			x = maskOut(x, lm, bit)
		}
		if bit == 0 {
			x = ^x
		}
		if x != 0 {
			return i<<3 + int64(mbits.LeadingZeros8(x)), nil
		}
	}
	if bit == 1 || endGiven {
		return -1, nil
	}
	// Looking for a clear bit with no end: the string's right is zeros.
	return (last + 1) << 3, nil
}

// maskOut sets the bits of mask in x to the opposite of bit.
func maskOut(x, mask, bit byte) byte {
	if bit == 1 {
		return x &^ mask
	}
	return x | mask
}

func cmdBitOp(c *command.Client, args [][]byte) {
	op := lower(args[1])
	switch op {
	case "and", "or", "xor", "not":
	default:
		c.Error(command.ErrSyntax)
		return
	}
	if op == "not" && len(args) != 4 {
		c.Err("ERR BITOP NOT must be called with a single source key.")
		return
	}
	keys := args[2:]
	first := engine.FirstPlaces(keys)
	var n int
	var opErr error
	c.Engine().DoMulti(keys, c.Now(), func(ents []engine.Entry) bool {
		srcs := make([][]byte, len(keys)-1)
		for j := range srcs {
			ent := ents[first[j+1]]
			switch ent.Kind {
			case engine.KindNone:
			case engine.KindString:
				srcs[j] = engine.StringBytes(ent)
			default:
				opErr = engine.ErrWrongType
				return false
			}
			n = max(n, len(srcs[j]))
		}
		if n == 0 {
			if ents[0].Kind == engine.KindNone {
				return false
			}
			ents[0] = engine.Entry{}
			return true
		}
		res := make([]byte, n)
		for i := range res {
			x := byteAt(srcs[0], i)
			if op == "not" {
				x = ^x
			}
			for _, s := range srcs[1:] {
				switch op {
				case "and":
					x &= byteAt(s, i)
				case "or":
					x |= byteAt(s, i)
				case "xor":
					x ^= byteAt(s, i)
				}
			}
			res[i] = x
		}
		ents[0] = engine.BytesEntry(res)
		return true
	})
	c.IntOrError(int64(n), opErr)
}

func byteAt(b []byte, i int) byte {
	if i < len(b) {
		return b[i]
	}
	return 0
}

// The overflow behaviours of BITFIELD's SET and INCRBY.
const (
	overflowWrap = iota
	overflowSat
	overflowFail
)

type bitFieldOp struct {
	set, incr bool // neither: GET
	signed    bool
	bits      int
	off       uint64
	arg       int64
	overflow  int
}

var errBitFieldType = command.WireError("ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.")

// bitFieldType reads i1..i64 or u1..u63.
func bitFieldType(arg []byte) (signed bool, width int, err error) {
	if len(arg) == 0 || (arg[0] != 'i' && arg[0] != 'u') {
		return false, 0, errBitFieldType
	}
	signed = arg[0] == 'i'
	n, perr := command.ParseInt(arg[1:])
	if perr != nil || n < 1 || (signed && n > 64) || (!signed && n > 63) {
		return false, 0, errBitFieldType
	}
	return signed, int(n), nil
}

// b.cmdBitField answers BITFIELD and BITFIELD_RO (ro: GET alone). Every
// operation is read before the key is; a write makes room up to the
// farthest bit any SET or INCRBY reaches, creating the key, before the
// first runs.
func (b *bits) cmdBitField(ro bool) func(c *command.Client, args [][]byte) {
	return func(c *command.Client, args [][]byte) {
		var ops []bitFieldOp
		overflow := overflowWrap
		readonly := true
		var highest uint64
		for j := 2; j < len(args); j++ {
			rem := len(args) - j - 1
			var op bitFieldOp
			switch a := args[j]; {
			case command.EqualFold(a, "get") && rem >= 2:
			case command.EqualFold(a, "set") && rem >= 3:
				op.set = true
			case command.EqualFold(a, "incrby") && rem >= 3:
				op.incr = true
			case command.EqualFold(a, "overflow") && rem >= 1:
				j++
				switch {
				case command.EqualFold(args[j], "wrap"):
					overflow = overflowWrap
				case command.EqualFold(args[j], "sat"):
					overflow = overflowSat
				case command.EqualFold(args[j], "fail"):
					overflow = overflowFail
				default:
					c.Err("ERR Invalid OVERFLOW type specified")
					return
				}
				continue
			default:
				c.Error(command.ErrSyntax)
				return
			}
			var err error
			if op.signed, op.bits, err = bitFieldType(args[j+1]); err != nil {
				c.Error(err)
				return
			}
			var ok bool
			if op.off, ok = b.bitOffset(c, args[j+2], true, op.bits); !ok {
				return
			}
			if op.set || op.incr {
				readonly = false
				highest = max(highest, op.off+uint64(op.bits)-1)
				if op.arg, err = command.ParseInt(args[j+3]); err != nil {
					c.Error(err)
					return
				}
				j++
			}
			op.overflow = overflow
			ops = append(ops, op)
			j += 2
		}
		if !readonly && ro {
			c.Err("ERR BITFIELD_RO only supports the GET subcommand")
			return
		}
		type result struct {
			v    int64
			null bool
		}
		results := make([]result, len(ops))
		err := c.Engine().DoStringBytes(args[1], c.Now(), func(v []byte, _ bool) ([]byte, bool) {
			if !readonly {
				v = engine.GrowZero(v, int(highest>>3)+1)
			}
			for i, op := range ops {
				if !op.set && !op.incr {
					if op.signed {
						results[i].v = engine.GetSignedBits(v, op.off, op.bits)
					} else {
						results[i].v = int64(engine.GetBits(v, op.off, op.bits))
					}
					continue
				}
				val, ret, write := bitFieldWrite(v, op)
				results[i] = result{v: ret, null: !write}
				if write {
					engine.SetBits(v, op.off, op.bits, val)
				}
			}
			return v, !readonly
		})
		if err != nil {
			c.Error(err)
			return
		}
		c.Array(len(results))
		for _, r := range results {
			if r.null {
				c.Null()
			} else {
				c.Int(r.v)
			}
		}
	}
}

// bitFieldWrite is a SET or INCRBY on the field op names in v: the bits to
// write, the value to answer (the old one for SET, the new one for
// INCRBY), and whether to write (not on an overflow with FAIL).
func bitFieldWrite(v []byte, op bitFieldOp) (val uint64, ret int64, write bool) {
	if op.signed {
		old := engine.GetSignedBits(v, op.off, op.bits)
		var next, wrapped int64
		var over bool
		if op.incr {
			over, wrapped = signedOverflow(old, op.arg, op.bits, op.overflow)
			next = old + op.arg
			if over {
				next = wrapped
			}
			ret = next
		} else {
			next = op.arg
			if over, wrapped = signedOverflow(next, 0, op.bits, op.overflow); over {
				next = wrapped
			}
			ret = old
		}
		if over && op.overflow == overflowFail {
			return 0, 0, false
		}
		return uint64(next), ret, true
	}
	old := engine.GetBits(v, op.off, op.bits)
	var next, wrapped uint64
	var over bool
	if op.incr {
		next = old + uint64(op.arg)
		if over, wrapped = unsignedOverflow(old, op.arg, op.bits, op.overflow); over {
			next = wrapped
		}
		ret = int64(next)
	} else {
		next = uint64(op.arg)
		if over, wrapped = unsignedOverflow(next, 0, op.bits, op.overflow); over {
			next = wrapped
		}
		ret = int64(old)
	}
	if over && op.overflow == overflowFail {
		return 0, 0, false
	}
	return next, ret, true
}

// unsignedOverflow is Redis's checkUnsignedBitfieldOverflow: whether
// value + incr leaves an unsigned field of width bits, and the value that
// takes its place with WRAP or SAT.
func unsignedOverflow(value uint64, incr int64, width, overflow int) (bool, uint64) {
	maxv := uint64(1)<<width - 1
	maxincr := int64(maxv - value)
	minincr := -int64(value)
	wrap := func() uint64 { return (value + uint64(incr)) &^ (^uint64(0) << width) }
	switch {
	case value > maxv || (incr > 0 && incr > maxincr):
		if overflow == overflowWrap {
			return true, wrap()
		}
		return true, maxv
	case incr < 0 && incr < minincr:
		if overflow == overflowWrap {
			return true, wrap()
		}
		return true, 0
	}
	return false, 0
}

// signedOverflow is Redis's checkSignedBitfieldOverflow.
func signedOverflow(value, incr int64, width, overflow int) (bool, int64) {
	maxv := int64(math.MaxInt64)
	if width < 64 {
		maxv = int64(1)<<(width-1) - 1
	}
	minv := -maxv - 1
	maxincr := int64(uint64(maxv) - uint64(value))
	minincr := minv - value
	wrap := func() int64 {
		c := uint64(value) + uint64(incr)
		if width < 64 {
			mask := ^uint64(0) << width
			if c&(uint64(1)<<(width-1)) != 0 {
				c |= mask
			} else {
				c &^= mask
			}
		}
		return int64(c)
	}
	switch {
	case value > maxv || (width != 64 && incr > maxincr) || (value >= 0 && incr > 0 && incr > maxincr):
		if overflow == overflowWrap {
			return true, wrap()
		}
		return true, maxv
	case value < minv || (width != 64 && incr < minincr) || (value < 0 && incr < 0 && incr < minincr):
		if overflow == overflowWrap {
			return true, wrap()
		}
		return true, minv
	}
	return false, 0
}
