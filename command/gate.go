package command

import "sort"

// A gate runs before every command that passed lookup and arity checks and
// may answer it instead of the handler (returning false): authentication,
// MULTI queueing, maxmemory refusal. Features register their gate from their
// own file, so dispatch in server.go never grows a case per feature.
type gate struct {
	order int
	name  string
	fn    func(c *Client, cmd *Command, args [][]byte) bool
}

// registerGate adds a gate; lower order runs first. Suggested orders:
// 10 authentication, 20 MULTI queueing, 30 memory limits.
func (t *Table) registerGate(order int, name string, fn func(c *Client, cmd *Command, args [][]byte) bool) {
	t.gates = append(t.gates, gate{order, name, fn})
	sort.SliceStable(t.gates, func(i, j int) bool { return t.gates[i].order < t.gates[j].order })
}

// admit runs the gates in order; false means a gate has answered.
func (t *Table) admit(c *Client, cmd *Command, args [][]byte) bool {
	for i := range t.gates {
		if !t.gates[i].fn(c, cmd, args) {
			return false
		}
	}
	return true
}
