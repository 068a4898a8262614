package command

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/limitdb/limitdb/clock"

	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/resp"
	"github.com/limitdb/limitdb/scripting"
	"github.com/limitdb/limitdb/scripting/twins"
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
		return &Command{Name: name, Arity: -3, Flags: flags, Group: "scripting", Since: "0.1.0", Keys: evalKeys, KeyArgs: evalKeys,
			Complexity: "Depends on the script that is executed.", Summary: summary,
			Syntax:  map[bool]string{false: "script numkeys [key [key ...]] [arg [arg ...]]", true: "sha1 numkeys [key [key ...]] [arg [arg ...]]"}[bySHA],
			Handler: func(c *Client, args [][]byte) { cmdEval(c, args, bySHA, ro) }}
	}
	t.registerInfo("scripting", 75, infoScripting)
	t.Register(
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
					Summary: "Returns helpful text about the different subcommands.", Handler: HelpFor("script")},
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

func cmdEval(c *Client, args [][]byte, bySHA, ro bool) {
	s := c.srv
	n, err := ParseInt(args[2]) // string2ll, as Redis reads numkeys
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
	var native *twins.Twin
	if bySHA {
		if script, native = c.scriptBySHA(args[1]); script == nil {
			c.Err("NOSCRIPT No matching script. Please use EVAL.")
			return
		}
	} else if script, err = s.scripts.Load(args[1]); err != nil {
		c.Err("ERR " + err.Error())
		return
	} else {
		native = s.natives.Get(script.SHA)
	}
	keys, argv := args[3:3+n], args[3+n:]
	s.runScript(c, script, native, keys, argv, ro)
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
func (c *Client) scriptBySHA(sha []byte) (*scripting.Script, *twins.Twin) {
	last := &c.lastEval
	flushes := c.srv.scripts.Flushes()
	if last.script != nil && last.flushes == flushes && string(sha) == last.script.SHA {
		return last.script, last.native
	}
	script := c.srv.scripts.Get(sha)
	if script == nil {
		return nil, nil
	}
	*last = lastEval{script: script, native: c.srv.natives.Get(script.SHA), flushes: flushes}
	return script, last.native
}

// runScript runs script for c: natively when it is one of the library
// scripts limitdb knows (n, its twin), else on the interpreter.
func (s *Server) runScript(c *Client, script *scripting.Script, n *twins.Twin, keys, argv [][]byte, ro bool) {
	if n != nil && !ro && s.nativeAdmits(c) && n.Run((*twinHost)(c), c.w, keys, argv) {
		script.Runs.Add(1)
		c.failed = false
		c.bt.ranFast = !n.Loops // constant time: the batch's instant still holds
		return
	}
	s.runScriptWith(c, keys, ro, func(sc *scriptCaller) error {
		return s.runner.Run(script, keys, argv, sc, c.w, &sc.run.h)
	})
}

// runScriptWith runs a script or function for c, inside c's transaction
// when it has one (EVAL queued in MULTI), or in one holding the shards of
// keys.
func (s *Server) runScriptWith(c *Client, keys [][]byte, ro bool, run func(sc *scriptCaller) error) {
	sc := c.script // one per client, reused from run to run
	if sc == nil {
		sc = &scriptCaller{s: s, c: c, w: resp.NewWriter(nil)}
		c.script = sc
	}
	sc.ro, sc.outer = ro, c.w
	sc.run = s.busy.start(&sc.runState, c)
	defer s.busy.end(sc.run)
	var err error
	if c.tx != nil {
		err = run(sc)
	} else {
		s.eng.Exclusive(keys, false, func(tx *engine.Engine) {
			c.tx = tx
			defer func() { c.tx = nil }()
			err = run(sc)
		})
	}
	c.failed = err != nil
}

// scriptCaller runs a script's redis.call commands as c, with their
// replies captured instead of sent.
type scriptCaller struct {
	s        *Server
	c        *Client
	run      *scriptRun
	runState scriptRun // what run points to
	keys     [][]byte  // a command's keys, reused
	ro       bool
	outer    *resp.Writer // c's own writer, put back after each call
	w        *resp.Writer // the capture
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
	case notInScripts[parentName(cmd.Name)] || cmd.Flags&FlagNoMulti != 0:
		return fail("ERR This Redis command is not allowed from script")
	case sc.ro && cmd.Flags&FlagWrite != 0 && !isPeek(cmd, args):
		return fail("ERR Write commands are not allowed from read-only scripts.")
	}
	keys, all := appendCommandKeys(sc.keys[:0], cmd, args)
	sc.keys = keys[:0]
	if all {
		return fail("ERR limitdb runs '" + cmd.Name + "' in a script only on the keys the script declares: it needs the whole keyspace")
	}
	for _, k := range keys {
		if !c.tx.Holds(k) {
			return fail("ERR script tried accessing key '" + Clip(k) + "' that is not in its KEYS and lies in a shard the script does not hold: declare every key a script touches")
		}
	}
	if s.table.nGates > 0 {
		c.w = sc.w
		ok := s.table.admit(c, cmd, args)
		c.w = sc.outer
		if !ok {
			return sc.w.Bytes()
		}
	}
	if cmd.Flags&FlagWrite != 0 && !isPeek(cmd, args) {
		sc.run.wrote.Store(true)
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
		if c.srv.scripts.Get(sha) != nil {
			c.Int(1)
		} else {
			c.Int(0)
		}
	}
}

func cmdScriptFlush(c *Client, args [][]byte) {
	if len(args) == 3 && !EqualFold(args[2], "async") && !EqualFold(args[2], "sync") {
		c.Err("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
		return
	}
	c.srv.scripts.Flush()
	c.OK()
}

func cmdScriptKill(c *Client, _ [][]byte) {
	if err := c.srv.busy.kill(); err != nil {
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

func infoScripting(s *Server, _ *engine.Engine, b *strings.Builder) {
	infoLine(b, "number_of_cached_scripts", s.scripts.Len())
	infoLine(b, "number_of_libraries", len(s.functions.Libraries()))
	infoLine(b, "busy_scripts", s.busy.count.Load())
	s.natives.Each(func(sha string, n *twins.Twin) {
		infoLine(b, "native_"+n.Name, fmt.Sprintf("sha=%s,runs=%d", sha, n.Runs()))
	})
}

func registerFunctions(t *Table) {
	fcall := func(name, summary string, ro bool) *Command {
		var flags Flag
		if ro {
			flags |= FlagReadonly
		}
		return &Command{Name: name, Arity: -3, Flags: flags, Group: "scripting", Since: "0.1.0", Keys: evalKeys, KeyArgs: evalKeys,
			Complexity: "Depends on the function that is executed.", Summary: summary,
			Syntax:  "function numkeys [key [key ...]] [arg [arg ...]]",
			Handler: func(c *Client, args [][]byte) { cmdFCall(c, args, ro) }}
	}
	sub := func(name, syntax, summary string, arity int, h func(*Client, [][]byte)) *Command {
		return &Command{Name: "function|" + name, Arity: arity, Group: "scripting", Since: "0.1.0",
			Complexity: "O(N) where N is the number of functions", Summary: summary, Syntax: syntax, Handler: h}
	}
	t.Register(
		fcall("fcall", "Invokes a function.", false),
		fcall("fcall_ro", "Invokes a read-only function.", true),
		&Command{Name: "function", Arity: -2, Group: "scripting", Since: "0.1.0", Complexity: "Depends on subcommand.",
			Summary: "A container for function commands.",
			Subs: []*Command{
				sub("load", "[REPLACE] function-code", "Creates a library.", -3, cmdFunctionLoad),
				sub("delete", "library-name", "Deletes a library and its functions.", 3, cmdFunctionDelete),
				sub("list", "[LIBRARYNAME library-name-pattern] [WITHCODE]", "Returns information about all libraries.", -2, cmdFunctionList),
				sub("flush", "[ASYNC|SYNC]", "Deletes all libraries and functions.", -2, cmdFunctionFlush),
				sub("dump", "", "Dumps all libraries into a serialized binary payload.", 2, cmdFunctionDump),
				sub("restore", "serialized-value [FLUSH|APPEND|REPLACE]", "Restores all libraries from a payload.", -3, cmdFunctionRestore),
				sub("kill", "", "Terminates a function during execution.", 2, cmdScriptKill),
				sub("help", "", "Returns helpful text about the different subcommands.", 2, HelpFor("function")),
			}},
	)
}

func cmdFCall(c *Client, args [][]byte, ro bool) {
	s := c.srv
	n, err := ParseInt(args[2]) // string2ll, as Redis reads numkeys
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
	f := s.functions.Get(string(args[1]))
	if f == nil {
		c.Err("ERR Function not found")
		return
	}
	if ro && !f.NoWrites() {
		c.Err("ERR Can not execute a script with write flag using *_ro command.")
		return
	}
	keys, argv := args[3:3+n], args[3+n:]
	s.runScriptWith(c, keys, ro || f.NoWrites(), func(sc *scriptCaller) error {
		return s.runner.Call(s.functions, f, keys, argv, sc, c.w, &sc.run.h)
	})
}

// functionsChanged sends the libraries to replicas and the append-only
// file, as the "functions" section.
func (s *Server) functionsChanged() { s.replicateSection("functions", s.functions.Save) }

func cmdFunctionLoad(c *Client, args [][]byte) {
	replace := false
	code := args[2]
	if len(args) == 4 {
		if !EqualFold(args[2], "replace") {
			c.Err("ERR Unknown option given: " + string(args[2]))
			return
		}
		replace, code = true, args[3]
	} else if len(args) > 4 {
		c.Error(ErrSyntax)
		return
	}
	name, err := c.srv.functions.Load(string(code), replace)
	if err != nil {
		c.Err(err.Error())
		return
	}
	c.srv.functionsChanged()
	c.BulkString(name)
}

func cmdFunctionDelete(c *Client, args [][]byte) {
	if err := c.srv.functions.Delete(string(args[2])); err != nil {
		c.Err(err.Error())
		return
	}
	c.srv.functionsChanged()
	c.OK()
}

func cmdFunctionFlush(c *Client, args [][]byte) {
	if len(args) > 3 || (len(args) == 3 && !EqualFold(args[2], "async") && !EqualFold(args[2], "sync")) {
		c.Err("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
		return
	}
	c.srv.functions.Flush()
	c.srv.functionsChanged()
	c.OK()
}

func cmdFunctionList(c *Client, args [][]byte) {
	withCode, pattern := false, ""
	for i := 2; i < len(args); i++ {
		switch {
		case EqualFold(args[i], "withcode"):
			withCode = true
		case EqualFold(args[i], "libraryname") && i+1 < len(args):
			pattern = string(args[i+1])
			i++
		default:
			c.Err("ERR Unknown argument " + string(args[i]))
			return
		}
	}
	var libs []*scripting.Library
	for _, l := range c.srv.functions.Libraries() {
		if pattern == "" || GlobMatch(pattern, l.Name) {
			libs = append(libs, l)
		}
	}
	c.Array(len(libs))
	for _, l := range libs {
		n := 3
		if withCode {
			n = 4
		}
		c.w.Map(n)
		c.BulkString("library_name")
		c.BulkString(l.Name)
		c.BulkString("engine")
		c.BulkString("LUA")
		c.BulkString("functions")
		c.Array(len(l.Functions))
		for _, f := range l.Functions {
			c.w.Map(3)
			c.BulkString("name")
			c.BulkString(f.Name)
			c.BulkString("description")
			if f.Description == "" {
				c.w.Null()
			} else {
				c.BulkString(f.Description)
			}
			c.BulkString("flags")
			c.w.Set(len(f.Flags))
			for _, fl := range f.Flags {
				c.Simple(fl)
			}
		}
		if withCode {
			c.BulkString("library_code")
			c.BulkString(l.Code)
		}
	}
}

func cmdFunctionDump(c *Client, _ [][]byte) { c.Bulk(c.srv.functions.Dump()) }

func cmdFunctionRestore(c *Client, args [][]byte) {
	policy := "APPEND"
	if len(args) == 4 {
		policy = strings.ToUpper(string(args[3]))
		if policy != "FLUSH" && policy != "APPEND" && policy != "REPLACE" {
			c.Err("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
			return
		}
	} else if len(args) > 4 {
		c.Error(ErrSyntax)
		return
	}
	if err := c.srv.functions.Restore(args[2], policy); err != nil {
		c.Err(err.Error())
		return
	}
	c.srv.functionsChanged()
	c.OK()
}

// A script that runs past busy-reply-threshold makes the server busy, as
// in Redis: other clients get -BUSY, except for the commands that end it
// (SCRIPT KILL, FUNCTION KILL, SHUTDOWN) and a few connection commands,
// until it ends or SCRIPT KILL stops it (only a script that wrote
// nothing). A watchdog, ten times a second of the engine's clock, marks
// the runs past the threshold; the gate costs one atomic load while none
// is.

// scriptRun is one script or function running.
type scriptRun struct {
	h     scripting.Handle
	c     *Client
	start time.Duration // on the watchdog's clock
	wrote atomic.Bool
	busy  bool   // guarded by busyScripts.mu
	heap  uint64 // the heap's size when the watchdog first saw the run; guarded by busyScripts.mu
}

// busyScripts are the runs under way.
type busyScripts struct {
	clk   clock.Clock
	mu    sync.Mutex
	runs  map[*scriptRun]struct{}
	count atomic.Int32 // runs past the threshold
}

// start registers r, the caller's own (reused from run to run), as c's
// run from now.
func (b *busyScripts) start(r *scriptRun, c *Client) *scriptRun {
	r.c, r.start, r.busy, r.heap = c, b.clk.Mono(), false, 0
	r.wrote.Store(false)
	r.h.Reset()
	b.mu.Lock()
	b.runs[r] = struct{}{}
	b.mu.Unlock()
	c.inScript = true
	return r
}

func (b *busyScripts) end(r *scriptRun) {
	b.mu.Lock()
	delete(b.runs, r)
	if r.busy {
		b.count.Add(-1)
	}
	b.mu.Unlock()
	r.c.inScript = false
}

// watch marks the runs past threshold as busy.
func (b *busyScripts) watch(threshold time.Duration, logf func(string, ...any)) {
	now := b.clk.Mono()
	b.mu.Lock()
	defer b.mu.Unlock()
	for r := range b.runs {
		if !r.busy && threshold > 0 && now-r.start >= threshold {
			r.busy = true
			b.count.Add(1)
			logf("Slow script detected: still in execution after %d milliseconds. You can try killing the script using the SCRIPT KILL command.", (now-r.start)/time.Millisecond)
		}
	}
}

// watchMemory stops the runs under way while the heap has grown by more
// than limit (script-memory-limit; 0: none) since the watchdog first saw
// them, once a collection has shown that the growth is not garbage. A
// script that grows a string past the limit is stopped by the interpreter
// at once (scripting/memory.go); this catches growth by many values, within
// a tick of the watchdog. The heap is the server's: what other clients add
// while a long script runs counts too.
func (b *busyScripts) watchMemory(limit uint64, logf func(string, ...any)) {
	b.mu.Lock()
	running := len(b.runs) > 0
	b.mu.Unlock()
	if limit == 0 || !running { // no heap to read
		return
	}
	// over counts the runs over the limit, and stops them once collected.
	over := func(collected bool) (n int) {
		heap := heapBytes()
		b.mu.Lock()
		defer b.mu.Unlock()
		for r := range b.runs {
			switch {
			case r.heap == 0 && !collected:
				r.heap = heap
			case r.heap != 0 && heap > r.heap+limit:
				n++
				if collected {
					logf("Script stopped: the heap grew by more than script-memory-limit (%d bytes) while it ran.", limit)
					r.h.StopOverMemory()
				}
			}
		}
		return n
	}
	if over(false) > 0 {
		runtime.GC()
		over(true)
	}
}

// heapBytes is the size of the heap's objects, live or not yet collected.
func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// kill stops the busy runs (SCRIPT KILL), unless one of them wrote.
func (b *busyScripts) kill() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var busy []*scriptRun
	for r := range b.runs {
		if r.busy {
			busy = append(busy, r)
		}
	}
	if len(busy) == 0 {
		return WireError("NOTBUSY No scripts in execution right now.")
	}
	for _, r := range busy {
		if r.wrote.Load() {
			return WireError("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.")
		}
	}
	for _, r := range busy {
		r.h.Kill()
	}
	return nil
}

// killAll stops every run, written or not: the server is closing.
func (b *busyScripts) killAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for r := range b.runs {
		r.h.Kill()
	}
}

// WatchScripts runs the busy-script watchdog until the server closes.
func (s *Server) WatchScripts() {
	t := s.busy.clk.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C():
			cfg := s.Config()
			s.busy.watch(time.Duration(cfg.BusyReplyThreshold)*time.Millisecond, s.logger.Printf)
			s.busy.watchMemory(uint64(max(cfg.ScriptMemoryLimit, 0)), s.logger.Printf)
		}
	}
}

// busyGate answers -BUSY while a script is busy, to every client but the
// script's own and to all but the commands that end a busy script.
func busyGate(c *Client, cmd *Command) bool {
	if c.srv.busy.count.Load() == 0 || c.inScript {
		return true
	}
	switch cmd.Name {
	case "script|kill", "function|kill", "shutdown", "auth", "hello", "replconf", "psync", "sync":
		return true
	}
	c.Err("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.")
	return false
}
