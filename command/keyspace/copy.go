package keyspace

import (
	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/config"
)

// COPY, with Redis 7.0's replies and errors. limitdb has one database, so
// DB answers any index but 0 as SELECT does.

func registerCopy(t *command.Table) {
	t.Register(&command.Command{Name: "copy", Arity: -3, Flags: command.FlagWrite | command.FlagDenyOOM | command.FlagGrows, FirstKey: 1, LastKey: 2, Step: 1,
		Group: "generic", Since: "0.3.0", Complexity: "O(N) worst case for collections, where N is the number of nested items. O(1) for string values.",
		Summary: "Copies a key's value and expiry, of any kind (a limiter's state included), to another key; answers 1 if copied.",
		Syntax:  "source destination [DB destination-db] [REPLACE]", Handler: cmdCopy})
}

func cmdCopy(c *command.Client, args [][]byte) {
	replace := false
	for j := 3; j < len(args); j++ {
		switch {
		case command.EqualFold(args[j], "replace"):
			replace = true
		case command.EqualFold(args[j], "db") && j+1 < len(args):
			db, err := command.ParseInt(args[j+1])
			if err != nil {
				c.Error(err)
				return
			}
			if db != int64(int32(db)) {
				c.Err("ERR value is out of range, value must between -2147483648 and 2147483647")
				return
			}
			if db != 0 {
				c.Err("ERR DB index is out of range")
				return
			}
			j++
		default:
			c.Error(command.ErrSyntax)
			return
		}
	}
	if string(args[1]) == string(args[2]) {
		c.Err("ERR source and destination objects are the same")
		return
	}
	done, err := c.Engine().Copy(args[1], args[2], c.Now(), replace)
	if err == nil && done {
		c.Notify(config.NotifyGeneric, "copy_to", args[2])
	}
	c.IntOrError(b2i(done), err)
}
