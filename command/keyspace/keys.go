package keyspace

import (
	"errors"
	"strconv"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
)

func registerKeys(t *command.Table) {
	t.Register(
		&command.Command{Name: "del", Arity: -2, Flags: command.FlagWrite, FirstKey: 1, LastKey: -1, Step: 1, Group: "generic", Since: "0.1.0",
			Complexity: "O(N) where N is the number of keys", Summary: "Deletes keys; answers how many existed.", Syntax: "key [key ...]", Handler: cmdDel},
		&command.Command{Name: "unlink", Arity: -2, Flags: command.FlagWrite | command.FlagFast, FirstKey: 1, LastKey: -1, Step: 1, Group: "generic", Since: "0.1.0",
			Complexity: "O(N) where N is the number of keys", Summary: "Deletes keys (same as DEL: limitdb's values are small).", Syntax: "key [key ...]", Handler: cmdDel},
		&command.Command{Name: "exists", Arity: -2, Flags: command.FlagReadonly | command.FlagFast, FirstKey: 1, LastKey: -1, Step: 1, Group: "generic", Since: "0.1.0",
			Complexity: "O(N) where N is the number of keys", Summary: "Counts how many of the keys exist.", Syntax: "key [key ...]", Handler: cmdExists},
		&command.Command{Name: "rename", Arity: 3, Flags: command.FlagWrite, FirstKey: 1, LastKey: 2, Step: 1, Group: "generic", Since: "0.2.0",
			Complexity: "O(N) where N is the size of the value", Summary: "Moves a key's value and expiry to another name, replacing what it held.", Syntax: "key newkey", Handler: cmdRename(false)},
		&command.Command{Name: "renamenx", Arity: 3, Flags: command.FlagWrite | command.FlagFast, FirstKey: 1, LastKey: 2, Step: 1, Group: "generic", Since: "0.2.0",
			Complexity: "O(N) where N is the size of the value", Summary: "Moves a key's value and expiry to another name only if that name is free; answers 1 if moved.", Syntax: "key newkey", Handler: cmdRename(true)},
		&command.Command{Name: "type", Arity: 2, Flags: command.FlagReadonly | command.FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "0.1.0",
			Complexity: "O(1)", Summary: "Names the algorithm or type that owns the key (gcra, tbucket, lbqueue, fwindow, swindow, slog, string, hash, set, zset, list, cwindow, none).", Syntax: "key", Handler: cmdType},
		&command.Command{Name: "ttl", Arity: 2, Flags: command.FlagReadonly | command.FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "0.1.0",
			Complexity: "O(1)", Summary: "Seconds until the key expires (-1 never, -2 absent).", Syntax: "key", Handler: cmdTTL(false)},
		&command.Command{Name: "pttl", Arity: 2, Flags: command.FlagReadonly | command.FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "0.1.0",
			Complexity: "O(1)", Summary: "Milliseconds until the key expires (-1 never, -2 absent).", Syntax: "key", Handler: cmdTTL(true)},
		&command.Command{Name: "memory", Arity: -2, Group: "server", Since: "0.1.0",
			Complexity: "Depends on subcommand.", Summary: "Reports memory use.", Syntax: "subcommand",
			Subs: []*command.Command{
				{Name: "memory|usage", Arity: -3, Flags: command.FlagReadonly, FirstKey: 2, LastKey: 2, Step: 1, Group: "server", Since: "0.1.0",
					Complexity: "O(1)", Summary: "Estimates the bytes a key takes: its entry, its share of the index and its state beyond the entry (a sliding log's stamps, a string's bytes); nil when absent. SAMPLES is accepted and ignored.",
					Syntax: "key [SAMPLES count]", Handler: cmdMemoryUsage},
				{Name: "memory|help", Arity: 2, Flags: command.FlagLoading | command.FlagStale, Group: "server", Since: "0.1.0",
					Complexity: "O(1)", Summary: "Lists the MEMORY subcommands.", Handler: command.HelpFor("memory")},
			}},
		&command.Command{Name: "dbsize", Arity: 1, Flags: command.FlagReadonly | command.FlagFast, Group: "server", Since: "0.1.0", ACLCats: []string{"keyspace"},
			Complexity: "O(shards)", Summary: "Counts the keys.", Handler: cmdDBSize},
		&command.Command{Name: "scan", Arity: -2, Flags: command.FlagReadonly, Group: "generic", Since: "0.1.0",
			Complexity: "O(1) per call, O(N) for a full iteration", Summary: "Iterates over the keys; the cursor is a shard number.",
			Syntax: "cursor [MATCH pattern] [COUNT count] [TYPE type]", Handler: cmdScan},
		&command.Command{Name: "keys", Arity: 2, Flags: command.FlagReadonly | command.FlagDangerous, Group: "generic", Since: "0.1.0",
			Complexity: "O(N)", Summary: "Lists the keys matching a glob pattern.", Syntax: "pattern", Handler: cmdKeys},
		&command.Command{Name: "flushall", Arity: -1, Flags: command.FlagWrite | command.FlagDangerous, Group: "server", Since: "0.1.0", ACLCats: []string{"keyspace"},
			Complexity: "O(N)", Summary: "Deletes every key.", Syntax: "[ASYNC|SYNC]", Handler: cmdFlush},
		&command.Command{Name: "flushdb", Arity: -1, Flags: command.FlagWrite | command.FlagDangerous, Group: "server", Since: "0.1.0", ACLCats: []string{"keyspace"},
			Complexity: "O(N)", Summary: "Deletes every key (limitdb has one database).", Syntax: "[ASYNC|SYNC]", Handler: cmdFlush},
	)
}

func cmdDel(c *command.Client, args [][]byte) {
	now := c.Now()
	n := int64(0)
	for _, k := range args[1:] {
		if c.Engine().Delete(k, now) {
			n++
			c.Notify(config.NotifyGeneric, "del", k)
		}
	}
	c.Int(n)
}

func cmdExists(c *command.Client, args [][]byte) {
	now := c.Now()
	n := int64(0)
	for _, k := range args[1:] {
		if _, _, ok := c.Engine().Peek(k, now); ok {
			n++
		}
	}
	c.Int(n)
}

func cmdRename(nx bool) func(c *command.Client, args [][]byte) {
	return func(c *command.Client, args [][]byte) {
		done, err := c.Engine().Rename(args[1], args[2], c.Now(), nx)
		if err == nil && (done || !nx) && string(args[1]) != string(args[2]) {
			c.Notify(config.NotifyGeneric, "rename_from", args[1])
			c.Notify(config.NotifyGeneric, "rename_to", args[2])
		}
		switch {
		case errors.Is(err, engine.ErrNoSuchKey):
			c.Err("ERR no such key")
		case err != nil:
			c.Error(err)
		case nx:
			c.Int(b2i(done))
		default:
			c.OK()
		}
	}
}

func cmdType(c *command.Client, args [][]byte) {
	kind, _, _ := c.Engine().Peek(args[1], c.Now())
	c.Simple(kind.String())
}

func cmdTTL(millis bool) func(c *command.Client, args [][]byte) {
	return func(c *command.Client, args [][]byte) {
		now := c.Now()
		_, expire, ok := c.Engine().Peek(args[1], now)
		switch {
		case !ok:
			c.Int(-2)
		case expire == 0:
			c.Int(-1)
		default:
			ms := command.PTTL(expire, now)
			if millis {
				c.Int(ms)
			} else {
				c.Int((ms + 500) / 1000) // Redis rounds TTL to the nearest second
			}
		}
	}
}

func cmdDBSize(c *command.Client, _ [][]byte) { c.Int(int64(c.Engine().Len())) }

// cmdMemoryUsage answers MEMORY USAGE key [SAMPLES count]. Every key's
// state is measured whole, so SAMPLES, which bounds Redis's sampling of
// large collections, is checked and otherwise ignored.
func cmdMemoryUsage(c *command.Client, args [][]byte) {
	switch {
	case len(args) == 5 && command.EqualFold(args[3], "samples"):
		if n, err := command.ParseInt(args[4]); err != nil || n < 0 {
			c.Err("ERR value is not an integer or out of range")
			return
		}
	case len(args) != 3:
		c.Err("ERR syntax error")
		return
	}
	n, ok := c.Engine().KeyBytes(args[2], c.Now())
	if !ok {
		c.Null()
		return
	}
	c.Int(n)
}

func cmdScan(c *command.Client, args [][]byte) {
	cursor, err := command.ParseInt(args[1])
	if err != nil || cursor < 0 {
		c.Err("ERR invalid cursor")
		return
	}
	pattern, count, kind := "*", int64(10), engine.KindNone
	typed := false
	for i := 2; i < len(args); i += 2 {
		if i+1 >= len(args) {
			c.Error(command.ErrSyntax)
			return
		}
		switch {
		case command.EqualFold(args[i], "match"):
			pattern = string(args[i+1])
		case command.EqualFold(args[i], "count"):
			if count, err = command.ParseInt(args[i+1]); err != nil {
				c.Error(err)
				return
			}
			if count < 1 {
				c.Error(command.ErrSyntax)
				return
			}
		case command.EqualFold(args[i], "type"):
			k, ok := engine.KindByName(string(args[i+1]))
			if !ok {
				c.Errf("unknown type name '%s'", command.Clip(args[i+1]))
				return
			}
			kind, typed = k, true
		default:
			c.Error(command.ErrSyntax)
			return
		}
	}
	eng, now := c.Engine(), c.Now()
	var keys []string
	shard := int(cursor)
	for ; shard < eng.Shards() && int64(len(keys)) < count; shard++ {
		eng.RangeShard(shard, now, func(k string, ent *engine.Entry) bool {
			if (!typed || ent.Kind == kind) && command.GlobMatch(pattern, k) {
				keys = append(keys, k)
			}
			return true
		})
	}
	if shard >= eng.Shards() {
		shard = 0
	}
	c.Array(2)
	c.BulkString(strconv.Itoa(shard))
	c.Array(len(keys))
	for _, k := range keys {
		c.BulkString(k)
	}
}

// cmdKeys walks the whole keyspace, which may take long: the connections
// that share the client's event loop are served meanwhile (RunLong).
func cmdKeys(c *command.Client, args [][]byte) {
	eng, now, pattern := c.Engine(), c.Now(), string(args[1])
	var keys []string
	c.RunLong(func() {
		for i := 0; i < eng.Shards(); i++ {
			eng.RangeShard(i, now, func(k string, _ *engine.Entry) bool {
				if command.GlobMatch(pattern, k) {
					keys = append(keys, k)
				}
				return true
			})
		}
	})
	c.Array(len(keys))
	for _, k := range keys {
		c.BulkString(k)
	}
}

func cmdFlush(c *command.Client, args [][]byte) {
	if len(args) > 2 || (len(args) == 2 && !command.EqualFold(args[1], "async") && !command.EqualFold(args[1], "sync")) {
		c.Error(command.ErrSyntax)
		return
	}
	c.RunLong(func() { c.Engine().Flush() }) // every key: it may take long
	c.OK()
}
