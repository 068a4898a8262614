package keyspace

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
)

// Sorted-set operations across keys (ZUNIONSTORE, ZINTER, ZDIFF, ...), the
// lexicographic ranges, ZRANDMEMBER and ZMPOP, with Redis 7.0's replies,
// error texts and the order in which it checks arguments and keys. A
// source may be a set, whose members count with score 1, as in Redis.
// Each command reads its sources and writes its destination in one
// DoMulti, so the destination's new state is one entry of the change
// stream.

func registerZSetOps(t *command.Table) {
	z := func(name string, arity int, flags command.Flag, complexity, summary, syntax string, fn func(*command.Client, [][]byte)) *command.Command {
		return &command.Command{Name: name, Arity: arity, Flags: flags, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "sorted_set", Since: "0.2.0", Complexity: complexity, Summary: summary, Syntax: syntax, Handler: fn}
	}
	movable := func(cmd *command.Command, keys func([][]byte) [][]byte) *command.Command {
		if cmd.Name[len(cmd.Name)-5:] != "store" {
			cmd.FirstKey, cmd.LastKey, cmd.Step = 0, 0, 0
		}
		cmd.Keys, cmd.KeyArgs = keys, keys
		return cmd
	}
	const unionCx = "O(N)+O(M*log(M)) with N the sum of the sizes of the input sets, and M the number of members in the result"
	const interCx = "O(N*K)+O(M*log(M)) with N the smallest input set, K the number of input sets and M the number of members in the result"
	const diffCx = "O(L + (N-K)log(N)) with L the total number of members in all sets, N the size of the first set and K the size of the result"
	t.Register(
		movable(z("zunionstore", -4, command.FlagWrite|command.FlagDenyOOM, unionCx,
			"Stores the union of sorted sets (sets count with score 1) at destination, scores summed, or their MIN or MAX, each first multiplied by its weight; answers the result's size.",
			"destination numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE SUM|MIN|MAX]", cmdZSetOp(zopUnion, true)), numKeysFrom(2, true)),
		movable(z("zinterstore", -4, command.FlagWrite|command.FlagDenyOOM, interCx,
			"Stores the intersection of sorted sets at destination, scores aggregated as ZUNIONSTORE's; answers the result's size.",
			"destination numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE SUM|MIN|MAX]", cmdZSetOp(zopInter, true)), numKeysFrom(2, true)),
		movable(z("zdiffstore", -4, command.FlagWrite|command.FlagDenyOOM, diffCx,
			"Stores the members of the first sorted set that are in none of the others at destination, with their scores; answers the result's size.",
			"destination numkeys key [key ...]", cmdZSetOp(zopDiff, true)), numKeysFrom(2, true)),
		movable(z("zunion", -3, command.FlagReadonly, unionCx,
			"Returns the union of sorted sets, as ZUNIONSTORE computes it, with the scores (WITHSCORES).",
			"numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]", cmdZSetOp(zopUnion, false)), numKeysFrom(1, false)),
		movable(z("zinter", -3, command.FlagReadonly, interCx,
			"Returns the intersection of sorted sets, as ZINTERSTORE computes it, with the scores (WITHSCORES).",
			"numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]", cmdZSetOp(zopInter, false)), numKeysFrom(1, false)),
		movable(z("zdiff", -3, command.FlagReadonly, diffCx,
			"Returns the members of the first sorted set that are in none of the others, with their scores (WITHSCORES).",
			"numkeys key [key ...] [WITHSCORES]", cmdZSetOp(zopDiff, false)), numKeysFrom(1, false)),
		movable(z("zintercard", -3, command.FlagReadonly, "O(N*K) worst case with N being the smallest input sorted set, K being the number of input sorted sets",
			"Counts the members of the intersection of sorted sets, stopping at LIMIT (0: no limit).",
			"numkeys key [key ...] [LIMIT limit]", cmdZSetOp(opInterCard, false)), numKeysFrom(1, false)),
		&command.Command{Name: "zrangestore", Arity: -5, Flags: command.FlagWrite | command.FlagDenyOOM, FirstKey: 1, LastKey: 2, Step: 1,
			Group: "sorted_set", Since: "0.2.0", Complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements stored into the destination key",
			Summary: "Stores the members ZRANGE would return from src at dst (none: dst is deleted); answers how many.",
			Syntax:  "dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]", Handler: cmdZRangeStore},
		z("zlexcount", 4, command.FlagReadonly|command.FlagFast, "O(log(N)) with N being the number of elements in the sorted set",
			"Counts the members between min and max by member (\"[\" includes, \"(\" excludes, - and +), for members of one score.",
			"key min max", cmdZLexCount),
		z("zremrangebylex", 4, command.FlagWrite, "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed",
			"Removes the members between min and max by member; answers how many.", "key min max", cmdZRemRangeByLex),
		z("zrandmember", -2, command.FlagReadonly, "O(N) where N is the number of members returned",
			"Returns a random member, or count distinct ones (negative: -count, maybe repeated), with their scores (WITHSCORES).",
			"key [count [WITHSCORES]]", cmdZRandMember),
		movable(z("zmpop", -4, command.FlagWrite, "O(K) + O(M*log(N)) where K is the number of keys, N the members of the sorted set and M the members popped",
			"Pops up to count members of lowest (MIN) or highest (MAX) score from the first non-empty sorted set of the keys; answers [key, [[member, score], ...]] or nil.",
			"numkeys key [key ...] MIN|MAX [COUNT count]", cmdZMPop), numKeysFrom(1, false)),
	)
}

// numKeysFrom lists the keys of a command whose key count is at args[at]
// and its keys follow it, with args[1], the destination, first when dest:
// nil when the count is not one.
func numKeysFrom(at int, dest bool) func(args [][]byte) [][]byte {
	return func(args [][]byte) [][]byte {
		if at >= len(args) {
			return nil
		}
		n, err := strconv.Atoi(string(args[at]))
		if err != nil || n < 1 || n > len(args)-at-1 {
			return nil
		}
		keys := args[at+1 : at+1+n]
		if dest {
			return append([][]byte{args[1]}, keys...)
		}
		return keys
	}
}

type zsetOp int

const (
	zopUnion zsetOp = iota
	zopInter
	zopDiff
	opInterCard
)

const (
	aggSum = iota
	aggMin
	aggMax
)

// zsrc is one input of a sorted-set operation: a sorted set, a set (score
// 1) or nothing (an absent key), with its weight.
type zsrc struct {
	z      *engine.ZSet
	s      *engine.Set
	weight float64
}

func (s *zsrc) len() int {
	switch {
	case s.z != nil:
		return s.z.Len()
	case s.s != nil:
		return s.s.Len()
	}
	return 0
}

func (s *zsrc) each(fn func(member string, score float64) bool) {
	switch {
	case s.z != nil:
		s.z.Scan(0, false, func(it engine.ZItem) bool { return fn(it.Member, it.Score) })
	case s.s != nil:
		s.s.Range(func(m []byte) bool { return fn(string(m), 1) })
	}
}

func (s *zsrc) score(member string) (float64, bool) {
	switch {
	case s.z != nil:
		return s.z.Score([]byte(member))
	case s.s != nil:
		return 1, s.s.Has([]byte(member))
	}
	return 0, false
}

// aggregate folds val into target as zunionInterAggregate does: a sum of
// +inf and -inf is 0.
func aggregate(target *float64, val float64, agg int) {
	switch agg {
	case aggSum:
		if *target += val; math.IsNaN(*target) {
			*target = 0
		}
	case aggMin:
		*target = min(*target, val)
	case aggMax:
		*target = max(*target, val)
	}
}

// weighted is score times weight, 0 where that is NaN (0 * inf).
func weighted(score, weight float64) float64 {
	if v := score * weight; !math.IsNaN(v) {
		return v
	}
	return 0
}

// zsetOpOptions are the options after the keys: WEIGHTS, AGGREGATE,
// WITHSCORES and LIMIT, as the command allows them.
type zsetOpOptions struct {
	agg        int
	withScores bool
	limit      int64
}

// parseZSetOpOptions reads opts as zunionInterDiffGenericCommand does,
// setting the sources' weights.
func parseZSetOpOptions(op zsetOp, store bool, opts [][]byte, srcs []zsrc) (zsetOpOptions, error) {
	var o zsetOpOptions
	weighs := op == zopUnion || op == zopInter
	for j := 0; j < len(opts); {
		remaining := len(opts) - j
		a := opts[j]
		switch {
		case weighs && remaining >= len(srcs)+1 && command.EqualFold(a, "weights"):
			j++
			for i := range srcs {
				w, ok := parseScore(opts[j])
				if !ok {
					return o, command.WireError("ERR weight value is not a float")
				}
				srcs[i].weight = w
				j++
			}
		case weighs && remaining >= 2 && command.EqualFold(a, "aggregate"):
			switch v := opts[j+1]; {
			case command.EqualFold(v, "sum"):
				o.agg = aggSum
			case command.EqualFold(v, "min"):
				o.agg = aggMin
			case command.EqualFold(v, "max"):
				o.agg = aggMax
			default:
				return o, command.ErrSyntax
			}
			j += 2
		case !store && op != opInterCard && command.EqualFold(a, "withscores"):
			o.withScores = true
			j++
		case op == opInterCard && remaining >= 2 && command.EqualFold(a, "limit"):
			n, err := command.ParseInt(opts[j+1])
			if err != nil || n < 0 {
				return o, command.WireError("ERR LIMIT can't be negative")
			}
			o.limit = n
			j += 2
		default:
			return o, command.ErrSyntax
		}
	}
	return o, nil
}

// cmdZSetOp is ZUNION, ZINTER, ZDIFF and ZINTERCARD, and with store their
// STORE forms, which name a destination first.
func cmdZSetOp(op zsetOp, store bool) func(c *command.Client, args [][]byte) {
	numAt := 1
	if store {
		numAt = 2
	}
	return func(c *command.Client, args [][]byte) {
		n, err := command.ParseInt(args[numAt])
		if err != nil {
			c.Error(err)
			return
		}
		if n < 1 {
			c.Errf("at least 1 input key is needed for '%s' command", lower(args[0]))
			return
		}
		if n > int64(len(args)-numAt-1) {
			c.Error(command.ErrSyntax)
			return
		}
		keys := args[numAt+1 : numAt+1+int(n)]
		opts := args[numAt+1+int(n):]
		all := keys
		if store {
			all = append([][]byte{args[1]}, keys...)
		}
		first := engine.FirstPlaces(all)
		var items []engine.ZItem
		var o zsetOpOptions
		var card int64
		var stored, failed, deleted bool
		c.Engine().DoMulti(all, c.Now(), func(ents []engine.Entry) bool {
			srcs := make([]zsrc, len(keys))
			for i := range keys {
				k := i
				if store {
					k++
				}
				ent := ents[first[k]]
				switch x := ent.Ext.(type) {
				case *engine.ZSet:
					srcs[i].z = x
				case *engine.Set:
					srcs[i].s = x
				default:
					if ent.Kind != engine.KindNone {
						c.Err(command.ErrWrongType)
						failed = true
						return false
					}
				}
				srcs[i].weight = 1
			}
			if o, err = parseZSetOpOptions(op, store, opts, srcs); err != nil {
				c.Error(err)
				failed = true
				return false
			}
			if op == opInterCard {
				card = interCard(srcs, o.limit)
				return false
			}
			items = computeZSetOp(op, srcs, o.agg)
			if !store {
				return false
			}
			switch {
			case len(items) > 0:
				dst := engine.NewZSet()
				for _, it := range items {
					dst.Set(it.Score, []byte(it.Member))
				}
				ents[0] = engine.Entry{Kind: engine.KindZSet, Ext: dst}
				stored = true
				return true
			case ents[0].Kind != engine.KindNone:
				ents[0], deleted = engine.Entry{}, true
				return true
			}
			return false
		})
		switch {
		case failed || !store:
		case stored:
			c.Notify(config.NotifyZSet, zstoreEvent(op), args[1])
		case deleted:
			c.Notify(config.NotifyGeneric, "del", args[1])
		}
		switch {
		case failed:
		case op == opInterCard:
			c.Int(card)
		case store:
			c.Int(int64(len(items)))
		default:
			replyItems(c, items, o.withScores, true)
		}
	}
}

// byCardinality orders sources from the smallest, stably, as Redis's
// qsort (a merge sort in glibc) leaves them: the order a sum's rounding
// follows.
func byCardinality(srcs []zsrc) {
	slices.SortStableFunc(srcs, func(a, b zsrc) int { return a.len() - b.len() })
}

// computeZSetOp is the result of a union, intersection or difference, in
// sorted-set order.
func computeZSetOp(op zsetOp, srcs []zsrc, agg int) []engine.ZItem {
	var items []engine.ZItem
	switch op {
	case zopUnion:
		byCardinality(srcs)
		at := map[string]int{}
		for i := range srcs {
			srcs[i].each(func(m string, s float64) bool {
				v := weighted(s, srcs[i].weight)
				if k, ok := at[m]; ok {
					aggregate(&items[k].Score, v, agg)
				} else {
					at[m] = len(items)
					items = append(items, engine.ZItem{Score: v, Member: m})
				}
				return true
			})
		}
	case zopInter:
		byCardinality(srcs)
		srcs[0].each(func(m string, s float64) bool {
			v := weighted(s, srcs[0].weight)
			for j := 1; j < len(srcs); j++ {
				o, ok := srcs[j].score(m)
				if !ok {
					return true
				}
				aggregate(&v, weighted(o, srcs[j].weight), agg)
			}
			items = append(items, engine.ZItem{Score: v, Member: m})
			return true
		})
	case zopDiff:
		srcs[0].each(func(m string, s float64) bool {
			for j := 1; j < len(srcs); j++ {
				if _, ok := srcs[j].score(m); ok {
					return true
				}
			}
			items = append(items, engine.ZItem{Score: s, Member: m})
			return true
		})
	}
	sortItems(items)
	return items
}

// sortItems puts items in sorted-set order: by score, then by member.
func sortItems(items []engine.ZItem) {
	slices.SortFunc(items, func(a, b engine.ZItem) int {
		switch {
		case a.Score < b.Score:
			return -1
		case a.Score > b.Score:
			return 1
		case a.Member < b.Member:
			return -1
		case a.Member > b.Member:
			return 1
		}
		return 0
	})
}

// interCard counts the intersection's members, stopping at limit (0: no
// limit).
func interCard(srcs []zsrc, limit int64) int64 {
	byCardinality(srcs)
	n := int64(0)
	srcs[0].each(func(m string, _ float64) bool {
		for j := 1; j < len(srcs); j++ {
			if _, ok := srcs[j].score(m); !ok {
				return true
			}
		}
		n++
		return limit == 0 || n < limit
	})
	return n
}

// cmdZRangeStore is ZRANGE whose result is stored at dst: its range and
// options are ZRANGE's, without WITHSCORES.
func cmdZRangeStore(c *command.Client, args [][]byte) {
	q, err := parseZRange(zrangeForm{store: true}, args[3], args[4], args[5:])
	if err != nil {
		c.Error(err)
		return
	}
	keys := [][]byte{args[1], args[2]}
	same := string(args[1]) == string(args[2])
	var n int
	wrong, deleted := false, false
	c.Engine().DoMulti(keys, c.Now(), func(ents []engine.Entry) bool {
		src := ents[1]
		if same {
			src = ents[0]
		}
		var items []engine.ZItem
		switch z := src.Ext.(type) {
		case *engine.ZSet:
			items = q.collect(z)
		default:
			if src.Kind != engine.KindNone {
				wrong = true
				return false
			}
		}
		n = len(items)
		if n == 0 {
			if ents[0].Kind == engine.KindNone {
				return false
			}
			ents[0], deleted = engine.Entry{}, true
			return true
		}
		dst := engine.NewZSet()
		for _, it := range items {
			dst.Set(it.Score, []byte(it.Member))
		}
		ents[0] = engine.Entry{Kind: engine.KindZSet, Ext: dst}
		return true
	})
	if wrong {
		c.Err(command.ErrWrongType)
		return
	}
	switch {
	case n > 0:
		c.Notify(config.NotifyZSet, "zrangestore", args[1])
	case deleted:
		c.Notify(config.NotifyGeneric, "del", args[1])
	}
	c.Int(int64(n))
}

// parseLexRange reads ZLEXCOUNT's and ZREMRANGEBYLEX's min and max.
func parseLexRange(lo, hi []byte) (min, max lexBound, err error) {
	var ok1, ok2 bool
	min, ok1 = parseLexBound(lo)
	max, ok2 = parseLexBound(hi)
	if !ok1 || !ok2 {
		return min, max, command.WireError("ERR min or max not valid string range item")
	}
	return min, max, nil
}

// lexRange calls fn on the members in [min, max] as Redis walks a sorted
// set for a lexicographic range: from the first member in range, in order,
// to the first one past it.
func lexRange(z *engine.ZSet, min, max lexBound, fn func(it engine.ZItem)) {
	in := false
	z.Scan(0, false, func(it engine.ZItem) bool {
		if !in {
			if !min.atMost(it.Member) {
				return true
			}
			in = true
		}
		if !max.atLeast(it.Member) {
			return false
		}
		fn(it)
		return true
	})
}

func cmdZLexCount(c *command.Client, args [][]byte) {
	min, max, err := parseLexRange(args[2], args[3])
	if err != nil {
		c.Error(err)
		return
	}
	n := 0
	_, err = c.Engine().DoZSet(args[1], c.Now(), false, func(z *engine.ZSet) bool {
		lexRange(z, min, max, func(engine.ZItem) { n++ })
		return false
	})
	c.IntOrError(int64(n), err)
}

func cmdZRemRangeByLex(c *command.Client, args [][]byte) {
	min, max, err := parseLexRange(args[2], args[3])
	if err != nil {
		c.Error(err)
		return
	}
	n, left := 0, 0
	_, err = c.Engine().DoZSet(args[1], c.Now(), false, func(z *engine.ZSet) bool {
		defer func() { left = z.Len() }()
		var gone []string
		lexRange(z, min, max, func(it engine.ZItem) { gone = append(gone, it.Member) })
		for _, m := range gone {
			z.Remove([]byte(m))
		}
		n = len(gone)
		return n > 0
	})
	if err == nil && n > 0 {
		notifyLeft(c, config.NotifyZSet, "zremrangebylex", args[1], left)
	}
	c.IntOrError(int64(n), err)
}

// cmdZRandMember is ZRANDMEMBER: one member (nil when absent), or with a
// count that many distinct members (all of them when there are fewer, in
// reverse order), or with a negative count -count members drawn independently.
func cmdZRandMember(c *command.Client, args [][]byte) {
	if len(args) == 2 {
		var member string
		found, err := c.Engine().DoZSet(args[1], c.Now(), false, func(z *engine.ZSet) bool {
			member = z.At(rand.IntN(z.Len())).Member
			return false
		})
		switch {
		case err != nil:
			c.Error(err)
		case !found:
			c.Null()
		default:
			c.BulkString(member)
		}
		return
	}
	count, withScores, ok := parseRandCount(c, args, "withscores")
	if !ok {
		return
	}
	var items []engine.ZItem
	found, err := c.Engine().DoZSet(args[1], c.Now(), false, func(z *engine.ZSet) bool {
		items = randomItems(z, count)
		return false
	})
	switch {
	case err != nil:
		c.Error(err)
	case !found:
		c.Array(0)
	default:
		replyItems(c, items, withScores, true)
	}
}

// randomItems is ZRANDMEMBER's choice of count members of z.
func randomItems(z *engine.ZSet, count int64) []engine.ZItem {
	size := z.Len()
	switch {
	case count == 0:
		return nil
	case count < 0:
		items := make([]engine.ZItem, 0, min(-count, 1<<16))
		for i := int64(0); i < -count; i++ {
			items = append(items, z.At(rand.IntN(size)))
		}
		return items
	case count >= int64(size): // all, from the last, as Redis walks a listpack
		items := make([]engine.ZItem, 0, size)
		z.Scan(0, true, func(it engine.ZItem) bool {
			items = append(items, it)
			return true
		})
		return items
	}
	// Fewer than the set holds: the first count of a random permutation
	// of the ranks, drawn as Fisher-Yates would, without the whole
	// permutation.
	picked := map[int]int{}
	items := make([]engine.ZItem, count)
	for i := range items {
		j := i + rand.IntN(size-i)
		vj, ok := picked[j]
		if !ok {
			vj = j
		}
		vi, ok := picked[i]
		if !ok {
			vi = i
		}
		picked[j] = vi
		items[i] = z.At(vj)
	}
	return items
}

// parseMPop reads ZMPOP's and LMPOP's numkeys, where-word and COUNT, from
// args[at] on (args[at] is numkeys), as Redis 7.0 checks them. where is
// the index of the word in words that matched.
func parseMPop(args [][]byte, at int, words [2]string) (keys [][]byte, where int, count int64, err error) {
	n, perr := command.ParseInt(args[at])
	if perr != nil || n < 1 {
		return nil, 0, 0, command.WireError("ERR numkeys should be greater than 0")
	}
	whereAt := int64(at) + n + 1
	if whereAt >= int64(len(args)) {
		return nil, 0, 0, command.ErrSyntax
	}
	switch w := args[whereAt]; {
	case command.EqualFold(w, words[0]):
		where = 0
	case command.EqualFold(w, words[1]):
		where = 1
	default:
		return nil, 0, 0, command.ErrSyntax
	}
	count = -1
	for j := int(whereAt) + 1; j < len(args); j++ {
		if count == -1 && command.EqualFold(args[j], "count") && j+1 < len(args) {
			j++
			if count, perr = command.ParseInt(args[j]); perr != nil || count < 1 {
				return nil, 0, 0, command.WireError("ERR count should be greater than 0")
			}
			continue
		}
		return nil, 0, 0, command.ErrSyntax
	}
	if count == -1 {
		count = 1
	}
	return args[at+1 : whereAt], where, count, nil
}

func cmdZMPop(c *command.Client, args [][]byte) {
	keys, where, count, err := parseMPop(args, 1, [2]string{"min", "max"})
	if err != nil {
		c.Error(err)
		return
	}
	key, items, left, err := zpopFirst(c.Engine(), c.Now(), keys, where == 1, count)
	if key != nil {
		notifyLeft(c, config.NotifyZSet, zpopEvent(where == 1), key, left)
	}
	switch {
	case err != nil:
		c.Error(err)
	case key == nil:
		c.NullArray()
	default:
		replyKeyItems(c, key, items)
	}
}

// replyKeyItems is ZMPOP's reply: the key, then its popped members as
// [member, score] pairs, in RESP2 too.
func replyKeyItems(c *command.Client, key []byte, items []engine.ZItem) {
	c.Array(2)
	c.Bulk(key)
	c.Array(len(items))
	for _, it := range items {
		c.Array(2)
		c.BulkString(it.Member)
		c.Double(it.Score)
	}
}

// zpopFirst pops up to count members, of the highest scores with max,
// from the first of keys that exists, as genericZpopCommand does: a key
// of another type before it is an error. key is nil when none exists;
// left is what it holds after.
func zpopFirst(eng *engine.Engine, now int64, keys [][]byte, max bool, count int64) (key []byte, items []engine.ZItem, left int, err error) {
	for _, k := range keys {
		found, err := eng.DoZSet(k, now, false, func(z *engine.ZSet) bool {
			pop := z.PopMin
			if max {
				pop = z.PopMax
			}
			for int64(len(items)) < count {
				it, ok := pop()
				if !ok {
					break
				}
				items = append(items, it)
			}
			left = z.Len()
			return len(items) > 0
		})
		if err != nil {
			return nil, nil, 0, err
		}
		if found {
			return k, items, left, nil
		}
	}
	return nil, nil, 0, nil
}

// zstoreEvent is the event of ZUNIONSTORE, ZINTERSTORE or ZDIFFSTORE.
func zstoreEvent(op zsetOp) string {
	switch op {
	case zopUnion:
		return "zunionstore"
	case zopInter:
		return "zinterstore"
	}
	return "zdiffstore"
}
