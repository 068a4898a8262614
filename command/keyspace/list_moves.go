package keyspace

import (
	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
)

// The list commands that move an element between lists (LMOVE,
// RPOPLPUSH) or pop from the first non-empty of several (LMPOP), with
// Redis 7.0's replies and the order in which it checks arguments and keys.
// A move reads and writes both lists in one DoMulti: the two keys' new
// states are one change of the stream.

func registerListMoves(t *command.Table) {
	l := func(name string, arity int, flags command.Flag, complexity, summary, syntax string, fn func(*command.Client, [][]byte)) *command.Command {
		return &command.Command{Name: name, Arity: arity, Flags: flags, FirstKey: 1, LastKey: 2, Step: 1,
			Group: "list", Since: "0.2.0", Complexity: complexity, Summary: summary, Syntax: syntax, Handler: fn}
	}
	lmpop := l("lmpop", -4, command.FlagWrite, "O(N+M) where N is the number of provided keys and M is the number of elements returned",
		"Pops up to count elements from the head (LEFT) or tail (RIGHT) of the first non-empty list of the keys; answers [key, [element, ...]] or nil.",
		"numkeys key [key ...] LEFT|RIGHT [COUNT count]", cmdLMPop)
	lmpop.FirstKey, lmpop.LastKey, lmpop.Step = 0, 0, 0
	lmpop.Keys, lmpop.KeyArgs = numKeysFrom(1, false), numKeysFrom(1, false)
	t.Register(
		l("lmove", 5, command.FlagWrite|command.FlagDenyOOM, "O(1)",
			"Pops an element from one end of source and pushes it at one end of destination (the same list rotates); answers the element, nil when source is absent.",
			"source destination LEFT|RIGHT LEFT|RIGHT", cmdLMove),
		l("rpoplpush", 3, command.FlagWrite|command.FlagDenyOOM, "O(1)",
			"LMOVE source destination RIGHT LEFT.", "source destination", cmdRPopLPush),
		lmpop,
	)
}

// listEnd reads LEFT or RIGHT: head is true for LEFT.
func listEnd(b []byte) (head bool, err error) {
	switch {
	case command.EqualFold(b, "left"):
		return true, nil
	case command.EqualFold(b, "right"):
		return false, nil
	}
	return false, command.ErrSyntax
}

func cmdLMove(c *command.Client, args [][]byte) {
	from, err := listEnd(args[3])
	if err != nil {
		c.Error(err)
		return
	}
	to, err := listEnd(args[4])
	if err != nil {
		c.Error(err)
		return
	}
	lmove(c, args[1], args[2], from, to)
}

func cmdRPopLPush(c *command.Client, args [][]byte) { lmove(c, args[1], args[2], false, true) }

func lmove(c *command.Client, src, dst []byte, fromHead, toHead bool) {
	v, ok, left, err := moveElement(c.Engine(), c.Now(), src, dst, fromHead, toHead)
	if ok {
		notifyMove(c, src, dst, fromHead, toHead, left)
	}
	switch {
	case err != nil:
		c.Error(err)
	case !ok:
		c.Null()
	default:
		c.Bulk(v)
	}
}

// moveElement pops an element from src's head (fromHead) or tail and
// pushes it at dst's, atomically, as lmoveGenericCommand does: an absent
// src moves nothing (ok false), whatever dst holds; then either of
// another type is ErrWrongType.
// left is what src holds after.
func moveElement(eng *engine.Engine, now int64, src, dst []byte, fromHead, toHead bool) (v []byte, ok bool, left int, err error) {
	same := string(src) == string(dst)
	eng.DoMulti([][]byte{src, dst}, now, func(ents []engine.Entry) bool {
		s, isList := ents[0].Ext.(*engine.List)
		switch {
		case ents[0].Kind == engine.KindNone:
			return false
		case !isList:
			err = engine.ErrWrongType
			return false
		}
		d := s
		if !same {
			switch x := ents[1].Ext.(type) {
			case *engine.List:
				d = x
			default:
				if ents[1].Kind != engine.KindNone {
					err = engine.ErrWrongType
					return false
				}
				d = engine.NewList()
				ents[1] = engine.Entry{Kind: engine.KindList, Ext: d}
			}
		}
		var popped []byte
		if fromHead {
			popped = s.PopHead()
		} else {
			popped = s.PopTail()
		}
		v, ok = append([]byte(nil), popped...), true
		if toHead {
			d.PushHead(v)
		} else {
			d.PushTail(v)
		}
		if left = s.Len(); left == 0 {
			ents[0] = engine.Entry{}
		}
		return true
	})
	return v, ok, left, err
}

// notifyMove tells an element's move as lmoveGenericCommand does: the
// push on dst, then the pop on src, and del when src was left empty.
func notifyMove(c *command.Client, src, dst []byte, fromHead, toHead bool, left int) {
	c.Notify(config.NotifyList, pushEvent(toHead), dst)
	notifyLeft(c, config.NotifyList, popEvent(fromHead), src, left)
}

func cmdLMPop(c *command.Client, args [][]byte) {
	keys, where, count, err := parseMPop(args, 1, [2]string{"left", "right"})
	if err != nil {
		c.Error(err)
		return
	}
	key, popped, left, err := lpopFirst(c.Engine(), c.Now(), keys, where == 0, count)
	if key != nil {
		notifyLeft(c, config.NotifyList, popEvent(where == 0), key, left)
	}
	switch {
	case err != nil:
		c.Error(err)
	case key == nil:
		c.NullArray()
	default:
		replyKeyElements(c, key, popped)
	}
}

// replyKeyElements is LMPOP's reply: the key, then its popped elements.
func replyKeyElements(c *command.Client, key []byte, popped [][]byte) {
	c.Array(2)
	c.Bulk(key)
	c.Array(len(popped))
	for _, v := range popped {
		c.Bulk(v)
	}
}

// lpopFirst pops up to count elements from the head (or tail) of the
// first of keys that exists, as mpopGenericCommand does: a key of another
// type before it is an error. key is nil when none exists; left is what
// it holds after.
func lpopFirst(eng *engine.Engine, now int64, keys [][]byte, head bool, count int64) (key []byte, popped [][]byte, left int, err error) {
	for _, k := range keys {
		found, err := eng.DoList(k, now, false, func(l *engine.List) bool {
			n := int(min(count, int64(l.Len())))
			popped = make([][]byte, n)
			for i := range popped {
				var v []byte
				if head {
					v = l.PopHead()
				} else {
					v = l.PopTail()
				}
				popped[i] = append([]byte(nil), v...)
			}
			left = l.Len()
			return n > 0
		})
		if err != nil {
			return nil, nil, 0, err
		}
		if found {
			return k, popped, left, nil
		}
	}
	return nil, nil, 0, nil
}
