package command

// What one family offers the core and the rest without them knowing it:
// an observer of every command that runs (MONITOR), and a publisher of
// messages (pub/sub) that anything may publish through.

// Observer sees one command of c once it has run; it must not keep args,
// which alias the connection's read buffer. c.Calling() tells a command a
// script called (redis.call) from one c sent.
type Observer func(c *Client, cmd *Command, args [][]byte)

type observer struct{ fn Observer }

// ObserveCommands makes fn see every command once it has run, from a
// connection, EXEC's queue or a script's redis.call, or, with nil, stops
// it; any goroutine may call it. The family that sets it turns it on only
// while it has someone to tell (MONITOR while a connection monitors): with
// none set, a command pays one atomic load for it.
func (t *Table) ObserveCommands(fn Observer) {
	if fn == nil {
		t.observer.Store(nil)
		return
	}
	t.observer.Store(&observer{fn})
}

// ShowToObserver shows cmd and args, the command c runs now, to the
// observer before it has run: a command flagged FlagSkipMonitor calls it
// first thing, so that the commands it runs in turn (a script's) follow
// it, as Redis's EVAL and FCALL feed MONITOR.
func (c *Client) ShowToObserver(cmd *Command, args [][]byte) {
	if o := c.srv.table.observer.Load(); o != nil {
		o.fn(c, cmd, args)
	}
}

// Observed reports whether an observer is set (someone monitors): then a
// family that could do a command's work without running the commands
// Redis would (a script's native twin) runs them instead, so that they
// are shown.
func (c *Client) Observed() bool { return c.srv.table.observer.Load() != nil }

// Publisher sends a message on a channel and answers how many receivers
// it reached: what PUBLISH does, offered to whatever else publishes (the
// native twins of scripts that call PUBLISH).
type Publisher interface {
	Publish(channel string, message []byte) int
}

// SetPublisher installs the family that delivers messages; setting it
// twice is a programming error.
func (t *Table) SetPublisher(p Publisher) {
	if t.publisher != nil {
		panic("command: publisher set twice")
	}
	t.publisher = p
}

// Publish sends message to channel's receivers through the table's
// publisher, and returns how many it reached; 0 when there is none.
func (s *Server) Publish(channel string, message []byte) int {
	if s.table.publisher == nil {
		return 0
	}
	return s.table.publisher.Publish(channel, message)
}
