package command

// A connection in a mode (subscribed, monitoring) and a server that
// refuses writes (a failed snapshot with stop-writes-on-bgsave-error, a
// read-only replica) each
// restrict what a command may do. One gate checks them all, so that the
// common case, none of them, costs two atomic loads and one call per
// command.

// The modes of Client.mode.
const (
	modeSubscribed uint32 = 1 << iota // listens to a channel or pattern
	modeMonitor                       // in MONITOR mode
)

func registerModes(t *Table) { t.SetGate(GateModes, modeGate) }

func modeGate(c *Client, cmd *Command, args [][]byte) bool {
	m := c.mode.Load()
	if m == 0 && !c.srv.refuseWrites.Load() && !c.srv.readOnly.Load() && c.srv.busy.count.Load() == 0 {
		return true
	}
	return busyGate(c, cmd) && (m&modeSubscribed == 0 || subscribedGate(c, cmd, args)) &&
		(m&modeMonitor == 0 || monitorGate(c, cmd, args)) &&
		misconfGate(c, cmd, args) && readOnlyGate(c, cmd, args)
}

// setMode turns one mode of c on or off.
func (c *Client) setMode(m uint32, on bool) {
	for {
		old := c.mode.Load()
		next := old &^ m
		if on {
			next |= m
		}
		if c.mode.CompareAndSwap(old, next) {
			return
		}
	}
}

// setSubCount records how many channels and patterns c listens to.
func (c *Client) setSubCount(n int) {
	c.subCount.Store(int32(n))
	c.setMode(modeSubscribed, n > 0)
}
