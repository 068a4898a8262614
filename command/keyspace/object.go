package keyspace

import "github.com/limitdb/limitdb/command"

// OBJECT ENCODING, which Redis clients and tests use to see how a value is
// kept: limitdb answers what Redis 7.0 would for the same value (int,
// embstr or raw for a string; listpack or hashtable for a hash; intset or
// hashtable for a set; listpack or skiplist for a sorted set), and a
// limiter's kind for a limiter's key.

func registerObject(t *command.Table) {
	t.Register(&command.Command{Name: "object", Arity: -2, Group: "generic", Since: "0.2.0",
		Complexity: "Depends on subcommand.", Summary: "Inspects how a key's value is kept.", Syntax: "subcommand",
		Subs: []*command.Command{
			{Name: "object|encoding", Arity: 3, Flags: command.FlagReadonly, FirstKey: 2, LastKey: 2, Step: 1, Group: "generic", Since: "0.2.0",
				Complexity: "O(1)", Summary: "Names the encoding Redis 7.0 would use for the key's value; nil when absent.",
				Syntax: "key", Handler: cmdObjectEncoding},
			{Name: "object|help", Arity: 2, Flags: command.FlagLoading | command.FlagStale, Group: "generic", Since: "0.2.0",
				Complexity: "O(1)", Summary: "Lists the OBJECT subcommands.", Handler: command.HelpFor("object")},
		}})
}

func cmdObjectEncoding(c *command.Client, args [][]byte) {
	enc, ok := c.Engine().Encoding(args[2], c.Now())
	if !ok {
		c.Null()
		return
	}
	c.BulkString(enc)
}
