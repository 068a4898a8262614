// Package scripts is the family of script commands: EVAL, EVALSHA and
// their _RO forms, SCRIPT, FUNCTION and FCALL, with INFO scripting. It owns
// the script cache, the functions' libraries (kept in snapshots as the
// "functions" section), the interpreter that runs both (scripting), the
// native twins of library scripts (scripting/twins) and the registry of
// runs under way, whose watchdog makes the server busy past
// busy-reply-threshold.
//
// A script is atomic as a MULTI/EXEC transaction is: the shards of the keys
// it declares are locked for its whole run (command.Client.Exclusive), its
// redis.call commands pass the gates and run inside that transaction
// (command.Client.Admit and Call), and its writes reach replicas and the
// append-only file as one unit. A command that touches a key in a shard
// the script does not hold (a key it did not declare) is refused, as is a
// command that needs the whole keyspace (KEYS, SCAN, FLUSHALL): either
// would have to lock more shards in the middle of the run. Commands Redis
// refuses in scripts are refused.
//
// It imports the command core, the engine and the scripting packages;
// never another family, the transport or the assembly.
package scripts

import (
	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/resp"
	"github.com/limitdb/limitdb/scripting"
	"github.com/limitdb/limitdb/scripting/twins"
)

// Family is the script commands and the scripts, libraries and runs they
// keep.
type Family struct {
	env       command.Env
	table     *command.Table
	slot      command.Slot         // each client's clientState
	scripts   *scripting.Cache     // EVAL's scripts by SHA1
	functions *scripting.Functions // FUNCTION's libraries, kept in snapshots
	natives   *twins.Registry      // library scripts run without Lua, by SHA1
	runner    *scripting.Runner
	busy      *busyScripts // runs under way, -BUSY past busy-reply-threshold
}

// New returns the family with no scripts or libraries yet.
func New() *Family {
	return &Family{
		scripts:   scripting.NewCache(),
		functions: scripting.NewFunctions(command.RedisVersion),
		natives:   twins.New(),
		busy:      newBusyScripts(),
	}
}

// Register adds the family's commands, INFO scripting, the "functions"
// snapshot section and the busy check to t; Close of the command layer
// stops every run.
func (f *Family) Register(t *command.Table, env command.Env) {
	f.env, f.table = env, t
	f.busy.clk = env.Clock
	f.slot = t.NewSlot()
	f.runner = scripting.NewRunner(scripting.Options{RedisVersion: command.RedisVersion, Log: func(level int, msg string) {
		if level >= scripting.LogNotice {
			env.Logger.Printf("script: %s", msg)
		}
	}, MemoryLimit: func() int64 { return env.Config().ScriptMemoryLimit }})
	f.registerScripts(t)
	f.registerFunctions(t)
	t.AddInfo("scripting", 75, f.infoScripting)
	t.AddSection("functions", f.functions.Save, f.functions.LoadSection)
	t.SetBusyCheck(&f.busy.count, f.busyCheck)
	t.OnClose(f.busy.killAll)
}

// clientState is what the family keeps of one client, made at its first
// script.
type clientState struct {
	caller   *caller  // its scripts' caller, reused from run to run
	host     twinHost // what its scripts' native twins run on
	lastEval lastEval // the script of the last EVALSHA (scriptBySHA)
}

func (f *Family) client(c *command.Client) *clientState {
	if st, ok := c.Slot(f.slot).(*clientState); ok {
		return st
	}
	st := &clientState{host: twinHost{c: c, publish: f.env.Publish}}
	st.caller = &caller{f: f, c: c, w: resp.NewWriter(nil)}
	c.SetSlot(f.slot, st)
	return st
}
