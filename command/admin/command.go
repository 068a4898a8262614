package admin

import (
	"strings"

	"github.com/limitdb/limitdb/command"
)

func (f *Family) registerCommand(t *command.Table) {
	connection := []string{"connection"} // COMMAND's ACL category in Redis, subcommands included
	t.Register(&command.Command{Name: "command", Arity: -1, Flags: command.FlagLoading | command.FlagStale, Group: "server", Since: "0.1.0", ACLCats: []string{"connection"},
		Complexity: "O(N) where N is the number of commands", Summary: "Describes the commands the server answers.",
		Syntax: "[subcommand]", Handler: f.cmdCommand,
		Subs: []*command.Command{
			{Name: "command|count", Arity: 2, Flags: command.FlagLoading | command.FlagStale, Group: "server", Since: "0.1.0", ACLCats: connection,
				Complexity: "O(1)", Summary: "Counts the commands.", Handler: f.cmdCommandCount},
			{Name: "command|info", Arity: -2, Flags: command.FlagLoading | command.FlagStale, Group: "server", Since: "0.1.0", ACLCats: connection,
				Complexity: "O(N) where N is the number of commands asked for", Summary: "Describes the named commands.",
				Syntax: "[command-name [command-name ...]]", Handler: f.cmdCommandInfo},
			{Name: "command|docs", Arity: -2, Flags: command.FlagLoading | command.FlagStale, Group: "server", Since: "0.1.0", ACLCats: connection,
				Complexity: "O(N) where N is the number of commands asked for", Summary: "Documents the named commands, or all of them.",
				Syntax: "[command-name [command-name ...]]", Handler: f.cmdCommandDocs},
			{Name: "command|list", Arity: -2, Flags: command.FlagLoading | command.FlagStale, Group: "server", Since: "0.1.0", ACLCats: connection,
				Complexity: "O(N) where N is the number of commands", Summary: "Lists the command names.",
				Syntax: "[FILTERBY MODULE module-name|ACLCAT category|PATTERN pattern]", Handler: f.cmdCommandList},
			{Name: "command|getkeys", Arity: -4, Flags: command.FlagLoading | command.FlagStale, Group: "server", Since: "0.1.0", ACLCats: connection,
				Complexity: "O(N) where N is the number of arguments to the command", Summary: "Extracts the key names from an arbitrary command.",
				Syntax: "command [arg [arg ...]]", Handler: f.cmdCommandGetKeys},
			{Name: "command|help", Arity: 2, Flags: command.FlagLoading | command.FlagStale, Group: "server", Since: "0.1.0", ACLCats: connection,
				Complexity: "O(1)", Summary: "Lists the COMMAND subcommands.", Handler: command.HelpFor("command")},
		}})
}

func (f *Family) cmdCommand(c *command.Client, args [][]byte) {
	if len(args) > 1 {
		c.Errf("unknown subcommand '%s'. Try COMMAND HELP.", command.Clip(args[1]))
		return
	}
	cmds := f.table.Sorted()
	c.Array(len(cmds))
	for _, cmd := range cmds {
		writeCommandInfo(c, cmd)
	}
}

func (f *Family) cmdCommandCount(c *command.Client, _ [][]byte) { c.Int(int64(f.table.Len())) }

func (f *Family) cmdCommandInfo(c *command.Client, args [][]byte) {
	if len(args) == 2 {
		f.cmdCommand(c, args[:1])
		return
	}
	c.Array(len(args) - 2)
	for _, name := range args[2:] {
		if cmd := f.table.Find(string(name)); cmd != nil {
			writeCommandInfo(c, cmd)
		} else {
			c.NullArray()
		}
	}
}

func writeCommandInfo(c *command.Client, cmd *command.Command) {
	c.Array(10)
	c.BulkString(cmd.Name)
	c.Int(int64(cmd.Arity))
	flags := cmd.FlagNames()
	c.Set(len(flags))
	for _, f := range flags {
		c.Simple(f)
	}
	c.Int(int64(cmd.FirstKey))
	c.Int(int64(cmd.LastKey))
	c.Int(int64(cmd.Step))
	cats := cmd.Categories()
	c.Set(len(cats))
	for _, cat := range cats {
		c.Simple(cat)
	}
	c.Set(0) // tips
	c.Array(0)
	c.Array(len(cmd.Subs))
	for _, s := range cmd.Subs {
		writeCommandInfo(c, s)
	}
}

func (f *Family) cmdCommandDocs(c *command.Client, args [][]byte) {
	var cmds []*command.Command
	if len(args) == 2 {
		cmds = f.table.Sorted()
	} else {
		for _, name := range args[2:] {
			if cmd := f.table.Find(string(name)); cmd != nil {
				cmds = append(cmds, cmd)
			}
		}
	}
	c.Map(len(cmds))
	for _, cmd := range cmds {
		c.BulkString(cmd.Name)
		writeCommandDocs(c, cmd)
	}
}

func writeCommandDocs(c *command.Client, cmd *command.Command) {
	args := cmd.Args()
	n := 4
	if len(args) > 0 {
		n++
	}
	if len(cmd.Subs) > 0 {
		n++
	}
	c.Map(n)
	c.BulkString("summary")
	c.BulkString(cmd.Summary)
	c.BulkString("since")
	c.BulkString(cmd.Since)
	c.BulkString("group")
	c.BulkString(cmd.Group)
	c.BulkString("complexity")
	c.BulkString(cmd.Complexity)
	if len(args) > 0 {
		c.BulkString("arguments")
		writeDocArgs(c, args)
	}
	if len(cmd.Subs) > 0 {
		c.BulkString("subcommands")
		c.Map(len(cmd.Subs))
		for _, s := range cmd.Subs {
			c.BulkString(s.Name)
			writeCommandDocs(c, s)
		}
	}
}

func writeDocArgs(c *command.Client, args []command.Arg) {
	c.Array(len(args))
	for _, a := range args {
		var flags []string
		if a.Optional {
			flags = append(flags, "optional")
		}
		if a.Multiple {
			flags = append(flags, "multiple")
		}
		n := 2
		if a.Type == "key" {
			n++
		}
		if a.Token != "" {
			n++
		}
		if len(flags) > 0 {
			n++
		}
		if len(a.Args) > 0 {
			n++
		}
		c.Map(n)
		c.BulkString("name")
		c.BulkString(a.Name)
		c.BulkString("type")
		c.BulkString(a.Type)
		if a.Type == "key" {
			c.BulkString("key_spec_index")
			c.Int(0)
		}
		if a.Token != "" {
			c.BulkString("token")
			c.BulkString(a.Token)
		}
		if len(flags) > 0 {
			c.BulkString("flags")
			c.Set(len(flags))
			for _, f := range flags {
				c.Simple(f)
			}
		}
		if len(a.Args) > 0 {
			c.BulkString("arguments")
			writeDocArgs(c, a.Args)
		}
	}
}

func (f *Family) cmdCommandList(c *command.Client, args [][]byte) {
	cmds := f.table.Sorted()
	filter := func(*command.Command) bool { return true }
	if len(args) > 2 {
		if len(args) != 5 || !command.EqualFold(args[2], "filterby") {
			c.Error(command.ErrSyntax)
			return
		}
		val := strings.ToLower(string(args[4]))
		switch {
		case command.EqualFold(args[3], "pattern"):
			filter = func(cmd *command.Command) bool { return command.GlobMatch(val, cmd.Name) }
		case command.EqualFold(args[3], "aclcat"):
			filter = func(cmd *command.Command) bool {
				for _, cat := range cmd.Categories() {
					if cat == "@"+val {
						return true
					}
				}
				return false
			}
		case command.EqualFold(args[3], "module"):
			filter = func(*command.Command) bool { return false }
		default:
			c.Error(command.ErrSyntax)
			return
		}
	}
	var names []string
	for _, cmd := range cmds {
		if filter(cmd) {
			names = append(names, cmd.Name)
		}
		for _, sub := range cmd.Subs { // "container|subcommand", as Redis lists them
			if filter(sub) {
				names = append(names, sub.Name)
			}
		}
	}
	c.Array(len(names))
	for _, n := range names {
		c.BulkString(n)
	}
}

// cmdCommandGetKeys lists the key arguments of a command as a client
// would send it: the positions of the command table, or KeyArgs for
// movable keys.
func (f *Family) cmdCommandGetKeys(c *command.Client, args [][]byte) {
	cargs := args[2:]
	cmd := f.table.Resolve(cargs)
	if cmd == nil {
		c.Err("ERR Invalid command specified")
		return
	}
	if !cmd.ArityOK(len(cargs)) {
		c.Err("ERR Invalid number of arguments specified for command")
		return
	}
	keys := cmd.NamedKeys(cargs)
	if len(keys) == 0 {
		c.Err("ERR The command has no key arguments")
		return
	}
	c.Array(len(keys))
	for _, k := range keys {
		c.Bulk(k)
	}
}
