// Package resp is limitdb's protocol edge: the redcon server, the one
// command table (name, arity, flags, keys, docs, handler), argument parsing,
// reply writing in RESP2 and RESP3, and connection state.
//
// Data flows one way: connection -> command table -> engine (shard lock ->
// algorithm) -> reply. resp may import engine and its algorithm packages;
// nothing below resp knows about the protocol.
package command

import (
	"errors"
	"fmt"
	"log"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/persistence"
	"github.com/limitdb/limitdb/policy"
	"github.com/limitdb/limitdb/server"
)

// Version is limitdb's version, reported by INFO and HELLO.
const Version = "0.1.0"

// redisVersion is the Redis version limitdb answers as, for clients that
// gate features on it.
const redisVersion = "7.2.0"

// Server serves the command table over RESP.
type Server struct {
	cfg        config.Config
	directives *config.Directives // what CONFIG GET and SET know
	cfgMu      sync.RWMutex
	eng        *engine.Engine
	table      *Table
	net        *server.Server // the transport, once Serve has started
	ln         net.Listener
	logger     *log.Logger

	started time.Time
	nextID  atomic.Int64

	clientsMu sync.Mutex
	clients   map[*Client]struct{}

	totalConns   atomic.Int64
	totalCmds    atomic.Int64
	rejectedConn atomic.Int64

	// Authenticate checks a user and password and returns the user name; nil
	// means no password is configured and every connection is authenticated.
	Authenticate func(user, pass string) (string, bool)

	// OnShutdown is called by SHUTDOWN (save is false for NOSAVE). When nil,
	// SHUTDOWN just closes the server.
	OnShutdown func(save bool) error

	policies *policy.Store        // named policies: cmd_policy.go
	sections persistence.Sections // a snapshot's sections beside the keyspace
	persist  persistState         // snapshots: cmd_persist.go
	slow     slowLog              // SLOWLOG: resp/slowlog.go
	mem      memState             // maxmemory: resp/memory.go

	shutting  atomic.Bool // Shutdown has begun
	closeOnce sync.Once
	done      chan struct{}

	serveMu sync.Mutex // orders Serve's start against Close and Shutdown
	guard   guard      // limits, users, shutdown draining (limits.go, auth.go, shutdown.go)
}

// New returns a server for eng; call Serve or ListenAndServe to start it.
func New(cfg config.Config, eng *engine.Engine, logger *log.Logger) *Server {
	if logger == nil {
		logger = log.Default()
	}
	s := &Server{
		cfg:        cfg,
		eng:        eng,
		table:      NewTable(),
		directives: config.Builtin(),
		logger:     logger,
		started:    time.Now(),
		clients:    map[*Client]struct{}{},
		done:       make(chan struct{}),
	}
	s.policies = policy.NewStore(nil)
	s.sections.Add("policies", s.policies.MarshalRuntime, s.policies.UnmarshalRuntime)
	s.slow.configure(cfg)
	return s
}

// Engine is the keyspace the server serves.
func (s *Server) Engine() *Engine { return s.eng }

// Engine is an alias so callers need not import engine for the type.
type Engine = engine.Engine

// Config returns a copy of the current configuration.
func (s *Server) Config() config.Config {
	s.cfgMu.RLock()
	defer s.cfgMu.RUnlock()
	return s.cfg
}

// Listen opens the configured address.
func (s *Server) Listen() (net.Listener, error) {
	cfg := s.Config()
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Bind, fmt.Sprint(cfg.Port)))
	if err != nil {
		return nil, err
	}
	tln, err := s.listenTLS()
	if err != nil {
		ln.Close()
		return nil, err
	}
	if tln != nil {
		return server.JoinListeners(ln, tln), nil
	}
	return ln, nil
}

// ListenAndServe listens on the configured address and serves until Close.
func (s *Server) ListenAndServe() error {
	ln, err := s.Listen()
	if err != nil {
		return err
	}
	return s.Serve(ln)
}

// Serve serves connections from ln until Close.
func (s *Server) Serve(ln net.Listener) error {
	if err := s.Prepare(); err != nil {
		ln.Close()
		return err
	}
	s.serveMu.Lock()
	select {
	case <-s.done: // closed before it started
		s.serveMu.Unlock()
		ln.Close()
		return nil
	default:
	}
	s.ln = ln
	s.net = server.New(s, transportLimits(*s.guard.limits()), s.Config().EventLoop)
	s.serveMu.Unlock()
	s.startBackground()
	err := s.net.Serve(ln)
	if s.net.Draining() { // Shutdown: wait for the final snapshot
		<-s.done
		return s.shutdownErr()
	}
	select {
	case <-s.done:
		return nil
	default:
		return err
	}
}

// Addr is the address the server listens on (after Serve has started).
func (s *Server) Addr() net.Addr {
	s.serveMu.Lock()
	defer s.serveMu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Close stops accepting, closes every connection and stops background work.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.serveMu.Lock()
		defer s.serveMu.Unlock()
		close(s.done)
		if s.net != nil {
			err = s.net.Close()
		}
	})
	return err
}

// Done is closed when the server closes.
func (s *Server) Done() <-chan struct{} { return s.done }

// startBackground runs active expiry: ten cycles a second, each a bounded
// sample of every shard, one shard lock at a time. A cycle is spread over
// ten slices of a tenth of the shards, one every 10 ms: a whole cycle on
// 100k keys took 0.5-1 ms, and on a server with one core every request in
// flight waited for it, ten times a second, which is the p99 at pipeline 1
// (bench/README.md, "Fourth session").
func (s *Server) startBackground() {
	go s.autoSave()
	go func() {
		const slices = 10
		per := (s.eng.Shards() + slices - 1) / slices
		t := time.NewTicker(100 * time.Millisecond / slices)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-t.C:
				s.eng.ExpireShards(s.eng.Now(), 20, per)
			}
		}
	}()
}

// newClient makes the state of a connection, or of a client with no
// socket when conn is nil.
func (s *Server) newClient(conn *server.Conn) *Client {
	now := time.Now()
	c := &Client{srv: s, conn: conn, ID: s.nextID.Add(1), Created: now, proto: 2}
	if conn != nil {
		c.w = conn.Writer()
		c.Addr, c.LAddr = conn.RemoteAddr(), conn.LocalAddr()
	}
	c.lastActive.Store(now.UnixNano())
	return c
}

// Closed forgets a connection that has gone (server.Handler).
func (s *Server) Closed(conn *server.Conn, _ error) {
	c, _ := conn.Context().(*Client)
	if c == nil {
		return
	}
	s.clientsMu.Lock()
	delete(s.clients, c)
	s.clientsMu.Unlock()
}

// EndBatch publishes what a batch of commands counted (server.Handler).
func (s *Server) EndBatch(conn *server.Conn) {
	if c, ok := conn.Context().(*Client); ok {
		c.endBatch()
	}
}

// Command runs one command of a connection (server.Handler).
func (s *Server) Command(conn *server.Conn, args [][]byte) {
	c, _ := conn.Context().(*Client)
	if c == nil {
		return
	}
	s.handle(c, args)
}

// Clients returns the connected clients, ordered by ID.
func (s *Server) Clients() []*Client {
	s.clientsMu.Lock()
	out := make([]*Client, 0, len(s.clients))
	for c := range s.clients {
		out = append(out, c)
	}
	s.clientsMu.Unlock()
	sortClients(out)
	return out
}

// handle dispatches one command. The transport calls it for each command
// of a batch in order, then EndBatch, then flushes once.
func (s *Server) handle(c *Client, args [][]byte) {
	if c.closing {
		return
	}
	if !c.bt.open {
		c.begin()
	}
	c.bt.total++
	cmd := c.bt.named
	if cmd == nil || !equalFold(args[0], cmd.Name) { // a pipeline repeats its command
		cmd = s.table.Lookup(args[0])
		c.bt.named = cmd
	}
	if cmd == nil {
		c.Err(unknownCommand(args))
		return
	}
	if len(cmd.Subs) > 0 && len(args) >= 2 {
		sub := cmd.sub(args[1])
		if sub == nil {
			if cmd.Handler == nil {
				c.Errf("unknown subcommand '%s'. Try %s HELP.", clip(args[1]), cmd.FullName())
				return
			}
		} else {
			cmd = sub
		}
	}
	if !cmd.arityOK(len(args)) || cmd.Handler == nil {
		cmd.stats.rejected.Add(1)
		c.Errf("wrong number of arguments for '%s' command", cmd.Name)
		return
	}
	if len(s.table.gates) > 0 && !s.table.admit(c, cmd, args) {
		return
	}
	c.enter(cmd)
	c.failed = false
	s.run(c, cmd, args)
	c.leave(cmd, args)
}

// run calls the handler, turning a panic into an error reply so that one bad
// command never takes the server or other clients down.
func (s *Server) run(c *Client, cmd *Command, args [][]byte) {
	defer func() {
		if r := recover(); r != nil {
			if err, ok := r.(error); ok && errors.Is(err, engine.ErrShardFull) {
				c.Err("OOM " + err.Error())
				return
			}
			s.logger.Printf("panic in %s: %v\n%s", cmd.FullName(), r, debug.Stack())
			c.Err("ERR internal error while running '" + cmd.Name + "'")
		}
	}()
	cmd.Handler(c, args)
}

func unknownCommand(args [][]byte) string {
	msg := fmt.Sprintf("ERR unknown command '%s', with args beginning with: ", clip(args[0]))
	for i, a := range args[1:] {
		if i == 20 {
			break
		}
		msg += "'" + clip(a) + "' "
	}
	return msg
}

type cmdStats struct {
	calls    atomic.Int64
	usec     atomic.Int64
	rejected atomic.Int64
	failed   atomic.Int64
	admitted atomic.Int64 // limiter replies with limited = 0 (info_limits.go)
	denied   atomic.Int64 // and with limited = 1
	lat      latencyHist  // slowlog.go
}
