package keyspace

import (
	"github.com/limitdb/limitdb/internal/redisarg"
	"math"
	"strconv"
	"strings"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
)

// Sorted set commands, for the sliding-log limiters whose Lua scripts keep
// request stamps as scores. Replies and error texts are Redis 7.0's; scores
// are written as it writes them (%.17g: a bulk string in RESP2, a double in
// RESP3).

func registerZSet(t *command.Table) {
	z := func(name string, arity int, flags command.Flag, complexity, summary, syntax string, fn func(*command.Client, [][]byte)) *command.Command {
		return &command.Command{Name: name, Arity: arity, Flags: flags, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "sorted_set", Since: "0.2.0", Complexity: complexity, Summary: summary, Syntax: syntax, Handler: fn}
	}
	const logN = "O(log(N)) where N is the number of members"
	t.Register(
		z("zadd", -4, command.FlagWrite|command.FlagDenyOOM|command.FlagFast, "O(log(N)) for each member added or updated",
			"Adds members with scores or updates their scores, creating the set; answers how many are new (with CH: new or changed), or with INCR the new score.",
			"key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]", cmdZAdd),
		z("zrem", -3, command.FlagWrite|command.FlagFast, "O(M*log(N)) where M is the number of members removed",
			"Removes members, and the key with its last member; answers how many were there.", "key member [member ...]", cmdZRem),
		z("zcard", 2, command.FlagReadonly|command.FlagFast, "O(1)", "Counts the members of a sorted set (0 when absent).", "key", cmdZCard),
		z("zcount", 4, command.FlagReadonly|command.FlagFast, logN, "Counts the members with scores between min and max (\"(\" excludes a bound; -inf and +inf).", "key min max", cmdZCount),
		z("zscore", 3, command.FlagReadonly|command.FlagFast, "O(1)", "Returns a member's score; nil when absent.", "key member", cmdZScore),
		z("zrank", 3, command.FlagReadonly|command.FlagFast, logN, "Returns a member's 0-based rank by ascending score; nil when absent.", "key member", cmdZRank(false)),
		z("zrange", -4, command.FlagReadonly, "O(log(N)+M) where M is the number of members returned",
			"Returns members by rank, by score (BYSCORE) or by member (BYLEX), ascending or REV, with their scores (WITHSCORES).",
			"key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES]", cmdZRange(zrangeForm{})),
		z("zrangebyscore", -4, command.FlagReadonly, "O(log(N)+M) where M is the number of members returned",
			"Returns the members with scores between min and max, ascending (ZRANGE ... BYSCORE's old form).",
			"key min max [WITHSCORES] [LIMIT offset count]", cmdZRange(zrangeForm{fixed: true, by: byScore})),
		z("zrevrangebyscore", -4, command.FlagReadonly, "O(log(N)+M) where M is the number of members returned",
			"Returns the members with scores between max and min, descending (ZRANGE ... BYSCORE REV's old form).",
			"key max min [WITHSCORES] [LIMIT offset count]", cmdZRange(zrangeForm{fixed: true, by: byScore, rev: true})),
		z("zrevrange", -4, command.FlagReadonly, "O(log(N)+M) where M is the number of members returned",
			"Returns members by rank, highest score first (ZRANGE ... REV's old form).",
			"key start stop [WITHSCORES]", cmdZRange(zrangeForm{fixed: true, by: byRank, rev: true})),
		z("zrangebylex", -4, command.FlagReadonly, "O(log(N)+M) where M is the number of members returned",
			"Returns the members between min and max by member, for members of one score (ZRANGE ... BYLEX's old form).",
			"key min max [LIMIT offset count]", cmdZRange(zrangeForm{fixed: true, by: byLex})),
		z("zrevrangebylex", -4, command.FlagReadonly, "O(log(N)+M) where M is the number of members returned",
			"Returns the members between max and min by member, descending (ZRANGE ... BYLEX REV's old form).",
			"key max min [LIMIT offset count]", cmdZRange(zrangeForm{fixed: true, by: byLex, rev: true})),
		z("zincrby", 4, command.FlagWrite|command.FlagDenyOOM|command.FlagFast, "O(log(N))",
			"Adds an increment to a member's score (0 if absent) and returns the new score.", "key increment member", cmdZIncrBy),
		z("zrevrank", 3, command.FlagReadonly|command.FlagFast, logN, "Returns a member's 0-based rank by descending score; nil when absent.", "key member", cmdZRank(true)),
		z("zmscore", -3, command.FlagReadonly|command.FlagFast, "O(N) where N is the number of members asked for",
			"Returns the scores of several members, nil for absent ones.", "key member [member ...]", cmdZMScore),
		z("zpopmax", -2, command.FlagWrite|command.FlagFast, "O(log(N)*M) where M is the number of members popped",
			"Removes and returns the members of highest score, one or count.", "key [count]", cmdZPop(true)),
		z("zremrangebyscore", 4, command.FlagWrite, "O(log(N)+M) where M is the number of members removed",
			"Removes the members with scores between min and max; answers how many.", "key min max", cmdZRemRangeByScore),
		z("zremrangebyrank", 4, command.FlagWrite, "O(log(N)+M) where M is the number of members removed",
			"Removes the members of ranks start to stop (negative counts from the end); answers how many.", "key start stop", cmdZRemRangeByRank),
		z("zpopmin", -2, command.FlagWrite|command.FlagFast, "O(log(N)*M) where M is the number of members popped",
			"Removes and returns the members of lowest score, one or count.", "key [count]", cmdZPop(false)),
	)
}

// parseScore reads a score as Redis's getDoubleFromObject does (strtod):
// no leading space, nothing after the number, not NaN, and not so large or
// so small that it overflows to infinity or underflows to 0.
func parseScore(b []byte) (float64, bool) {
	if len(b) == 0 || isCSpace(b[0]) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(f) {
		return 0, false
	}
	if f == 0 && underflows(string(b)) {
		return 0, false
	}
	return f, true
}

// underflows reports whether a number that parsed as 0 has a non-zero
// digit in its mantissa: strtod's ERANGE, which Redis refuses.
func underflows(s string) bool {
	if i := strings.IndexAny(s, "eE"); i >= 0 && !strings.HasPrefix(strings.TrimLeft(s, "+-"), "0x") {
		s = s[:i]
	}
	return strings.ContainsAny(s, "123456789")
}

func isCSpace(ch byte) bool { return ch == ' ' || (ch >= '\t' && ch <= '\r') }

// parseScoreRange reads min and max as Redis's zslParseRange does: "(" makes
// a bound exclusive, and the rest is strtod's, leading space, empty text
// (0) and out-of-range values included; only text after the number and NaN
// are refused.
func parseScoreRange(min, max []byte) (r engine.ScoreRange, ok bool) {
	bound := func(b []byte) (f float64, ex, ok bool) {
		if len(b) > 0 && b[0] == '(' {
			b, ex = b[1:], true
		}
		s := strings.TrimLeft(string(b), " \t\n\v\f\r")
		if s == "" {
			return 0, ex, true
		}
		f, err := strconv.ParseFloat(s, 64)
		if ne, isNum := err.(*strconv.NumError); err != nil && !(isNum && ne.Err == strconv.ErrRange) {
			return 0, ex, false
		}
		return f, ex, !math.IsNaN(f)
	}
	var ok1, ok2 bool
	r.Min, r.MinEx, ok1 = bound(min)
	r.Max, r.MaxEx, ok2 = bound(max)
	return r, ok1 && ok2
}

// lexBound is one end of a BYLEX range: "-" and "+" are the ends of all
// members, "[" includes the text that follows, "(" excludes it.
type lexBound struct {
	inf  int // -1 for "-", +1 for "+", 0 for a member
	ex   bool
	text string
}

func parseLexBound(b []byte) (lexBound, bool) {
	switch {
	case len(b) == 1 && b[0] == '-':
		return lexBound{inf: -1}, true
	case len(b) == 1 && b[0] == '+':
		return lexBound{inf: 1}, true
	case len(b) > 0 && b[0] == '(':
		return lexBound{ex: true, text: string(b[1:])}, true
	case len(b) > 0 && b[0] == '[':
		return lexBound{text: string(b[1:])}, true
	}
	return lexBound{}, false
}

func (l lexBound) atMost(m string) bool { // l <= m, as a minimum
	switch l.inf {
	case -1:
		return true
	case 1:
		return false
	}
	return m > l.text || (!l.ex && m == l.text)
}

func (l lexBound) atLeast(m string) bool { // m <= l, as a maximum
	switch l.inf {
	case -1:
		return false
	case 1:
		return true
	}
	return m < l.text || (!l.ex && m == l.text)
}

func cmdZAdd(c *command.Client, args [][]byte) {
	var nx, xx, gt, lt, ch, incr bool
	i := 2
	for ; i < len(args); i++ {
		switch a := args[i]; {
		case command.EqualFold(a, "nx"):
			nx = true
		case command.EqualFold(a, "xx"):
			xx = true
		case command.EqualFold(a, "gt"):
			gt = true
		case command.EqualFold(a, "lt"):
			lt = true
		case command.EqualFold(a, "ch"):
			ch = true
		case command.EqualFold(a, "incr"):
			incr = true
		default:
			goto pairs
		}
	}
pairs:
	rest := args[i:]
	switch {
	case len(rest) == 0 || len(rest)%2 != 0:
		c.Error(command.ErrSyntax)
		return
	case nx && xx:
		c.Err("ERR XX and NX options at the same time are not compatible")
		return
	case (gt && nx) || (lt && nx) || (gt && lt):
		c.Err("ERR GT, LT, and/or NX options at the same time are not compatible")
		return
	case incr && len(rest) > 2:
		c.Err("ERR INCR option supports a single increment-element pair")
		return
	}
	scores := make([]float64, len(rest)/2)
	for j := range scores {
		var ok bool
		if scores[j], ok = parseScore(rest[2*j]); !ok {
			c.Err("ERR value is not a valid float")
			return
		}
	}
	var added, updated, processed int64
	var score float64
	nan := false
	create := !xx
	_, err := c.Engine().DoZSet(args[1], c.Now(), create, func(z *engine.ZSet) bool {
		for j, s := range scores {
			member := rest[2*j+1]
			cur, exists := z.Score(member)
			switch {
			case exists && nx, !exists && xx:
				continue
			case exists:
				if incr {
					if s += cur; math.IsNaN(s) {
						nan = true
						return added+updated > 0
					}
				}
				if (lt && s >= cur) || (gt && s <= cur) {
					continue
				}
				if s != cur {
					z.Set(s, member)
					updated++
				}
			default:
				z.Set(s, member)
				added++
			}
			processed++
			score = s
		}
		return added+updated > 0
	})
	if err == nil && !nan && added+updated > 0 {
		event := "zadd"
		if incr {
			event = "zincr"
		}
		c.Notify(config.NotifyZSet, event, args[1])
	}
	switch {
	case err != nil:
		c.Error(err)
	case nan:
		c.Err("ERR resulting score is not a number (NaN)")
	case incr && processed > 0:
		c.Double(score)
	case incr:
		c.Null()
	case ch:
		c.Int(added + updated)
	default:
		c.Int(added)
	}
}

func cmdZRem(c *command.Client, args [][]byte) {
	n, left := int64(0), 0
	_, err := c.Engine().DoZSet(args[1], c.Now(), false, func(z *engine.ZSet) bool {
		n = countTrue(args[2:], z.Remove)
		left = z.Len()
		return n > 0
	})
	if err == nil && n > 0 {
		notifyLeft(c, config.NotifyZSet, "zrem", args[1], left)
	}
	c.IntOrError(n, err)
}

func cmdZCard(c *command.Client, args [][]byte) {
	n := 0
	_, err := c.Engine().DoZSet(args[1], c.Now(), false, func(z *engine.ZSet) bool {
		n = z.Len()
		return false
	})
	c.IntOrError(int64(n), err)
}

func cmdZCount(c *command.Client, args [][]byte) {
	r, ok := parseScoreRange(args[2], args[3])
	if !ok {
		c.Err("ERR min or max is not a float")
		return
	}
	n := 0
	_, err := c.Engine().DoZSet(args[1], c.Now(), false, func(z *engine.ZSet) bool {
		n = z.CountRange(r)
		return false
	})
	c.IntOrError(int64(n), err)
}

func cmdZScore(c *command.Client, args [][]byte) {
	var score float64
	has := false
	_, err := c.Engine().DoZSet(args[1], c.Now(), false, func(z *engine.ZSet) bool {
		score, has = z.Score(args[2])
		return false
	})
	switch {
	case err != nil:
		c.Error(err)
	case !has:
		c.Null()
	default:
		c.Double(score)
	}
}

// cmdZRank is ZRANK, and ZREVRANK with rev.
func cmdZRank(rev bool) func(c *command.Client, args [][]byte) {
	return func(c *command.Client, args [][]byte) {
		zrank(c, args, rev)
	}
}

func zrank(c *command.Client, args [][]byte, rev bool) {
	rank, has := 0, false
	_, err := c.Engine().DoZSet(args[1], c.Now(), false, func(z *engine.ZSet) bool {
		if rank, has = z.Rank(args[2]); rev {
			rank = z.Len() - 1 - rank
		}
		return false
	})
	switch {
	case err != nil:
		c.Error(err)
	case !has:
		c.Null()
	default:
		c.Int(int64(rank))
	}
}

const (
	byRank = iota
	byScore
	byLex
)

// zrangeForm is how a range command was called: ZRANGE (its kind of
// range and direction given by options), or an old form that fixes them
// (ZRANGEBYSCORE, ZREVRANGE, ...) and so takes neither REV, BYSCORE nor
// BYLEX; store is ZRANGESTORE, which takes no WITHSCORES.
type zrangeForm struct {
	fixed bool
	by    int
	rev   bool
	store bool
}

// zrangeQuery is a parsed range: what collect walks.
type zrangeQuery struct {
	by              int
	rev, withScores bool
	offset, limit   int64
	start, stop     int64
	sr              engine.ScoreRange
	lmin, lmax      lexBound
}

// parseZRange reads a range command's range (lo, hi) and options in
// Redis's order: options, their conflicts, then the range.
func parseZRange(form zrangeForm, lo, hi []byte, opts [][]byte) (q zrangeQuery, err error) {
	old := form.fixed
	q.by, q.rev, q.limit = form.by, form.rev, -1
	limited := false
	for i := 0; i < len(opts); i++ {
		a := opts[i]
		switch {
		case !form.store && command.EqualFold(a, "withscores"):
			q.withScores = true
		case command.EqualFold(a, "limit") && len(opts)-i-1 >= 2:
			if q.offset, err = command.ParseInt(opts[i+1]); err != nil {
				return q, err
			}
			if q.limit, err = command.ParseInt(opts[i+2]); err != nil {
				return q, err
			}
			limited = true
			i += 2
		case !old && !q.rev && command.EqualFold(a, "rev"):
			q.rev = true
		case !old && q.by == byRank && command.EqualFold(a, "bylex"):
			q.by = byLex
		case !old && q.by == byRank && command.EqualFold(a, "byscore"):
			q.by = byScore
		default:
			return q, command.ErrSyntax
		}
	}
	if limited && q.by == byRank {
		return q, command.WireError("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
	}
	if q.withScores && q.by == byLex {
		return q, command.WireError("ERR syntax error, WITHSCORES not supported in combination with BYLEX")
	}
	if q.rev && q.by != byRank {
		lo, hi = hi, lo // given as max min
	}
	switch q.by {
	case byRank:
		if q.start, err = command.ParseInt(lo); err != nil {
			return q, err
		}
		if q.stop, err = command.ParseInt(hi); err != nil {
			return q, err
		}
	case byScore:
		var ok bool
		if q.sr, ok = parseScoreRange(lo, hi); !ok {
			return q, command.WireError("ERR min or max is not a float")
		}
	case byLex:
		var ok1, ok2 bool
		q.lmin, ok1 = parseLexBound(lo)
		q.lmax, ok2 = parseLexBound(hi)
		if !ok1 || !ok2 {
			return q, command.WireError("ERR min or max not valid string range item")
		}
	}
	return q, nil
}

// collect returns the members of z in q's range, under z's lock.
func (q *zrangeQuery) collect(z *engine.ZSet) []engine.ZItem {
	var items []engine.ZItem
	// page applies LIMIT to a walk: skip offset items (a negative
	// offset skips them all, as in Redis), then keep at most limit
	// (negative: no bound).
	skip, limit := q.offset, q.limit
	page := func(it engine.ZItem) bool {
		if skip < 0 {
			return false
		}
		if skip > 0 {
			skip--
			return true
		}
		if limit >= 0 && int64(len(items)) >= limit {
			return false
		}
		items = append(items, it)
		return true
	}
	switch q.by {
	case byRank:
		from, to, ok := redisarg.RankRange(q.start, q.stop, z.Len())
		if !ok {
			return nil
		}
		items = make([]engine.ZItem, 0, to-from+1)
		z.Scan(from, q.rev, func(it engine.ZItem) bool {
			items = append(items, it)
			return len(items) < to-from+1
		})
	case byScore:
		z.AscendRange(q.sr, q.rev, page)
	case byLex:
		// Redis walks the set in order from the first member in
		// range to the first one past it.
		in := false
		z.Scan(0, q.rev, func(it engine.ZItem) bool {
			first, last := q.lmin.atMost(it.Member), q.lmax.atLeast(it.Member)
			if q.rev {
				first, last = last, first
			}
			if !in {
				if !first {
					return true
				}
				in = true
			}
			return last && page(it)
		})
	}
	return items
}

// cmdZRange is ZRANGE and its old forms.
func cmdZRange(form zrangeForm) func(c *command.Client, args [][]byte) {
	return func(c *command.Client, args [][]byte) {
		q, err := parseZRange(form, args[2], args[3], args[4:])
		if err != nil {
			c.Error(err)
			return
		}
		var items []engine.ZItem
		_, err = c.Engine().DoZSet(args[1], c.Now(), false, func(z *engine.ZSet) bool {
			items = q.collect(z)
			return false
		})
		if err != nil {
			c.Error(err)
			return
		}
		replyItems(c, items, q.withScores, true)
	}
}

// replyItems writes members, with their scores when withScores: flat in
// RESP2, and in RESP3 as [member, score] pairs when nested (ZRANGE, ZPOPMIN
// with a count), flat otherwise. The protocol is the reply's, not the
// connection's: a script's redis.call answers in RESP2 unless the script
// chose RESP3 with redis.setresp, whatever its client speaks.
func replyItems(c *command.Client, items []engine.ZItem, withScores, nested bool) {
	switch {
	case !withScores:
		c.Array(len(items))
	case nested && c.ReplyProto() >= 3:
		c.Array(len(items))
	default:
		nested = false
		c.Array(2 * len(items))
	}
	for _, it := range items {
		if withScores && nested {
			c.Array(2)
		}
		c.BulkString(it.Member)
		if withScores {
			c.Double(it.Score)
		}
	}
}

func cmdZRemRangeByScore(c *command.Client, args [][]byte) {
	r, ok := parseScoreRange(args[2], args[3])
	if !ok {
		c.Err("ERR min or max is not a float")
		return
	}
	n, left := 0, 0
	_, err := c.Engine().DoZSet(args[1], c.Now(), false, func(z *engine.ZSet) bool {
		n = z.RemoveRange(r)
		left = z.Len()
		return n > 0
	})
	if err == nil && n > 0 {
		notifyLeft(c, config.NotifyZSet, "zremrangebyscore", args[1], left)
	}
	c.IntOrError(int64(n), err)
}

func cmdZRemRangeByRank(c *command.Client, args [][]byte) {
	start, err := command.ParseInt(args[2])
	if err != nil {
		c.Error(err)
		return
	}
	stop, err := command.ParseInt(args[3])
	if err != nil {
		c.Error(err)
		return
	}
	n, left := 0, 0
	_, err = c.Engine().DoZSet(args[1], c.Now(), false, func(z *engine.ZSet) bool {
		if from, to, ok := redisarg.RankRange(start, stop, z.Len()); ok {
			n = z.RemoveRanks(from, to)
		}
		left = z.Len()
		return n > 0
	})
	if err == nil && n > 0 {
		notifyLeft(c, config.NotifyZSet, "zremrangebyrank", args[1], left)
	}
	c.IntOrError(int64(n), err)
}

func cmdZPop(max bool) func(c *command.Client, args [][]byte) {
	return func(c *command.Client, args [][]byte) { zpop(c, args, max) }
}

func zpop(c *command.Client, args [][]byte, max bool) {
	if len(args) > 3 {
		c.Error(command.ErrSyntax)
		return
	}
	count := int64(1)
	if len(args) == 3 {
		var err error
		if count, err = command.ParseInt(args[2]); err != nil || count < 0 {
			c.Err("ERR value is out of range, must be positive")
			return
		}
	}
	var items []engine.ZItem
	left := 0
	_, err := c.Engine().DoZSet(args[1], c.Now(), false, func(z *engine.ZSet) bool {
		defer func() { left = z.Len() }()
		for int64(len(items)) < count {
			pop := z.PopMin
			if max {
				pop = z.PopMax
			}
			it, ok := pop()
			if !ok {
				break
			}
			items = append(items, it)
		}
		return len(items) > 0
	})
	if err != nil {
		c.Error(err)
		return
	}
	if len(items) > 0 {
		notifyLeft(c, config.NotifyZSet, zpopEvent(max), args[1], left)
	}
	replyItems(c, items, true, len(args) == 3)
}

// cmdZIncrBy is ZADD key INCR increment member, as in Redis.
func cmdZIncrBy(c *command.Client, args [][]byte) {
	cmdZAdd(c, [][]byte{args[0], args[1], []byte("incr"), args[2], args[3]})
}

func cmdZMScore(c *command.Client, args [][]byte) {
	members := args[2:]
	scores := make([]float64, len(members))
	has := make([]bool, len(members))
	_, err := c.Engine().DoZSet(args[1], c.Now(), false, func(z *engine.ZSet) bool {
		for i, m := range members {
			scores[i], has[i] = z.Score(m)
		}
		return false
	})
	if err != nil {
		c.Error(err)
		return
	}
	c.Array(len(members))
	for i := range members {
		if has[i] {
			c.Double(scores[i])
		} else {
			c.Null()
		}
	}
}

func zpopEvent(max bool) string {
	if max {
		return "zpopmax"
	}
	return "zpopmin"
}
