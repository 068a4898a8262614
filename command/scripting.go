package command

import (
	"strconv"
	"strings"

	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/resp"
	"github.com/limitdb/limitdb/scripting"
)

// Scripts (EVAL, EVALSHA and their _RO forms, SCRIPT) run on the
// scripting package's interpreters. A script is atomic as a MULTI/EXEC
// transaction is: the shards of the keys it declares are locked for its
// whole run, its redis.call commands run inside that transaction, and
// its writes reach replicas and the append-only file as one unit. A
// command that touches a key in a shard the script does not hold (a key
// it did not declare) is refused, as is a command that needs the whole
// keyspace (KEYS, SCAN, FLUSHALL): either would have to lock more shards
// in the middle of the run. Commands Redis refuses in scripts are refused.

func registerScripting(t *Table) {
	evalCmd := func(name, summary string, ro bool, bySHA bool) *Command {
		var flags Flag
		if ro {
			flags |= FlagReadonly
		}
		return &Command{Name: name, Arity: -3, Flags: flags, Group: "scripting", Since: "0.1.0", Keys: evalKeys,
			Complexity: "Depends on the script that is executed.", Summary: summary,
			Syntax:  map[bool]string{false: "script numkeys [key [key ...]] [arg [arg ...]]", true: "sha1 numkeys [key [key ...]] [arg [arg ...]]"}[bySHA],
			Handler: func(c *Client, args [][]byte) { cmdEval(c, args, bySHA, ro) }}
	}
	t.register(
		evalCmd("eval", "Executes a server-side Lua script.", false, false),
		evalCmd("evalsha", "Executes a server-side Lua script by SHA1 digest.", false, true),
		evalCmd("eval_ro", "Executes a read-only server-side Lua script.", true, false),
		evalCmd("evalsha_ro", "Executes a read-only server-side Lua script by SHA1 digest.", true, true),
		&Command{Name: "script", Arity: -2, Group: "scripting", Since: "0.1.0", Complexity: "Depends on subcommand.", Summary: "A container for Lua scripts management commands.",
			Subs: []*Command{
				{Name: "script|load", Arity: 3, Group: "scripting", Since: "0.1.0",
					Complexity: "O(N) with N being the length in bytes of the script body.",
					Summary:    "Loads a server-side Lua script to the script cache.", Syntax: "script", Handler: cmdScriptLoad},
				{Name: "script|exists", Arity: -3, Group: "scripting", Since: "0.1.0", Complexity: "O(N) with N being the number of scripts to check",
					Summary: "Determines whether server-side Lua scripts exist in the script cache.", Syntax: "sha1 [sha1 ...]", Handler: cmdScriptExists},
				{Name: "script|flush", Arity: -2, MaxArgs: 3, Group: "scripting", Since: "0.1.0", Complexity: "O(N) with N being the number of scripts in cache",
					Summary: "Removes all server-side Lua scripts from the script cache.", Syntax: "[ASYNC|SYNC]", Handler: cmdScriptFlush},
				{Name: "script|kill", Arity: 2, Group: "scripting", Since: "0.1.0", Complexity: "O(1)",
					Summary: "Terminates a server-side Lua script during execution.", Handler: cmdScriptKill},
				{Name: "script|help", Arity: 2, Group: "scripting", Since: "0.1.0", Complexity: "O(1)",
					Summary: "Returns helpful text about the different subcommands.", Handler: helpFor("script")},
			}},
	)
}

// notInScripts are the commands Redis refuses inside a script
// ("This Redis command is not allowed from script").
var notInScripts = map[string]bool{
	"eval": true, "evalsha": true, "eval_ro": true, "evalsha_ro": true, "script": true, "fcall": true, "fcall_ro": true,
	"function": true, "multi": true, "exec": true, "discard": true, "watch": true, "unwatch": true,
	"subscribe": true, "psubscribe": true, "unsubscribe": true, "punsubscribe": true, "monitor": true,
	"sync": true, "psync": true, "replconf": true, "wait": true, "save": true, "bgsave": true, "bgrewriteaof": true,
	"shutdown": true, "auth": true, "hello": true, "reset": true, "quit": true, "replicaof": true, "slaveof": true,
	"client": true, "config": true, "debug": true, "acl": true,
}

func cmdEval(c *Client, args [][]byte, bySHA, ro bool) {
	s := c.srv
	n, err := strconv.ParseInt(string(args[2]), 10, 64)
	switch {
	case err != nil:
		c.Err("ERR value is not an integer or out of range")
		return
	case n > int64(len(args)-3):
		c.Err("ERR Number of keys can't be greater than number of args")
		return
	case n < 0:
		c.Err("ERR Number of keys can't be negative")
		return
	}
	var script *scripting.Script
	if bySHA {
		if script = s.scripts.Get(string(args[1])); script == nil {
			c.Err("NOSCRIPT No matching script. Please use EVAL.")
			return
		}
	} else if script, err = s.scripts.Load(args[1]); err != nil {
		c.Err("ERR " + err.Error())
		return
	}
	keys, argv := args[3:3+n], args[3+n:]
	s.runScript(c, script, keys, argv, ro)
}

// runScript runs script for c, inside c's transaction when it has one
// (EVAL queued in MULTI), or in one holding the shards of keys.
func (s *Server) runScript(c *Client, script *scripting.Script, keys, argv [][]byte, ro bool) {
	sc := &scriptCaller{s: s, c: c, ro: ro, outer: c.w}
	sc.w = resp.NewWriter(nil)
	var err error
	if c.tx != nil {
		err = s.runner.Run(script, keys, argv, sc, c.w, nil)
	} else {
		s.eng.Exclusive(keys, false, func(tx *engine.Engine) {
			c.tx = tx
			defer func() { c.tx = nil }()
			err = s.runner.Run(script, keys, argv, sc, c.w, nil)
		})
	}
	c.failed = err != nil
}

// scriptCaller runs a script's redis.call commands as c, with their
// replies captured instead of sent.
type scriptCaller struct {
	s     *Server
	c     *Client
	ro    bool
	outer *resp.Writer // c's own writer, put back after each call
	w     *resp.Writer // the capture
}

func (sc *scriptCaller) Call(args [][]byte, proto int) []byte {
	s, c := sc.s, sc.c
	sc.w.Reset()
	sc.w.Proto = proto
	cmd := s.table.Lookup(args[0])
	if cmd != nil && len(cmd.Subs) > 0 && len(args) >= 2 {
		if sub := cmd.sub(args[1]); sub != nil {
			cmd = sub
		}
	}
	fail := func(msg string) []byte {
		sc.w.Error(msg)
		return sc.w.Bytes()
	}
	switch {
	case cmd == nil:
		return fail("ERR Unknown Redis command called from script")
	case !cmd.arityOK(len(args)) || cmd.Handler == nil:
		return fail("ERR Wrong number of args calling Redis command from script")
	case notInScripts[strings.SplitN(cmd.Name, "|", 2)[0]] || cmd.Flags&FlagNoMulti != 0:
		return fail("ERR This Redis command is not allowed from script")
	case sc.ro && cmd.Flags&FlagWrite != 0 && !isPeek(cmd, args):
		return fail("ERR Write commands are not allowed from read-only scripts.")
	}
	keys, all := commandKeys(cmd, args)
	if all {
		return fail("ERR limitdb runs '" + cmd.Name + "' in a script only on the keys the script declares: it needs the whole keyspace")
	}
	for _, k := range keys {
		if !c.tx.Holds(k) {
			return fail("ERR script tried accessing key '" + clip(k) + "' that is not in its KEYS and lies in a shard the script does not hold: declare every key a script touches")
		}
	}
	if len(s.table.gates) > 0 {
		c.w = sc.w
		ok := s.table.admit(c, cmd, args)
		c.w = sc.outer
		if !ok {
			return sc.w.Bytes()
		}
	}
	c.w = sc.w
	s.call(c, cmd, args)
	c.w = sc.outer
	return sc.w.Bytes()
}

func cmdScriptLoad(c *Client, args [][]byte) {
	script, err := c.srv.scripts.Load(args[2])
	if err != nil {
		c.Err("ERR " + err.Error())
		return
	}
	c.BulkString(script.SHA)
}

func cmdScriptExists(c *Client, args [][]byte) {
	c.Array(len(args) - 2)
	for _, sha := range args[2:] {
		if c.srv.scripts.Get(string(sha)) != nil {
			c.Int(1)
		} else {
			c.Int(0)
		}
	}
}

func cmdScriptFlush(c *Client, args [][]byte) {
	if len(args) == 3 && !equalFold(args[2], "async") && !equalFold(args[2], "sync") {
		c.Err("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
		return
	}
	c.srv.scripts.Flush()
	c.OK()
}

func cmdScriptKill(c *Client, _ [][]byte) {
	c.Err("NOTBUSY No scripts in execution right now.")
}

// evalKeys are the keys a script declares: EVAL script numkeys key ...
func evalKeys(args [][]byte) [][]byte {
	n, err := strconv.Atoi(string(args[2]))
	if err != nil || n < 0 || n > len(args)-3 {
		return nil
	}
	return args[3 : 3+n]
}
