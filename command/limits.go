package command

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/limitdb/limitdb/resp"
	"github.com/limitdb/limitdb/server"
)

// Limits bound what one client can make the server hold or do. Every limit
// has a directive (flag, config file, CONFIG GET/SET) named as in Redis where
// Redis has one.
type Limits struct {
	MaxBulkLen       int64 // proto-max-bulk-len: longest argument, bytes
	MaxArgs          int   // proto-max-multibulk-len: most arguments in one command
	QueryBufferLimit int64 // client-query-buffer-limit: longest unfinished command, bytes
	MaxClients       int   // maxclients
	Timeout          int   // timeout: seconds a client may stay idle (0: forever)
	MaxKeyLen        int   // max-key-len: longest key, bytes
	WriteTimeout     int   // client-write-timeout: seconds a reply may wait on a client that does not read (0: forever)
}

func defaultLimits() Limits {
	return Limits{
		MaxBulkLen:       512 << 20,
		MaxArgs:          1 << 20,
		QueryBufferLimit: 1 << 30,
		MaxClients:       10000,
		MaxKeyLen:        64 << 10,
		WriteTimeout:     60,
	}
}

func registerLimits(t *Table) {
	reload := func(s *Server) error { s.loadLimits(s.Config().Limits); return nil }
	size := func(name, help string, min int64, field func(c *Config) *int64) *Directive {
		return &Directive{Name: name, Help: help, Mutable: true, Apply: reload,
			Get: func(c *Config) string { return strconv.FormatInt(*field(c), 10) },
			Set: func(c *Config, v string) error {
				n, err := ParseSize(v)
				if err != nil {
					return err
				}
				if n < min {
					return fmt.Errorf("argument must be at least %d", min)
				}
				*field(c) = n
				return nil
			}}
	}
	integer := func(name, help string, min int, field func(c *Config) *int) *Directive {
		d := IntDirective(name, help, true, min, field)
		d.Apply = reload
		return d
	}
	t.RegisterDirective(size("proto-max-bulk-len", "longest argument a client may send (bytes; k, kb, m, mb, g, gb accepted)", 1<<10,
		func(c *Config) *int64 { return &c.MaxBulkLen }))
	t.RegisterDirective(integer("proto-max-multibulk-len", "most arguments in one command", 1,
		func(c *Config) *int { return &c.MaxArgs }))
	t.RegisterDirective(size("client-query-buffer-limit", "longest unfinished command a client may make the server hold (bytes)", 1<<20,
		func(c *Config) *int64 { return &c.QueryBufferLimit }))
	t.RegisterDirective(integer("maxclients", "most simultaneous client connections", 1,
		func(c *Config) *int { return &c.MaxClients }))
	t.RegisterDirective(integer("timeout", "close a client idle for this many seconds (0: never)", 0,
		func(c *Config) *int { return &c.Timeout }))
	t.RegisterDirective(integer("max-key-len", "longest key a command may name (bytes)", 1,
		func(c *Config) *int { return &c.MaxKeyLen }))
	t.RegisterDirective(integer("client-write-timeout", "close a client whose replies wait this many seconds unread (0: never)", 0,
		func(c *Config) *int { return &c.WriteTimeout }))
	t.registerGate(15, "key length", keyLengthGate)
}

// ParseSize reads a byte count as Redis's config does: a plain integer or one
// with a unit (k, kb, m, mb, g, gb; k is 1000 and kb 1024).
func ParseSize(v string) (int64, error) {
	s := strings.ToLower(strings.TrimSpace(v))
	mul := int64(1)
	for _, u := range []struct {
		suffix string
		mul    int64
	}{{"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}, {"g", 1e9}, {"m", 1e6}, {"k", 1e3}, {"b", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mul = strings.TrimSuffix(s, u.suffix), u.mul
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || (mul > 1 && n > (1<<62)/mul) {
		return 0, fmt.Errorf("argument must be a memory value")
	}
	return n * mul, nil
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
	lim     atomic.Pointer[Limits]
	acl     atomic.Pointer[aclTable]
	once    sync.Once // Prepare
	prepErr error
	shutErr atomic.Pointer[error]
}

// loadLimits makes l the limits of the command layer and the transport.
func (s *Server) loadLimits(l Limits) {
	s.guard.lim.Store(&l)
	if s.net != nil {
		s.net.SetLimits(l.transport())
	}
}

// transport are the limits the transport enforces.
func (l Limits) transport() server.Limits {
	return server.Limits{
		// The clamp keeps the reader's arithmetic far from overflow.
		Frame:        resp.Limits{MaxArgs: l.MaxArgs, MaxBulk: min(l.MaxBulkLen, 1<<40), MaxQuery: l.QueryBufferLimit},
		Timeout:      time.Duration(l.Timeout) * time.Second,
		WriteTimeout: time.Duration(l.WriteTimeout) * time.Second,
	}
}

func (g *guard) limits() *Limits {
	if l := g.lim.Load(); l != nil {
		return l
	}
	d := defaultLimits()
	g.lim.CompareAndSwap(nil, &d)
	return g.lim.Load()
}

// Open admits a new connection (server.Handler): maxclients and protected
// mode. It answers a refusal itself; the transport closes.
func (s *Server) Open(conn *server.Conn) bool {
	c := s.newClient(conn)
	c.setAuthed(!s.authRequired())
	if !c.authed {
		// fall through: a password protects the server wherever it listens
	} else if s.Config().ProtectedMode && !conn.Loopback() {
		s.rejectedConn.Add(1)
		c.w.Error(errProtected)
		return false
	}
	max := s.guard.limits().MaxClients
	s.clientsMu.Lock()
	n := len(s.clients)
	s.clientsMu.Unlock()
	if n >= max {
		s.rejectedConn.Add(1)
		c.w.Error("ERR max number of clients reached")
		return false
	}
	c.lastActive.Store(time.Now().UnixNano())
	conn.SetContext(c)
	s.clientsMu.Lock()
	s.clients[c] = struct{}{}
	s.clientsMu.Unlock()
	s.totalConns.Add(1)
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
