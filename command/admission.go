package command

import (
	"sync"
	"sync/atomic"

	"github.com/limitdb/limitdb/acl"
	"github.com/limitdb/limitdb/config"
)

func registerLimits(t *Table) {
	t.SetGate(GateKeyLength, keyLengthGate)
}

// keyLengthGate refuses a command naming a key longer than max-key-len
// before it reaches the keyspace.
func keyLengthGate(c *Client, cmd *Command, args [][]byte) bool {
	if cmd.FirstKey <= 0 {
		return true
	}
	max := c.srv.guard.limits().MaxKeyLen
	last := cmd.LastKey
	if last < 0 {
		last = len(args) + last
	}
	step := max1(cmd.Step)
	for i := cmd.FirstKey; i <= last && i < len(args); i += step {
		if len(args[i]) > max {
			c.Errf("key is too long (%d bytes; max-key-len is %d)", len(args[i]), max)
			return false
		}
	}
	return true
}

func max1(n int) int {
	if n < 1 {
		return 1
	}
	return n
}

// guard is the server's protection state: current limits, users,
// shutdown. It lives in Server so the hot path reads it with one atomic
// load.
type guard struct {
	lim     atomic.Pointer[config.Limits]
	acl     atomic.Pointer[acl.Users]
	mem     memState  // maxmemory: memory.go
	once    sync.Once // Prepare
	prepErr error
}

// loadLimits makes l the limits of the command layer, and hands them to
// OnLimits.
func (s *Server) loadLimits(l config.Limits) {
	s.guard.lim.Store(&l)
	if s.OnLimits != nil {
		s.OnLimits(l)
	}
}

func (g *guard) limits() *config.Limits {
	if l := g.lim.Load(); l != nil {
		return l
	}
	d := config.DefaultLimits()
	g.lim.CompareAndSwap(nil, &d)
	return g.lim.Load()
}

// Open admits a new connection: maxclients and protected mode. It answers
// a refusal itself; the transport closes.
func (s *Server) Open(conn Conn) bool {
	c := s.newClient(conn)
	c.setAuthed(!s.authRequired())
	if !c.authed {
		// fall through: a password protects the server wherever it listens
	} else if s.Config().ProtectedMode && !conn.Loopback() {
		s.clients.rejected.Add(1)
		c.w.Error(errProtected)
		return false
	}
	max := s.guard.limits().MaxClients
	n := s.clients.count()
	if n >= max {
		s.clients.rejected.Add(1)
		c.w.Error("ERR max number of clients reached")
		return false
	}
	c.lastActive.Store(s.env.Clock.Now())
	conn.SetContext(c)
	s.clients.add(c)
	s.clients.accepted.Add(1)
	return true
}

// setAuthed records whether the client has authenticated, which also
// decides how much the transport lets it send.
func (c *Client) setAuthed(ok bool) {
	c.authed = ok
	if c.conn != nil {
		c.conn.SetAuthenticated(ok)
	}
}

const errProtected = "DENIED limitdb is running in protected mode because protected mode is enabled and no password is set for the default user. " +
	"In this mode connections are only accepted from the loopback interface. " +
	"If you want to connect from external computers, either set a password (--requirepass or --aclfile), " +
	"or disable protected mode with --protected-mode no (only if the network is trusted)."
