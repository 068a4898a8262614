package keyspace

import (
	"github.com/limitdb/limitdb/internal/redisarg"
	"strings"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
)

// List commands, for the limiter libraries whose Lua scripts keep a
// window's hits in a list (python limits' moving window). Replies, error
// texts and the order in which arguments and the key are checked are
// Redis 7.0's. The moves are in list_moves.go, the blocking commands
// (BLPOP, BRPOP, BLMOVE, ...) in blocking_pops.go.

func registerList(t *command.Table) {
	l := func(name string, arity int, flags command.Flag, complexity, summary, syntax string, fn func(*command.Client, [][]byte)) *command.Command {
		return &command.Command{Name: name, Arity: arity, Flags: flags, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "list", Since: "0.2.0", Complexity: complexity, Summary: summary, Syntax: syntax, Handler: fn}
	}
	t.Register(
		l("lpush", -3, command.FlagWrite|command.FlagDenyOOM|command.FlagFast, "O(N) where N is the number of elements pushed",
			"Pushes elements at the head of a list, one after the other, creating it; answers the length.", "key element [element ...]", cmdPush(true, false)),
		l("rpush", -3, command.FlagWrite|command.FlagDenyOOM|command.FlagFast, "O(N) where N is the number of elements pushed",
			"Pushes elements at the tail of a list, creating it; answers the length.", "key element [element ...]", cmdPush(false, false)),
		l("lpushx", -3, command.FlagWrite|command.FlagDenyOOM|command.FlagFast, "O(N) where N is the number of elements pushed",
			"LPUSH only if the list exists; answers the length (0 when absent).", "key element [element ...]", cmdPush(true, true)),
		l("rpushx", -3, command.FlagWrite|command.FlagDenyOOM|command.FlagFast, "O(N) where N is the number of elements pushed",
			"RPUSH only if the list exists; answers the length (0 when absent).", "key element [element ...]", cmdPush(false, true)),
		l("lpop", -2, command.FlagWrite|command.FlagFast, "O(N) where N is the number of elements popped",
			"Removes and returns the first element, or with a count up to that many as an array; the key goes with its last element.", "key [count]", cmdPop(true)),
		l("rpop", -2, command.FlagWrite|command.FlagFast, "O(N) where N is the number of elements popped",
			"Removes and returns the last element, or with a count up to that many as an array.", "key [count]", cmdPop(false)),
		l("llen", 2, command.FlagReadonly|command.FlagFast, "O(1)", "Counts the elements of a list (0 when absent).", "key", cmdLLen),
		l("lindex", 3, command.FlagReadonly, "O(1)",
			"Returns the element at an index (negative: from the tail); nil when out of range.", "key index", cmdLIndex),
		l("lrange", 4, command.FlagReadonly, "O(N) where N is the number of elements returned",
			"Returns the elements from start to stop, both included (negative: from the tail).", "key start stop", cmdLRange),
		l("ltrim", 4, command.FlagWrite, "O(N) where N is the number of elements removed",
			"Keeps the elements from start to stop, both included, and removes the rest; the key goes when none is left.", "key start stop", cmdLTrim),
		l("lset", 4, command.FlagWrite|command.FlagDenyOOM, "O(1)",
			"Replaces the element at an index; an error when the key is absent or the index out of range.", "key index element", cmdLSet),
		l("lrem", 4, command.FlagWrite, "O(N+M) where N is the length of the list and M the number of elements removed",
			"Removes elements equal to element: count from the head, -count from the tail, 0 all; answers how many.", "key count element", cmdLRem),
		l("linsert", 5, command.FlagWrite|command.FlagDenyOOM, "O(N) where N is the length of the list",
			"Inserts an element before or after the first element equal to pivot; answers the length, -1 without the pivot, 0 without the key.",
			"key BEFORE|AFTER pivot element", cmdLInsert),
		l("lpos", -3, command.FlagReadonly, "O(N) where N is the length of the list; O(1) near an end or with MAXLEN",
			"Returns the index of the rank-th match of element (negative rank: from the tail), or with COUNT the indexes of up to that many matches (0: all), looking at MAXLEN elements at most.",
			"key element [RANK rank] [COUNT num-matches] [MAXLEN len]", cmdLPos),
	)
}

// cmdPush is LPUSH and RPUSH, and with onlyExisting LPUSHX and RPUSHX.
func cmdPush(head, onlyExisting bool) func(c *command.Client, args [][]byte) {
	return func(c *command.Client, args [][]byte) {
		n := 0
		_, err := c.Engine().DoList(args[1], c.Now(), !onlyExisting, func(l *engine.List) bool {
			for _, v := range args[2:] {
				if head {
					l.PushHead(v)
				} else {
					l.PushTail(v)
				}
			}
			n = l.Len()
			return true
		})
		if err != nil {
			c.Error(err)
			return
		}
		if n > 0 {
			c.Notify(config.NotifyList, pushEvent(head), args[1])
		}
		c.Int(int64(n))
	}
}

func pushEvent(head bool) string {
	if head {
		return "lpush"
	}
	return "rpush"
}

func popEvent(head bool) string {
	if head {
		return "lpop"
	}
	return "rpop"
}

// notifyLeft tells a list command's event, then del when it left the
// list empty (and so deleted it), as Redis does.
func notifyLeft(c *command.Client, class int, event string, key []byte, left int) {
	c.Notify(class, event, key)
	if left == 0 {
		c.Notify(config.NotifyGeneric, "del", key)
	}
}

func cmdPop(head bool) func(c *command.Client, args [][]byte) {
	return func(c *command.Client, args [][]byte) {
		if len(args) > 3 {
			c.Errf("wrong number of arguments for '%s' command", lower(args[0]))
			return
		}
		withCount, count := len(args) == 3, int64(1)
		if withCount {
			var err error
			if count, err = command.ParseInt(args[2]); err != nil || count < 0 {
				c.Err("ERR value is out of range, must be positive")
				return
			}
		}
		var popped [][]byte
		left := 0
		found, err := c.Engine().DoList(args[1], c.Now(), false, func(l *engine.List) bool {
			n := int(min(count, int64(l.Len())))
			popped = make([][]byte, n)
			for i := range popped {
				if head {
					popped[i] = l.PopHead()
				} else {
					popped[i] = l.PopTail()
				}
			}
			left = l.Len()
			return n > 0
		})
		if err == nil && found && len(popped) > 0 {
			notifyLeft(c, config.NotifyList, popEvent(head), args[1], left)
		}
		switch {
		case err != nil:
			c.Error(err)
		case !found && withCount:
			c.NullArray()
		case !found:
			c.Null()
		case !withCount:
			c.Bulk(popped[0])
		default:
			c.Array(len(popped))
			for _, v := range popped {
				c.Bulk(v)
			}
		}
	}
}

func cmdLLen(c *command.Client, args [][]byte) {
	n := 0
	_, err := c.Engine().DoList(args[1], c.Now(), false, func(l *engine.List) bool {
		n = l.Len()
		return false
	})
	c.IntOrError(int64(n), err)
}

// cmdLIndex looks the key up before it reads the index, as Redis does: an
// index that is not an integer is an error only on a list.
func cmdLIndex(c *command.Client, args [][]byte) {
	var v []byte
	var perr error
	found, err := c.Engine().DoList(args[1], c.Now(), false, func(l *engine.List) bool {
		var index int64
		if index, perr = command.ParseInt(args[2]); perr == nil {
			if i, ok := redisarg.ListIndex(index, l.Len()); ok {
				v = l.Index(i)
			}
		}
		return false
	})
	switch {
	case err != nil:
		c.Error(err)
	case perr != nil:
		c.Error(perr)
	case !found || v == nil:
		c.Null()
	default:
		c.Bulk(v)
	}
}

// parseStartStop reads LRANGE's and LTRIM's two indexes.
func parseStartStop(args [][]byte) (start, stop int64, err error) {
	if start, err = command.ParseInt(args[2]); err != nil {
		return 0, 0, err
	}
	stop, err = command.ParseInt(args[3])
	return start, stop, err
}

func cmdLRange(c *command.Client, args [][]byte) {
	start, stop, err := parseStartStop(args)
	if err != nil {
		c.Error(err)
		return
	}
	found, err := c.Engine().DoList(args[1], c.Now(), false, func(l *engine.List) bool {
		from, to, ok := redisarg.RankRange(start, stop, l.Len())
		if !ok {
			c.Array(0)
			return false
		}
		c.Array(to - from + 1)
		for i := from; i <= to; i++ {
			c.Bulk(l.Index(i))
		}
		return false
	})
	switch {
	case err != nil:
		c.Error(err)
	case !found:
		c.Array(0)
	}
}

func cmdLTrim(c *command.Client, args [][]byte) {
	start, stop, err := parseStartStop(args)
	if err != nil {
		c.Error(err)
		return
	}
	left := 0
	found, err := c.Engine().DoList(args[1], c.Now(), false, func(l *engine.List) bool {
		defer func() { left = l.Len() }()
		from, to, ok := redisarg.RankRange(start, stop, l.Len())
		switch {
		case !ok:
			l.Clear()
		case from == 0 && to == l.Len()-1:
			return false
		default:
			l.Trim(from, to)
		}
		return true
	})
	if err != nil {
		c.Error(err)
		return
	}
	if found {
		notifyLeft(c, config.NotifyList, "ltrim", args[1], left)
	}
	c.OK()
}

// cmdLSet looks the key up first, as LINDEX does.
func cmdLSet(c *command.Client, args [][]byte) {
	var perr error
	ok := false
	found, err := c.Engine().DoList(args[1], c.Now(), false, func(l *engine.List) bool {
		var index int64
		if index, perr = command.ParseInt(args[2]); perr != nil {
			return false
		}
		var i int
		if i, ok = redisarg.ListIndex(index, l.Len()); ok {
			l.Set(i, args[3])
		}
		return ok
	})
	switch {
	case err != nil:
		c.Error(err)
	case !found:
		c.Err("ERR no such key")
	case perr != nil:
		c.Error(perr)
	case !ok:
		c.Err("ERR index out of range")
	default:
		c.Notify(config.NotifyList, "lset", args[1])
		c.OK()
	}
}

func cmdLRem(c *command.Client, args [][]byte) {
	count, err := command.ParseInt(args[2])
	if err != nil {
		c.Error(err)
		return
	}
	n, left := 0, 0
	_, err = c.Engine().DoList(args[1], c.Now(), false, func(l *engine.List) bool {
		defer func() { left = l.Len() }()
		fromTail := count < 0
		k := count
		if fromTail {
			k = -k // count == MinInt64 stays negative: remove them all
		}
		if k < 0 || k > int64(l.Len()) {
			k = 0
		}
		n = l.Remove(args[3], int(k), fromTail)
		return n > 0
	})
	if err == nil && n > 0 {
		notifyLeft(c, config.NotifyList, "lrem", args[1], left)
	}
	c.IntOrError(int64(n), err)
}

func cmdLInsert(c *command.Client, args [][]byte) {
	var after bool
	switch strings.ToLower(string(args[2])) {
	case "after":
		after = true
	case "before":
	default:
		c.Error(command.ErrSyntax)
		return
	}
	n := 0
	found, err := c.Engine().DoList(args[1], c.Now(), false, func(l *engine.List) bool {
		n = -1
		for i := 0; i < l.Len(); i++ {
			if string(l.Index(i)) != string(args[3]) {
				continue
			}
			if after {
				i++
			}
			l.Insert(i, args[4])
			n = l.Len()
			return true
		}
		return false
	})
	switch {
	case err != nil:
		c.Error(err)
	case !found:
		c.Int(0)
	default:
		if n > 0 {
			c.Notify(config.NotifyList, "linsert", args[1])
		}
		c.Int(int64(n))
	}
}

// lposOptions are LPOS's options: count -1 when COUNT is not given.
type lposOptions struct {
	rank, count, maxlen int64
}

func parseLPos(args [][]byte) (lposOptions, error) {
	o := lposOptions{rank: 1, count: -1}
	for i := 3; i < len(args); i++ {
		opt := strings.ToLower(string(args[i]))
		if i+1 >= len(args) {
			return o, command.ErrSyntax
		}
		i++
		n, err := command.ParseInt(args[i])
		switch opt {
		case "rank":
			switch {
			case err != nil:
				return o, err
			case n == 0:
				return o, command.WireError("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... " +
					"or use negative to start from the end of the list")
			}
			o.rank = n
		case "count":
			if err != nil || n < 0 {
				return o, command.WireError("ERR COUNT can't be negative")
			}
			o.count = n
		case "maxlen":
			if err != nil || n < 0 {
				return o, command.WireError("ERR MAXLEN can't be negative")
			}
			o.maxlen = n
		default:
			return o, command.ErrSyntax
		}
	}
	return o, nil
}

func cmdLPos(c *command.Client, args [][]byte) {
	o, err := parseLPos(args)
	if err != nil {
		c.Error(err)
		return
	}
	var matches []int64
	found, err := c.Engine().DoList(args[1], c.Now(), false, func(l *engine.List) bool {
		matches = lpos(l, args[2], o)
		return false
	})
	switch {
	case err != nil:
		c.Error(err)
	case o.count >= 0:
		c.Array(len(matches))
		for _, m := range matches {
			c.Int(m)
		}
	case !found || len(matches) == 0:
		c.Null()
	default:
		c.Int(matches[0])
	}
}

// lpos returns the indexes of the matches LPOS answers: from the rank-th
// match on (counted from the tail when rank is negative), up to count of
// them (one without COUNT, all with COUNT 0), among the first maxlen
// elements looked at (all when 0).
//
// Redis 7.0 negates a negative rank as a C long: RANK -9223372036854775808
// stays negative, which every match passes, so it answers the last match.
// Go's int64 negation wraps the same way.
func lpos(l *engine.List, v []byte, o lposOptions) []int64 {
	step, i, rank := 1, 0, o.rank
	if rank < 0 {
		step, i, rank = -1, l.Len()-1, -rank
	}
	want := o.count
	if want < 0 {
		want = 1
	}
	var out []int64
	seen := int64(0)
	for looked := int64(0); i >= 0 && i < l.Len() && (o.maxlen == 0 || looked < o.maxlen); i, looked = i+step, looked+1 {
		if string(l.Index(i)) != string(v) {
			continue
		}
		if seen++; seen < rank {
			continue
		}
		out = append(out, int64(i))
		if want != 0 && int64(len(out)) >= want {
			break
		}
	}
	return out
}
