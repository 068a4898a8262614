package keyspace

import (
	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
)

// Set commands. Replies and error texts are Redis 7.0's.

func registerSet(t *command.Table) {
	s := func(name string, arity int, flags command.Flag, complexity, summary, syntax string, fn func(*command.Client, [][]byte)) *command.Command {
		return &command.Command{Name: name, Arity: arity, Flags: flags, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "set", Since: "0.2.0", Complexity: complexity, Summary: summary, Syntax: syntax, Handler: fn}
	}
	t.Register(
		s("sadd", -3, command.FlagWrite|command.FlagDenyOOM|command.FlagFast, "O(N) where N is the number of members added",
			"Adds members to a set, creating it; answers how many are new.", "key member [member ...]", cmdSAdd),
		s("srem", -3, command.FlagWrite|command.FlagFast, "O(N) where N is the number of members removed",
			"Removes members of a set, and the key with its last member; answers how many were there.", "key member [member ...]", cmdSRem),
		s("sismember", 3, command.FlagReadonly|command.FlagFast, "O(1)", "Answers 1 if the set has the member.", "key member", cmdSIsMember),
		s("smismember", -3, command.FlagReadonly|command.FlagFast, "O(N) where N is the number of members asked for",
			"Answers 1 or 0 for each member: whether the set has it.", "key member [member ...]", cmdSMIsMember),
		s("scard", 2, command.FlagReadonly|command.FlagFast, "O(1)", "Counts the members of a set (0 when absent).", "key", cmdSCard),
		s("smembers", 2, command.FlagReadonly, "O(N) where N is the size of the set",
			"Returns every member: in numeric order for a set of integers (intset), unordered otherwise.", "key", cmdSMembers),
	)
}

func cmdSAdd(c *command.Client, args [][]byte) {
	n := int64(0)
	_, err := c.Engine().DoSet(args[1], c.Now(), true, func(s *engine.Set) bool {
		n = countTrue(args[2:], s.Add)
		return n > 0
	})
	if err == nil && n > 0 {
		c.Notify(config.NotifySet, "sadd", args[1])
	}
	c.IntOrError(n, err)
}

func cmdSRem(c *command.Client, args [][]byte) {
	n, left := int64(0), 0
	_, err := c.Engine().DoSet(args[1], c.Now(), false, func(s *engine.Set) bool {
		n = countTrue(args[2:], s.Remove)
		left = s.Len()
		return n > 0
	})
	if err == nil && n > 0 {
		notifyLeft(c, config.NotifySet, "srem", args[1], left)
	}
	c.IntOrError(n, err)
}

func cmdSIsMember(c *command.Client, args [][]byte) {
	has := false
	_, err := c.Engine().DoSet(args[1], c.Now(), false, func(s *engine.Set) bool {
		has = s.Has(args[2])
		return false
	})
	c.IntOrError(b2i(has), err)
}

func cmdSMIsMember(c *command.Client, args [][]byte) {
	has := make([]bool, len(args)-2)
	_, err := c.Engine().DoSet(args[1], c.Now(), false, func(s *engine.Set) bool {
		for i, m := range args[2:] {
			has[i] = s.Has(m)
		}
		return false
	})
	if err != nil {
		c.Error(err)
		return
	}
	c.Array(len(has))
	for _, h := range has {
		c.Int(b2i(h))
	}
}

func cmdSCard(c *command.Client, args [][]byte) {
	n := 0
	_, err := c.Engine().DoSet(args[1], c.Now(), false, func(s *engine.Set) bool {
		n = s.Len()
		return false
	})
	c.IntOrError(int64(n), err)
}

func cmdSMembers(c *command.Client, args [][]byte) {
	found, err := c.Engine().DoSet(args[1], c.Now(), false, func(s *engine.Set) bool {
		c.Set(s.Len())
		s.Range(func(m []byte) bool {
			c.Bulk(m)
			return true
		})
		return false
	})
	switch {
	case err != nil:
		c.Error(err)
	case !found:
		c.Set(0)
	}
}
