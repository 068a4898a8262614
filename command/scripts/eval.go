package scripts

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/resp"
	"github.com/limitdb/limitdb/scripting"
	"github.com/limitdb/limitdb/scripting/twins"
)

func (f *Family) registerScripts(t *command.Table) {
	evalCmd := func(name, summary string, ro bool, bySHA bool) *command.Command {
		flags := command.FlagSkipMonitor
		if ro {
			flags |= command.FlagReadonly
		}
		cmd := &command.Command{Name: name, Arity: -3, Flags: flags, Group: "scripting", Since: "0.1.0", Keys: evalKeys, KeyArgs: evalKeys,
			Complexity: "Depends on the script that is executed.", Summary: summary,
			Syntax: map[bool]string{false: "script numkeys [key [key ...]] [arg [arg ...]]", true: "sha1 numkeys [key [key ...]] [arg [arg ...]]"}[bySHA]}
		cmd.Handler = func(c *command.Client, args [][]byte) {
			c.ShowToObserver(cmd, args) // before the script's commands, whatever becomes of it
			f.cmdEval(c, args, bySHA, ro)
		}
		return cmd
	}
	t.Register(
		evalCmd("eval", "Executes a server-side Lua script.", false, false),
		evalCmd("evalsha", "Executes a server-side Lua script by SHA1 digest.", false, true),
		evalCmd("eval_ro", "Executes a read-only server-side Lua script.", true, false),
		evalCmd("evalsha_ro", "Executes a read-only server-side Lua script by SHA1 digest.", true, true),
		&command.Command{Name: "script", Arity: -2, Group: "scripting", Since: "0.1.0", Complexity: "Depends on subcommand.", Summary: "A container for Lua scripts management commands.",
			Subs: []*command.Command{
				{Name: "script|load", Arity: 3, Group: "scripting", Since: "0.1.0",
					Complexity: "O(N) with N being the length in bytes of the script body.",
					Summary:    "Loads a server-side Lua script to the script cache.", Syntax: "script", Handler: f.cmdScriptLoad},
				{Name: "script|exists", Arity: -3, Group: "scripting", Since: "0.1.0", Complexity: "O(N) with N being the number of scripts to check",
					Summary: "Determines whether server-side Lua scripts exist in the script cache.", Syntax: "sha1 [sha1 ...]", Handler: f.cmdScriptExists},
				{Name: "script|flush", Arity: -2, MaxArgs: 3, Group: "scripting", Since: "0.1.0", Complexity: "O(N) with N being the number of scripts in cache",
					Summary: "Removes all server-side Lua scripts from the script cache.", Syntax: "[ASYNC|SYNC]", Handler: f.cmdScriptFlush},
				{Name: "script|kill", Arity: 2, Group: "scripting", Since: "0.1.0", Complexity: "O(1)",
					Summary: "Terminates a server-side Lua script during execution.", Handler: f.cmdScriptKill},
				{Name: "script|help", Arity: 2, Group: "scripting", Since: "0.1.0", Complexity: "O(1)",
					Summary: "Returns helpful text about the different subcommands.", Handler: command.HelpFor("script")},
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

// parentName is a subcommand's container ("script|kill": "script").
func parentName(name string) string {
	if i := strings.IndexByte(name, '|'); i >= 0 {
		return name[:i]
	}
	return name
}

// numKeys reads a script's numkeys (string2ll, as Redis reads it) and
// answers the errors Redis does; false when it has answered.
func numKeys(c *command.Client, args [][]byte) (int64, bool) {
	n, err := command.ParseInt(args[2])
	switch {
	case err != nil:
		c.Err("ERR value is not an integer or out of range")
		return 0, false
	case n > int64(len(args)-3):
		c.Err("ERR Number of keys can't be greater than number of args")
		return 0, false
	case n < 0:
		c.Err("ERR Number of keys can't be negative")
		return 0, false
	}
	return n, true
}

func (f *Family) cmdEval(c *command.Client, args [][]byte, bySHA, ro bool) {
	n, ok := numKeys(c, args)
	if !ok {
		return
	}
	st := f.client(c)
	var script *scripting.Script
	var native *twins.Twin
	if bySHA {
		if script, native = f.scriptBySHA(st, args[1]); script == nil {
			c.Err("NOSCRIPT No matching script. Please use EVAL.")
			return
		}
	} else {
		var err error
		if script, err = f.scripts.Load(args[1]); err != nil {
			c.Err("ERR " + err.Error())
			return
		}
		native = f.natives.Get(script.SHA)
	}
	keys, argv := args[3:3+n], args[3+n:]
	f.runScript(st, script, native, keys, argv, ro)
}

// lastEval is the script a client's last EVALSHA found, with its native
// twin, and the script cache's Flushes count before the lookup.
type lastEval struct {
	script  *scripting.Script
	native  *twins.Twin // nil: none
	flushes uint64
}

// scriptBySHA is the script EVALSHA names and its native twin (nil if
// none), or nil. A pipeline names the same script again and again: the
// client keeps the last one it found, and uses it again for the same name
// until the cache is flushed, without the cache's lock and two lookups.
func (f *Family) scriptBySHA(st *clientState, sha []byte) (*scripting.Script, *twins.Twin) {
	last := &st.lastEval
	flushes := f.scripts.Flushes()
	if last.script != nil && last.flushes == flushes && string(sha) == last.script.SHA {
		return last.script, last.native
	}
	script := f.scripts.Get(sha)
	if script == nil {
		return nil, nil
	}
	*last = lastEval{script: script, native: f.natives.Get(script.SHA), flushes: flushes}
	return script, last.native
}

// runScript runs script for the client of st: natively when it is one of
// the library scripts limitdb knows (n, its twin), else on the
// interpreter, which MONITOR sees call its commands.
func (f *Family) runScript(st *clientState, script *scripting.Script, n *twins.Twin, keys, argv [][]byte, ro bool) {
	c := st.caller.c
	if n != nil && !ro && !c.Observed() && c.WritesUnchecked() && n.Run(&st.host, c.Writer(), keys, argv) {
		script.Runs.Add(1)
		c.SetFailed(false)
		if !n.Loops {
			c.KeepInstant() // constant time: the batch's instant still holds
		}
		return
	}
	f.runScriptWith(st, keys, ro, false, func(sc *caller) error {
		return f.runner.Run(script, keys, argv, sc, c.Writer(), &sc.run.h)
	})
}

// runScriptWith runs a script or function for the client of st, inside
// its transaction when it has one (EVAL queued in MULTI), or in one
// holding the shards of keys. It may run long: the connections that share
// the client's event loop are served meanwhile (RunLong), waiting for the
// script's shards included.
func (f *Family) runScriptWith(st *clientState, keys [][]byte, ro, function bool, run func(sc *caller) error) {
	sc, c := st.caller, st.caller.c
	sc.ro = ro
	var err error
	c.RunLong(func() {
		sc.run = f.busy.start(&sc.runState, c, function)
		defer f.busy.end(sc.run)
		c.Exclusive(keys, func(*engine.Engine) { err = run(sc) })
	})
	c.SetFailed(err != nil)
}

// caller runs a script's redis.call commands as c, with their replies
// captured instead of sent (scripting.Caller).
type caller struct {
	f        *Family
	c        *command.Client
	run      *scriptRun
	runState scriptRun // what run points to
	keys     [][]byte  // a command's keys, reused
	ro       bool
	w        *resp.Writer // the capture
}

func (sc *caller) Call(args [][]byte, proto int) []byte {
	c := sc.c
	sc.w.Reset()
	sc.w.Proto = proto
	cmd := sc.f.table.Resolve(args)
	fail := func(msg string) []byte {
		sc.w.Error(msg)
		return sc.w.Bytes()
	}
	switch {
	case cmd == nil:
		return fail("ERR Unknown Redis command called from script")
	case !cmd.Runnable(len(args)):
		return fail("ERR Wrong number of args calling Redis command from script")
	case notInScripts[parentName(cmd.Name)] || cmd.Flags&(command.FlagNoMulti|command.FlagNoScript) != 0:
		return fail("ERR This Redis command is not allowed from script")
	case sc.ro && cmd.Flags&command.FlagWrite != 0 && !cmd.Peeks(args):
		return fail("ERR Write commands are not allowed from read-only scripts.")
	}
	keys, all := cmd.AppendKeys(sc.keys[:0], args)
	sc.keys = keys[:0]
	if all {
		return fail("ERR limitdb runs '" + cmd.Name + "' in a script only on the keys the script declares: it needs the whole keyspace")
	}
	tx := c.Engine()
	for _, k := range keys {
		if !tx.Holds(k) {
			return fail("ERR script tried accessing key '" + command.Clip(k) + "' that is not in its KEYS and lies in a shard the script does not hold: declare every key a script touches")
		}
	}
	if !c.Admit(sc.w, cmd, args) {
		return sc.w.Bytes()
	}
	if cmd.Flags&command.FlagWrite != 0 && !cmd.Peeks(args) {
		sc.run.wrote.Store(true)
	}
	c.Call(sc.w, cmd, args)
	return sc.w.Bytes()
}

func (f *Family) cmdScriptLoad(c *command.Client, args [][]byte) {
	script, err := f.scripts.Load(args[2])
	if err != nil {
		c.Err("ERR " + err.Error())
		return
	}
	c.BulkString(script.SHA)
}

func (f *Family) cmdScriptExists(c *command.Client, args [][]byte) {
	c.Array(len(args) - 2)
	for _, sha := range args[2:] {
		if f.scripts.Get(sha) != nil {
			c.Int(1)
		} else {
			c.Int(0)
		}
	}
}

func (f *Family) cmdScriptFlush(c *command.Client, args [][]byte) {
	if len(args) == 3 && !command.EqualFold(args[2], "async") && !command.EqualFold(args[2], "sync") {
		c.Err("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
		return
	}
	f.scripts.Flush()
	c.OK()
}

// cmdScriptKill is SCRIPT KILL and FUNCTION KILL. It may wait for a run
// to become busy: meanwhile the connections that share the client's event
// loop are served (RunLong).
func (f *Family) cmdScriptKill(c *command.Client, args [][]byte) {
	threshold := time.Duration(f.env.Config().BusyReplyThreshold) * time.Millisecond
	var err error
	c.RunLong(func() { err = f.busy.kill(command.EqualFold(args[0], "function"), threshold) })
	if err != nil {
		c.Error(err)
		return
	}
	c.OK()
}

// evalKeys are the keys a script declares: EVAL script numkeys key ...
func evalKeys(args [][]byte) [][]byte {
	n, err := strconv.Atoi(string(args[2]))
	if err != nil || n < 0 || n > len(args)-3 {
		return nil
	}
	return args[3 : 3+n]
}

func (f *Family) infoScripting(_ *engine.Engine, b *strings.Builder) {
	command.InfoLine(b, "number_of_cached_scripts", f.scripts.Len())
	command.InfoLine(b, "number_of_libraries", len(f.functions.Libraries()))
	command.InfoLine(b, "busy_scripts", f.busy.count.Load())
	f.natives.Each(func(sha string, n *twins.Twin) {
		command.InfoLine(b, "native_"+n.Name, fmt.Sprintf("sha=%s,runs=%d", sha, n.Runs()))
	})
}
