package command

// What the package's external tests (package command_test) read of its
// internals. They are external because they build servers with families
// of commands (newServer), which import this package.

// AuthRequired reports whether s asks clients for a password.
func (s *Server) AuthRequired() bool { return s.authRequired() }

// Run runs args as the next command of c's batch, through dispatch as a
// pipelined connection's command runs, without ending the batch; it
// reports whether the command answered with an error.
func (c *LocalClient) Run(args [][]byte) (failed bool) {
	c.srv.handle(c.Client, args)
	return c.failed
}

// Replies is what c's commands have written since its last EndBatch.
func (c *LocalClient) Replies() []byte { return c.w.Bytes() }

// EndBatch ends c's batch, as a connection does after the commands of one
// read, and drops the replies written.
func (c *LocalClient) EndBatch() {
	c.endBatch()
	c.w.Reset()
}

// KeepsInstant reports whether c's batch still holds the instant it read,
// so that its next command runs at the same instant.
func (c *LocalClient) KeepsInstant() bool { return c.bt.haveNow }

// Closing reports whether c's last command ended the connection.
func (c *LocalClient) Closing() bool { return c.closing }

// EachRunnable calls fn on every command of t that has a handler,
// subcommands included, ordered by name.
func (t *Table) EachRunnable(fn func(*Command)) { t.eachRunnable(fn) }

// FirstKey is the key Prefetch reads ahead for args, before they are
// checked: nil for none.
func FirstKey(cmd *Command, args [][]byte) []byte { return firstKey(cmd, args) }
