package command

// Gate names one check that every command passes after lookup and arity,
// before its handler; a gate may answer the command instead (returning
// false). This list is the one place the order lives, as Redis's
// processCommand keeps it in one function. Every command a client sends
// walks it: a connection's, a LocalClient's and each redis.call of a
// script. A replica's stream and the append-only file's replay apply
// effects a primary already admitted, as Redis's master client does.
type Gate int

const (
	// GateAuth: NOAUTH before AUTH, then the ACL's command and key rules.
	GateAuth Gate = iota
	// GateKeyLength: a key longer than max-key-len never reaches the keyspace.
	GateKeyLength
	// GateCluster: MOVED, ASK, CROSSSLOT, TRYAGAIN and CLUSTERDOWN.
	GateCluster
	// GateModes: a subscribed or monitoring connection, a busy script
	// (-BUSY), writes stopped by a failed save (MISCONF) and a read-only
	// replica (READONLY), checked together: two atomic loads when none holds.
	GateModes
	// GateMemory: OOM for a denyoom command over maxmemory.
	GateMemory
	// GateMulti: inside MULTI, queue the command instead of running it.
	// Last, so that a command refused by an earlier gate is refused at
	// once and marks the transaction failed.
	GateMulti

	numGates
)

var gateNames = [numGates]string{"auth", "key length", "cluster", "modes", "maxmemory", "multi"}

// String is the gate's name.
func (g Gate) String() string { return gateNames[g] }

// GateFunc checks one command of c; false means it has answered.
type GateFunc func(c *Client, cmd *Command, args [][]byte) bool

// SetGate installs the check of gate g; the family that owns the state a
// gate reads sets it. Setting one twice is a programming error.
func (t *Table) SetGate(g Gate, fn GateFunc) {
	if t.gates[g] != nil {
		panic("command: gate set twice: " + g.String())
	}
	t.gates[g] = fn
	t.nGates++
}

// admit runs the gates in order; false means a gate has answered.
func (t *Table) admit(c *Client, cmd *Command, args [][]byte) bool {
	for _, fn := range &t.gates {
		if fn != nil && !fn(c, cmd, args) {
			return false
		}
	}
	return true
}
