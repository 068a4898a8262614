package keyspace

import (
	"math"
	"slices"
	"strconv"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/engine"
)

// HSCAN, SSCAN and ZSCAN iterate a collection, and HRANDFIELD picks
// fields of a hash at random, with Redis 7.0's replies and errors.
//
// As in Redis, a collection in a compact encoding (listpack, intset) is
// answered whole in one call, cursor 0, whatever COUNT says. A larger one
// is walked in the order of a 64-bit FNV-1a hash of each field or member:
// the cursor is the hash the next call starts at, so that an element
// present from the first call to the last is returned at least once
// however the collection changes in between, which is the guarantee
// Redis gives. Elements of one hash are returned together. A call
// returns at least COUNT elements before MATCH filters them, and at
// least a 64th of the collection, so that a whole walk takes at most 64
// calls of O(N log N) each.

func registerScan(t *command.Table) {
	s := func(name, group string, complexity, summary, syntax string, fn func(*command.Client, [][]byte)) *command.Command {
		return &command.Command{Name: name, Arity: -3, Flags: command.FlagReadonly, FirstKey: 1, LastKey: 1, Step: 1,
			Group: group, Since: "0.3.0", Complexity: complexity, Summary: summary, Syntax: syntax, Handler: fn}
	}
	const each = "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection."
	t.Register(
		s("hscan", "hash", each, "Iterates over the fields and values of a hash.", "key cursor [MATCH pattern] [COUNT count]", cmdCollectionScan(engine.KindHash)),
		s("sscan", "set", each, "Iterates over the members of a set.", "key cursor [MATCH pattern] [COUNT count]", cmdCollectionScan(engine.KindSet)),
		s("zscan", "sorted_set", each, "Iterates over the members and scores of a sorted set.", "key cursor [MATCH pattern] [COUNT count]", cmdCollectionScan(engine.KindZSet)),
		&command.Command{Name: "hrandfield", Arity: -2, Flags: command.FlagReadonly, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "hash", Since: "0.3.0", Complexity: "O(N) where N is the number of fields returned",
			Summary: "Returns a field of a hash chosen at random; with a count, that many distinct fields, or with a negative count that many with repetition, optionally with their values.",
			Syntax:  "key [count [WITHVALUES]]", Handler: cmdHRandField},
	)
}

// parseCursor reads a cursor as Redis's strtoul does: decimal, a sign
// allowed (a negative cursor wraps), no leading space, nothing after.
func parseCursor(b []byte) (uint64, bool) {
	s := string(b)
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg, s = s[0] == '-', s[1:]
		if s == "" {
			return 0, false
		}
	}
	if s == "" {
		return 0, string(b) == ""
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

// scanItem is one element of a walk: its hash, its field or member, and
// its value or score text (nil for a set).
type scanItem struct {
	h    uint64
	key  []byte
	val  []byte
	both bool
}

// scanHash is FNV-1a of b, never 0 (the cursor that ends a walk).
func scanHash(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return max(h, 1)
}

// appendScore appends a score as Redis's d2string writes it in a scan:
// an integer's digits when it is one below 2^52, else %.17g.
func appendScore(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	case f == 0:
		if math.Signbit(f) {
			return append(dst, "-0"...)
		}
		return append(dst, '0')
	case f > -4503599627370495 && f < 4503599627370496 && f == math.Trunc(f):
		return strconv.AppendInt(dst, int64(f), 10)
	}
	return strconv.AppendFloat(dst, f, 'g', 17, 64)
}

func cmdCollectionScan(kind engine.Kind) func(c *command.Client, args [][]byte) {
	return func(c *command.Client, args [][]byte) {
		cursor, ok := parseCursor(args[2])
		if !ok {
			c.Err("ERR invalid cursor")
			return
		}
		var items []scanItem
		compact, found := false, false
		var err error
		collect := func(key, val []byte, both bool) {
			items = append(items, scanItem{key: append([]byte(nil), key...), val: append([]byte(nil), val...), both: both})
		}
		now := c.Now()
		switch kind {
		case engine.KindHash:
			found, err = c.Engine().DoHash(args[1], now, false, func(h *engine.Hash) bool {
				compact = h.Encoding() != "hashtable"
				h.Range(func(f, v []byte) bool { collect(f, v, true); return true })
				return false
			})
		case engine.KindSet:
			found, err = c.Engine().DoSet(args[1], now, false, func(s *engine.Set) bool {
				compact = s.Encoding() != "hashtable"
				s.Range(func(m []byte) bool { collect(m, nil, false); return true })
				return false
			})
		default:
			found, err = c.Engine().DoZSet(args[1], now, false, func(z *engine.ZSet) bool {
				compact = z.Encoding() != "skiplist"
				var buf [32]byte
				z.Scan(0, false, func(it engine.ZItem) bool {
					collect([]byte(it.Member), appendScore(buf[:0], it.Score), true)
					return true
				})
				return false
			})
		}
		switch {
		case err != nil:
			c.Error(err)
			return
		case !found:
			c.Array(2)
			c.BulkString("0")
			c.Array(0)
			return
		}
		pattern, count := "*", int64(10)
		for i := 3; i < len(args); i += 2 {
			switch {
			case command.EqualFold(args[i], "count") && i+1 < len(args):
				if count, err = command.ParseInt(args[i+1]); err != nil {
					c.Error(err)
					return
				}
				if count < 1 {
					c.Error(command.ErrSyntax)
					return
				}
			case command.EqualFold(args[i], "match") && i+1 < len(args):
				pattern = string(args[i+1])
			default:
				c.Error(command.ErrSyntax)
				return
			}
		}
		next := uint64(0)
		if !compact {
			items, next = scanWindow(items, cursor, max(count, int64(len(items)/64)))
		}
		out := items[:0]
		for _, it := range items {
			if pattern == "*" || command.GlobMatch(pattern, string(it.key)) {
				out = append(out, it)
			}
		}
		c.Array(2)
		c.BulkString(strconv.FormatUint(next, 10))
		n := len(out)
		if kind != engine.KindSet {
			n *= 2
		}
		c.Array(n)
		for _, it := range out {
			c.Bulk(it.key)
			if it.both {
				c.Bulk(it.val)
			}
		}
	}
}

// scanWindow is the items from hash cursor on, in hash order, at least
// count of them and every item of the last hash taken, with the cursor
// of the rest (0 when none is left).
func scanWindow(items []scanItem, cursor uint64, count int64) ([]scanItem, uint64) {
	rest := items[:0]
	for _, it := range items {
		it.h = scanHash(it.key)
		if it.h >= cursor {
			rest = append(rest, it)
		}
	}
	slices.SortFunc(rest, func(a, b scanItem) int {
		switch {
		case a.h < b.h:
			return -1
		case a.h > b.h:
			return 1
		}
		return 0
	})
	end := int(min(count, int64(len(rest))))
	for end < len(rest) && end > 0 && rest[end].h == rest[end-1].h {
		end++
	}
	if end == len(rest) {
		return rest, 0
	}
	return rest[:end], rest[end].h
}

func cmdHRandField(c *command.Client, args [][]byte) {
	if len(args) == 2 {
		var pick [][2][]byte
		found, err := c.Engine().DoHash(args[1], c.Now(), false, func(h *engine.Hash) bool {
			pick = h.SampleFields(1, true)
			return false
		})
		switch {
		case err != nil:
			c.Error(err)
		case !found:
			c.Null()
		default:
			c.Bulk(pick[0][0])
		}
		return
	}
	count, withValues, ok := parseRandCount(c, args, "withvalues")
	if !ok {
		return
	}
	var fields [][2][]byte
	_, err := c.Engine().DoHash(args[1], c.Now(), false, func(h *engine.Hash) bool {
		if count != 0 {
			fields = h.SampleFields(h.Len(), true)
		}
		return false
	})
	if err != nil {
		c.Error(err)
		return
	}
	switch {
	case !withValues:
		replyRandom(c, fields, count, 1, func(f [2][]byte) { c.Bulk(f[0]) })
	case c.ReplyProto() >= 3: // [field, value] pairs
		replyRandom(c, fields, count, 1, func(f [2][]byte) {
			c.Array(2)
			c.Bulk(f[0])
			c.Bulk(f[1])
		})
	default: // field, value, field, value...
		replyRandom(c, fields, count, 2, func(f [2][]byte) {
			c.Bulk(f[0])
			c.Bulk(f[1])
		})
	}
}
