package command

import "strings"

// What a family that describes the table to clients (COMMAND) reads of
// it, beside Sorted, Resolve and each Command's exported fields.

// Len is the number of top-level commands.
func (t *Table) Len() int { return len(t.byName) }

// Find finds a command by its name, "name" or "parent|sub", any case; nil
// when there is none.
func (t *Table) Find(name string) *Command {
	name = strings.ToLower(name)
	parent, _, hasSub := strings.Cut(name, "|")
	cmd := t.byName[parent]
	if cmd == nil || !hasSub {
		return cmd
	}
	for _, sub := range cmd.Subs {
		if sub.Name == name {
			return sub
		}
	}
	return nil
}

// ArityOK reports whether n arguments, the name included, fit the
// command's arity.
func (cmd *Command) ArityOK(n int) bool { return cmd.arityOK(n) }

// NamedKeys lists the keys a client names in args, which decide its
// cluster slot (COMMAND GETKEYS): the arguments themselves, from KeyArgs or
// the key positions, not the keyspace keys a command derives from them.
func (cmd *Command) NamedKeys(args [][]byte) [][]byte {
	if cmd.KeyArgs != nil {
		return cmd.KeyArgs(args)
	}
	if cmd.FirstKey <= 0 {
		return nil
	}
	last := cmd.LastKey
	if last < 0 {
		last += len(args)
	}
	var keys [][]byte
	for i := cmd.FirstKey; i <= last && i < len(args); i += max1(cmd.Step) {
		keys = append(keys, args[i])
	}
	return keys
}
