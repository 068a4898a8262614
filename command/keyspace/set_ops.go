package keyspace

import (
	"math"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
)

// Set operations: SPOP, SRANDMEMBER, SMOVE and the algebra (SINTER,
// SINTERCARD, SUNION, SDIFF and their STOREs), with Redis 7.0's replies,
// errors and order of checks. A STORE replaces its destination, whatever
// it held, expiry included, or deletes it for an empty result; SPOP's
// effect on the set is what reaches replicas and the AOF.

func registerSetOps(t *command.Table) {
	s := func(name string, arity int, flags command.Flag, first, last int, complexity, summary, syntax string, fn func(*command.Client, [][]byte)) *command.Command {
		return &command.Command{Name: name, Arity: arity, Flags: flags, FirstKey: first, LastKey: last, Step: 1,
			Group: "set", Since: "0.3.0", Complexity: complexity, Summary: summary, Syntax: syntax, Handler: fn}
	}
	ro, store := command.FlagReadonly, command.FlagWrite|command.FlagDenyOOM|command.FlagGrows
	t.Register(
		s("spop", -2, command.FlagWrite|command.FlagFast, 1, 1, "Without the count argument O(1), otherwise O(N) where N is the size of the set",
			"Removes and returns one member of a set chosen at random, or count distinct members.", "key [count]", cmdSPop),
		s("srandmember", -2, ro, 1, 1, "Without the count argument O(1), otherwise O(N) where N is the size of the set",
			"Returns a member of a set chosen at random; with a count, that many distinct members, or with a negative count that many with repetition.",
			"key [count]", cmdSRandMember),
		s("smove", 4, command.FlagWrite|command.FlagFast, 1, 2, "O(1)",
			"Moves a member from one set to another, creating it; answers 1 if moved.", "source destination member", cmdSMove),
		s("sinter", -2, ro, 1, -1, "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets",
			"Returns the members every given set has (an absent key is an empty set).", "key [key ...]", cmdSetAlgebra(opInter, false)),
		s("sinterstore", -3, store, 1, -1, "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets",
			"Stores the intersection of sets in a key; answers its size.", "destination key [key ...]", cmdSetAlgebra(opInter, true)),
		s("sunion", -2, ro, 1, -1, "O(N) where N is the total number of elements in all given sets",
			"Returns the members of any of the given sets.", "key [key ...]", cmdSetAlgebra(opUnion, false)),
		s("sunionstore", -3, store, 1, -1, "O(N) where N is the total number of elements in all given sets",
			"Stores the union of sets in a key; answers its size.", "destination key [key ...]", cmdSetAlgebra(opUnion, true)),
		s("sdiff", -2, ro, 1, -1, "O(N) where N is the total number of elements in all given sets",
			"Returns the members of the first set that none of the others has.", "key [key ...]", cmdSetAlgebra(opDiff, false)),
		s("sdiffstore", -3, store, 1, -1, "O(N) where N is the total number of elements in all given sets",
			"Stores the difference of sets in a key; answers its size.", "destination key [key ...]", cmdSetAlgebra(opDiff, true)),
		&command.Command{Name: "sintercard", Arity: -3, Flags: ro, Keys: sinterCardKeys, KeyArgs: sinterCardKeys,
			Group: "set", Since: "0.3.0", Complexity: "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets",
			Summary: "Counts the members every given set has, stopping at LIMIT when given (0: no limit).",
			Syntax:  "numkeys key [key ...] [LIMIT limit]", Handler: cmdSInterCard},
	)
}

// maxReplyBytes bounds a reply of members with repetition, whose count a
// client chooses: past it the client is closed, as Redis closes one past
// its output buffer's limit, instead of the server running out of memory.
const maxReplyBytes = 1 << 30

// parseCount reads SRANDMEMBER's and HRANDFIELD's count: any int64 but
// the least, as Redis's -LONG_MAX..LONG_MAX.
func parseCount(c *command.Client, arg []byte) (int64, bool) {
	n, err := command.ParseInt(arg)
	if err != nil {
		c.Error(err)
		return 0, false
	}
	if n == math.MinInt64 {
		c.Err("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
		return 0, false
	}
	return n, true
}

// parseRandCount reads HRANDFIELD's and ZRANDMEMBER's "count [WITH...]"
// (args[2:], with naming the option) as Redis does: the count, whether the
// option was given, and false once it has answered an error.
func parseRandCount(c *command.Client, args [][]byte, with string) (count int64, withPairs, ok bool) {
	if count, ok = parseCount(c, args[2]); !ok {
		return 0, false, false
	}
	switch {
	case len(args) > 4 || (len(args) == 4 && !command.EqualFold(args[3], with)):
		c.Error(command.ErrSyntax)
		return 0, false, false
	case len(args) == 4:
		if count < -math.MaxInt64/2 || count > math.MaxInt64/2 {
			c.Err("ERR value is out of range")
			return 0, false, false
		}
		return count, true, true
	}
	return count, false, true
}

func cmdSPop(c *command.Client, args [][]byte) {
	if len(args) > 3 {
		c.Error(command.ErrSyntax)
		return
	}
	count := int64(1)
	if len(args) == 3 {
		n, err := command.ParseInt(args[2])
		if err != nil || n < 0 {
			c.Err("ERR value is out of range, must be positive")
			return
		}
		count = n
	}
	var popped [][]byte
	left := 0
	found, err := c.Engine().DoSet(args[1], c.Now(), false, func(s *engine.Set) bool {
		popped = s.Sample(int(min(count, math.MaxInt32)), true)
		for _, m := range popped {
			s.Remove(m)
		}
		left = s.Len()
		return len(popped) > 0
	})
	if err == nil && len(popped) > 0 {
		notifyLeft(c, config.NotifySet, "spop", args[1], left)
	}
	switch {
	case err != nil:
		c.Error(err)
	case len(args) == 2 && !found:
		c.Null()
	case len(args) == 2:
		c.Bulk(popped[0])
	default:
		c.Set(len(popped))
		for _, m := range popped {
			c.Bulk(m)
		}
	}
}

func cmdSRandMember(c *command.Client, args [][]byte) {
	if len(args) > 3 {
		c.Error(command.ErrSyntax)
		return
	}
	if len(args) == 2 {
		var pick [][]byte
		found, err := c.Engine().DoSet(args[1], c.Now(), false, func(s *engine.Set) bool {
			pick = s.Sample(1, true)
			return false
		})
		switch {
		case err != nil:
			c.Error(err)
		case !found:
			c.Null()
		default:
			c.Bulk(pick[0])
		}
		return
	}
	count, ok := parseCount(c, args[2])
	if !ok {
		return
	}
	var members [][]byte
	_, err := c.Engine().DoSet(args[1], c.Now(), false, func(s *engine.Set) bool {
		if count != 0 {
			members = s.Members()
		}
		return false
	})
	if err != nil {
		c.Error(err)
		return
	}
	replyRandom(c, members, count, 1, func(m []byte) { c.Bulk(m) })
}

// replyRandom answers count members of all (positive: distinct, at most
// all of them; negative: -count with repetition), an empty array for none;
// write writes per values for each.
func replyRandom[T any](c *command.Client, all []T, count int64, per int, write func(T)) {
	if len(all) == 0 || count == 0 {
		c.Array(0)
		return
	}
	if count > 0 {
		pick := sampleOf(all, int(min(count, int64(len(all)))))
		c.Array(per * len(pick))
		for _, m := range pick {
			write(m)
		}
		return
	}
	n := -count
	c.Array(per * int(min(n, math.MaxInt/2)))
	for i := int64(0); i < n; i++ {
		if i%1024 == 0 && c.Writer().Buffered() > maxReplyBytes {
			c.Close()
			return
		}
		write(all[randIntN(len(all))])
	}
}

func sampleOf[T any](items []T, n int) []T { return engine.Sample(items, n) }

func randIntN(n int) int { return engine.RandIntN(n) }

func cmdSMove(c *command.Client, args [][]byte) {
	src, dst, member := args[1], args[2], args[3]
	moved, added, left := false, false, 0
	var opErr error
	c.Engine().DoMulti([][]byte{src, dst}, c.Now(), func(ents []engine.Entry) bool {
		same := string(src) == string(dst)
		switch {
		case ents[0].Kind == engine.KindNone:
			return false
		case ents[0].Kind != engine.KindSet || (!same && ents[1].Kind != engine.KindNone && ents[1].Kind != engine.KindSet):
			opErr = engine.ErrWrongType
			return false
		}
		from := ents[0].Ext.(*engine.Set)
		if same {
			moved = from.Has(member)
			return false
		}
		if !from.Remove(member) {
			return false
		}
		if left = from.Len(); left == 0 {
			ents[0] = engine.Entry{}
		}
		if ents[1].Kind == engine.KindNone {
			ents[1] = engine.Entry{Kind: engine.KindSet, Ext: engine.NewSet()}
		}
		added = ents[1].Ext.(*engine.Set).Add(member)
		moved = true
		return true
	})
	if moved && string(src) != string(dst) {
		notifyLeft(c, config.NotifySet, "srem", src, left)
		if added {
			c.Notify(config.NotifySet, "sadd", dst)
		}
	}
	c.IntOrError(b2i(moved), opErr)
}

type setOp int

const (
	opInter setOp = iota
	opUnion
	opDiff
)

// sourceSets reads the sets of keys from ents (DoMulti's, keys' first
// places in first, from offset on): nil for an absent key.
func sourceSets(ents []engine.Entry, first []int, from, n int) ([]*engine.Set, error) {
	sets := make([]*engine.Set, n)
	for j := range sets {
		ent := ents[first[from+j]]
		switch ent.Kind {
		case engine.KindNone:
		case engine.KindSet:
			sets[j] = ent.Ext.(*engine.Set)
		default:
			return nil, engine.ErrWrongType
		}
	}
	return sets, nil
}

// setAlgebra is the members of op on sets (copies), for intersection at
// most limit of them (0: all). An intersection walks the smallest set in
// its order, as Redis does; a union or difference is built as a set, so
// that its order is that set's.
func setAlgebra(op setOp, sets []*engine.Set, limit int) [][]byte {
	switch op {
	case opInter:
		smallest := -1
		for i, s := range sets {
			if s == nil {
				return nil
			}
			if smallest < 0 || s.Len() < sets[smallest].Len() {
				smallest = i
			}
		}
		var out [][]byte
		sets[smallest].Range(func(m []byte) bool {
			for i, s := range sets {
				if i != smallest && !s.Has(m) {
					return true
				}
			}
			out = append(out, append([]byte(nil), m...))
			return limit == 0 || len(out) < limit
		})
		return out
	case opUnion:
		res := engine.NewSet()
		for _, s := range sets {
			if s != nil {
				s.Range(func(m []byte) bool { res.Add(m); return true })
			}
		}
		return res.Members()
	}
	if sets[0] == nil {
		return nil
	}
	res := engine.NewSet()
	sets[0].Range(func(m []byte) bool {
		for _, s := range sets[1:] {
			if s != nil && s.Has(m) {
				return true
			}
		}
		res.Add(m)
		return true
	})
	return res.Members()
}

// cmdSetAlgebra answers SINTER, SUNION, SDIFF (store false) and their
// STOREs.
func cmdSetAlgebra(op setOp, store bool) func(c *command.Client, args [][]byte) {
	return func(c *command.Client, args [][]byte) {
		keys := args[1:]
		from := 0
		if store {
			from = 1
		}
		first := engine.FirstPlaces(keys)
		var result [][]byte
		var opErr error
		deleted := false // an empty result deleted the destination
		c.Engine().DoMulti(keys, c.Now(), func(ents []engine.Entry) bool {
			sets, err := sourceSets(ents, first, from, len(keys)-from)
			if err != nil {
				opErr = err
				return false
			}
			result = setAlgebra(op, sets, 0)
			if !store {
				return false
			}
			if len(result) == 0 {
				if ents[0].Kind == engine.KindNone {
					return false
				}
				ents[0], deleted = engine.Entry{}, true
				return true
			}
			ents[0] = engine.Entry{Kind: engine.KindSet, Ext: engine.SetOf(result)}
			return true
		})
		switch {
		case opErr != nil || !store:
		case len(result) > 0:
			c.Notify(config.NotifySet, storeEvent(op), args[1])
		case deleted:
			c.Notify(config.NotifyGeneric, "del", args[1])
		}
		switch {
		case opErr != nil:
			c.Error(opErr)
		case store:
			c.Int(int64(len(result)))
		default:
			c.Set(len(result))
			for _, m := range result {
				c.Bulk(m)
			}
		}
	}
}

// sinterCardKeys is SINTERCARD's keys: numkeys of them after numkeys.
func sinterCardKeys(args [][]byte) [][]byte {
	n, err := command.ParseInt(args[1])
	if err != nil || n < 1 || n > int64(len(args)-2) {
		return nil
	}
	return args[2 : 2+n]
}

func cmdSInterCard(c *command.Client, args [][]byte) {
	n, err := command.ParseInt(args[1])
	if err != nil || n < 1 {
		c.Err("ERR numkeys should be greater than 0")
		return
	}
	if n > int64(len(args)-2) {
		c.Err("ERR Number of keys can't be greater than number of args")
		return
	}
	keys := args[2 : 2+n]
	limit := int64(0)
	for j := 2 + int(n); j < len(args); j++ {
		if !command.EqualFold(args[j], "limit") || j+1 >= len(args) {
			c.Error(command.ErrSyntax)
			return
		}
		j++
		if limit, err = command.ParseInt(args[j]); err != nil || limit < 0 {
			c.Err("ERR LIMIT can't be negative")
			return
		}
	}
	first := engine.FirstPlaces(keys)
	var count int
	var opErr error
	c.Engine().DoMulti(keys, c.Now(), func(ents []engine.Entry) bool {
		sets, err := sourceSets(ents, first, 0, len(keys))
		if err != nil {
			opErr = err
			return false
		}
		count = len(setAlgebra(opInter, sets, int(min(limit, math.MaxInt32))))
		return false
	})
	c.IntOrError(int64(count), opErr)
}

// storeEvent is the event of SINTERSTORE, SUNIONSTORE or SDIFFSTORE.
func storeEvent(op setOp) string {
	switch op {
	case opInter:
		return "sinterstore"
	case opUnion:
		return "sunionstore"
	}
	return "sdiffstore"
}
