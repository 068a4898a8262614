package scripts

import (
	"strings"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/scripting"
)

func (f *Family) registerFunctions(t *command.Table) {
	fcall := func(name, summary string, ro bool) *command.Command {
		flags := command.FlagSkipMonitor
		if ro {
			flags |= command.FlagReadonly
		}
		cmd := &command.Command{Name: name, Arity: -3, Flags: flags, Group: "scripting", Since: "0.1.0", Keys: evalKeys, KeyArgs: evalKeys,
			Complexity: "Depends on the function that is executed.", Summary: summary,
			Syntax: "function numkeys [key [key ...]] [arg [arg ...]]"}
		cmd.Handler = func(c *command.Client, args [][]byte) {
			c.ShowToObserver(cmd, args) // before the function's commands, whatever becomes of it
			f.cmdFCall(c, args, ro)
		}
		return cmd
	}
	sub := func(name, syntax, summary string, arity int, h func(*command.Client, [][]byte)) *command.Command {
		return &command.Command{Name: "function|" + name, Arity: arity, Group: "scripting", Since: "0.1.0",
			Complexity: "O(N) where N is the number of functions", Summary: summary, Syntax: syntax, Handler: h}
	}
	// writes marks a subcommand that changes the libraries a write, as
	// Redis does (a read-only replica refuses it); denyOOM: over
	// maxmemory too.
	writes := func(c *command.Command, denyOOM bool) *command.Command {
		c.Flags |= command.FlagWrite
		if denyOOM {
			c.Flags |= command.FlagDenyOOM
		}
		return c
	}
	t.Register(
		fcall("fcall", "Invokes a function.", false),
		fcall("fcall_ro", "Invokes a read-only function.", true),
		&command.Command{Name: "function", Arity: -2, Group: "scripting", Since: "0.1.0", Complexity: "Depends on subcommand.",
			Summary: "A container for function commands.",
			Subs: []*command.Command{
				writes(sub("load", "[REPLACE] function-code", "Creates a library.", -3, f.cmdFunctionLoad), true),
				writes(sub("delete", "library-name", "Deletes a library and its functions.", 3, f.cmdFunctionDelete), false),
				sub("list", "[LIBRARYNAME library-name-pattern] [WITHCODE]", "Returns information about all libraries.", -2, f.cmdFunctionList),
				writes(sub("flush", "[ASYNC|SYNC]", "Deletes all libraries and functions.", -2, f.cmdFunctionFlush), false),
				sub("dump", "", "Dumps all libraries into a serialized binary payload.", 2, f.cmdFunctionDump),
				writes(sub("restore", "serialized-value [FLUSH|APPEND|REPLACE]", "Restores all libraries from a payload.", -3, f.cmdFunctionRestore), true),
				sub("kill", "", "Terminates a function during execution.", 2, f.cmdScriptKill),
				sub("help", "", "Returns helpful text about the different subcommands.", 2, command.HelpFor("function")),
			}},
	)
}

func (f *Family) cmdFCall(c *command.Client, args [][]byte, ro bool) {
	n, ok := numKeys(c, args)
	if !ok {
		return
	}
	fn := f.functions.Get(string(args[1]))
	if fn == nil {
		c.Err("ERR Function not found")
		return
	}
	if ro && !fn.NoWrites() {
		c.Err("ERR Can not execute a script with write flag using *_ro command.")
		return
	}
	keys, argv := args[3:3+n], args[3+n:]
	f.runScriptWith(f.client(c), keys, ro || fn.NoWrites(), true, func(sc *caller) error {
		return f.runner.Call(f.functions, fn, keys, argv, sc, c.Writer(), &sc.run.h)
	})
}

// functionsChanged sends the libraries to replicas and the append-only
// file, as the "functions" section.
func (f *Family) functionsChanged() { f.env.ReplicateSection("functions", f.functions.Save) }

func (f *Family) cmdFunctionLoad(c *command.Client, args [][]byte) {
	replace := false
	code := args[2]
	if len(args) == 4 {
		if !command.EqualFold(args[2], "replace") {
			c.Err("ERR Unknown option given: " + string(args[2]))
			return
		}
		replace, code = true, args[3]
	} else if len(args) > 4 {
		c.Error(command.ErrSyntax)
		return
	}
	name, err := f.functions.Load(string(code), replace)
	if err != nil {
		c.Err(err.Error())
		return
	}
	f.functionsChanged()
	c.BulkString(name)
}

func (f *Family) cmdFunctionDelete(c *command.Client, args [][]byte) {
	if err := f.functions.Delete(string(args[2])); err != nil {
		c.Err(err.Error())
		return
	}
	f.functionsChanged()
	c.OK()
}

func (f *Family) cmdFunctionFlush(c *command.Client, args [][]byte) {
	if len(args) > 3 || (len(args) == 3 && !command.EqualFold(args[2], "async") && !command.EqualFold(args[2], "sync")) {
		c.Err("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
		return
	}
	f.functions.Flush()
	f.functionsChanged()
	c.OK()
}

func (f *Family) cmdFunctionList(c *command.Client, args [][]byte) {
	withCode, pattern := false, ""
	for i := 2; i < len(args); i++ {
		switch {
		case command.EqualFold(args[i], "withcode"):
			withCode = true
		case command.EqualFold(args[i], "libraryname") && i+1 < len(args):
			pattern = string(args[i+1])
			i++
		default:
			c.Err("ERR Unknown argument " + string(args[i]))
			return
		}
	}
	var libs []*scripting.Library
	for _, l := range f.functions.Libraries() {
		if pattern == "" || command.GlobMatch(pattern, l.Name) {
			libs = append(libs, l)
		}
	}
	c.Array(len(libs))
	for _, l := range libs {
		n := 3
		if withCode {
			n = 4
		}
		c.Map(n)
		c.BulkString("library_name")
		c.BulkString(l.Name)
		c.BulkString("engine")
		c.BulkString("LUA")
		c.BulkString("functions")
		c.Array(len(l.Functions))
		for _, fn := range l.Functions {
			c.Map(3)
			c.BulkString("name")
			c.BulkString(fn.Name)
			c.BulkString("description")
			if fn.Description == "" {
				c.Null()
			} else {
				c.BulkString(fn.Description)
			}
			c.BulkString("flags")
			c.Set(len(fn.Flags))
			for _, fl := range fn.Flags {
				c.Simple(fl)
			}
		}
		if withCode {
			c.BulkString("library_code")
			c.BulkString(l.Code)
		}
	}
}

func (f *Family) cmdFunctionDump(c *command.Client, _ [][]byte) { c.Bulk(f.functions.Dump()) }

func (f *Family) cmdFunctionRestore(c *command.Client, args [][]byte) {
	policy := "APPEND"
	if len(args) == 4 {
		policy = strings.ToUpper(string(args[3]))
		if policy != "FLUSH" && policy != "APPEND" && policy != "REPLACE" {
			c.Err("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
			return
		}
	} else if len(args) > 4 {
		c.Error(command.ErrSyntax)
		return
	}
	if err := f.functions.Restore(args[2], policy); err != nil {
		c.Err(err.Error())
		return
	}
	f.functionsChanged()
	c.OK()
}
