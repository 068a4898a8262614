// Package command is limitdb's command layer: the command table as a value
// (name, arity, flags, key positions, docs, handler), dispatch, the gates
// (authentication, ACL, key length, MULTI queueing, maxmemory), MULTI and
// WATCH, statistics, the slow log, INFO, and every family of commands. A
// command runs the same way from a connection (Conn) or with no socket
// (LocalClient).
//
// Data flows one way: connection -> table -> gates -> handler -> engine
// (shard lock -> algorithm) -> reply. command imports the wire format
// (resp), the configuration, the engine, persistence and policies; it never
// imports the transport (server) or the assembly (node).
package command

import (
	"errors"
	"fmt"
	"log"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/replication"
	"github.com/limitdb/limitdb/resp"
)

// Version is limitdb's version, reported by INFO and HELLO.
const Version = "0.1.0"

// redisVersion is the Redis version limitdb answers as, for clients that
// gate features on it.
const redisVersion = "7.2.0"

// RedisVersion is the Redis version limitdb answers as (INFO, HELLO, a
// script's redis.REDIS_VERSION).
const RedisVersion = redisVersion

// Server is the command layer's core: what every family shares. It holds
// no feature's state: each family owns its own and registers it on the
// table.
type Server struct {
	env     Env                  // what every family is handed: the keyspace, the clock, the logger
	conf    settings             // the running configuration and the directives that change it
	table   *Table               // commands, gates and the families' registrations
	clients clientSet            // every connected client and LocalClient, and their counts
	life    lifecycle            // this run's identity and its end
	guard   guard                // admission: limits, users, maxmemory (admission.go, auth.go, memory.go)
	slow    slowLog              // SLOWLOG and the latency histograms: slowlog.go
	stream  *replication.Manager // the change stream every write feeds: replicas, the append-only file
	Hooks                        // what the assembly plugs in
}

// settings is the running configuration, read by every goroutine.
type settings struct {
	mu         sync.RWMutex
	cfg        config.Config
	directives *config.Directives // what CONFIG GET and SET know
}

// lifecycle is a run's identity and its end.
type lifecycle struct {
	runID      string // INFO server run_id
	started    time.Time
	listenPort atomic.Int64 // INFO's tcp_port, once listening
	done       chan struct{}
	closeOnce  sync.Once
}

// Hooks are what the assembly (node) plugs into the command layer.
type Hooks struct {
	// Authenticate checks a user and password and returns the user name; nil
	// means no password is configured and every connection is authenticated.
	Authenticate func(user, pass string) (string, bool)

	// RequestShutdown is called by SHUTDOWN, once its save (unless NOSAVE)
	// has succeeded, to stop the server as SIGTERM does. When nil, SHUTDOWN
	// just closes the command layer.
	RequestShutdown func(save bool)

	// ClientMemory, when set, is what the connections hold (unsent replies,
	// read buffers): maxmemory counts it beside the keyspace, as Redis
	// counts its clients' buffers. The node sets it to the transport's.
	ClientMemory func() int64

	// OnLimits is called with the protocol and client limits whenever they
	// are loaded: at Prepare and after CONFIG SET changes one. The node
	// hands them to the transport.
	OnLimits func(config.Limits)
}

// New returns a server for eng; call Serve or ListenAndServe to start it.
func New(cfg config.Config, eng *engine.Engine, logger *log.Logger, families ...Family) *Server {
	if logger == nil {
		logger = log.Default()
	}
	var clk clock.Clock // no engine (a configuration check only): nothing to time
	if eng != nil {
		clk = eng.Clock()
	}
	s := &Server{
		conf:  settings{cfg: cfg, directives: config.Builtin()},
		table: NewTable(),
		life:  lifecycle{runID: replication.NewID(), done: make(chan struct{})},
	}
	s.env = Env{Engine: eng, Clock: clk, Logger: logger, Done: s.life.done}
	if clk != nil {
		s.life.started = clock.Time(clk)
	}
	if eng != nil {
		s.stream = replication.New(eng, logger, replHost{s}, cfg.ReplBacklogSize)
		s.stream.SetBacklogTTL(time.Duration(cfg.ReplBacklogTTL) * time.Second)
		s.stream.SetClientIDs(func() int64 { return s.clients.nextID.Add(1) })
	}
	s.slow.configure(cfg)
	env := s.env
	env.Config, env.ReplicateSection, env.Publish, env.Clients = s.Config, s.replicateSection, s.Publish, s.Clients
	env.Info, env.Stats, env.ResetStats = s.info, s.stats, s.resetStats
	env.Directives, env.SetConfig, env.Shutdown = s.conf.directives, s.SetConfig, s.shutdown
	env.RunID, env.Started, env.Port = s.life.runID, s.life.started, s.port
	env.Replication, env.BecomeReplica, env.BecomePrimary = s.stream, s.becomeReplica, s.becomePrimary
	env.ClusterRoles = cfg.ClusterEnabled == "yes"
	env.Sections = &s.table.snapshot
	s.registerReloads()
	s.loadNotify()
	s.table.AddInfo("limits", 60, s.infoLimits)
	for _, f := range families {
		f.Register(s.table, env)
	}
	return s
}

// Engine is the keyspace the server serves.
func (s *Server) Engine() *Engine { return s.env.Engine }

// Engine is an alias so callers need not import engine for the type.
type Engine = engine.Engine

// Config returns a copy of the current configuration.
func (s *Server) Config() config.Config {
	s.conf.mu.RLock()
	defer s.conf.mu.RUnlock()
	return s.conf.cfg
}

// Close stops the command layer's background work (the rules file's
// watch). The node closes the connections.
func (s *Server) Close() error {
	s.life.closeOnce.Do(func() {
		close(s.life.done)
		for _, stop := range s.table.closers {
			stop()
		}
		if s.stream != nil {
			s.stream.Close()
		}
	})
	return nil
}

// shutdown is SHUTDOWN's stop (Env.Shutdown). As in Redis, a save that
// fails keeps the server running and says why; then it stops as SIGTERM
// does: every connection, the asking one included, finishes the commands
// it has read, and the final snapshot has their effects in it.
func (s *Server) shutdown(save bool) error {
	if s.RequestShutdown == nil {
		s.Close()
		return nil
	}
	if save && s.table.save != nil {
		if err := s.table.save(); err != nil {
			return err
		}
	}
	s.RequestShutdown(save)
	return nil
}

// Clock is the clock the command layer reads and waits on: the engine's.
func (s *Server) Clock() clock.Clock { return s.env.Clock }

// since is the time from t to now on the server's clock.
func (s *Server) since(t time.Time) time.Duration {
	return time.Duration(s.env.Clock.Now() - t.UnixNano())
}

// Done is closed when the server closes.
func (s *Server) Done() <-chan struct{} { return s.life.done }

// newClient makes the state of a connection, or of a client with no
// socket when conn is nil.
func (s *Server) newClient(conn Conn) *Client {
	now := clock.Time(s.env.Clock)
	c := &Client{srv: s, conn: conn, ID: s.clients.nextID.Add(1), Created: now, proto: 2}
	if n := s.table.nSlots; n > 0 { // sized once, so that a family may read its slot from another goroutine
		c.slots = make([]any, n)
	}
	if conn != nil {
		c.w = conn.Writer()
		c.Addr, c.LAddr = conn.RemoteAddr(), conn.LocalAddr()
	}
	c.lastActive.Store(now.UnixNano())
	return c
}

// Conn is what the command layer needs of a client's connection; the
// transport's connections (server.Conn) are ones.
type Conn interface {
	Writer() *resp.Writer
	Close() error // flush, close, run no more of the batch
	Kill()        // close from another goroutine (CLIENT KILL)
	RemoteAddr() string
	LocalAddr() string
	Loopback() bool
	SetAuthenticated(bool) // lift the limits for unauthenticated clients
	OutputMemory() int64   // replies not sent yet, bytes; from any goroutine
	Memory() int64         // what the connection holds, replies and read buffer
	Push(b []byte)         // queue whole RESP values (a message); from any goroutine
	SetClass(class int)    // which client-output-buffer-limit class applies
	Context() any
	SetContext(any)
	// BeginLong and EndLong bracket a part of a command that may run
	// long, so that the transport serves the connections that share
	// this one's event loop meanwhile (Client.RunLong).
	BeginLong()
	EndLong()
	// Stream makes Push write to the socket at once, from the pushing
	// goroutine, where the transport can (server.Conn.Stream): a
	// replica's link, which the event loops push the stream to.
	Stream()
}

// Closed forgets a connection that has gone.
func (s *Server) Closed(conn Conn, _ error) {
	c, _ := conn.Context().(*Client)
	if c == nil {
		return
	}
	for _, forget := range s.table.clientClosed {
		forget(c)
	}
	s.clients.remove(c)
}

// EndRound is what every write of a round needs done before its reply
// leaves, done once for the round (server.Handler): the append-only file
// written (and fsynced under appendfsync always), replicas woken.
func (s *Server) EndRound() {
	if s.stream != nil {
		s.stream.Publish()
	}
	for _, fn := range s.table.endRound { // the append-only file's write (OnEndRound)
		fn()
	}
}

// EndBatch publishes what a batch of commands counted; the transport
// calls it before it flushes the batch's replies.
func (s *Server) EndBatch(conn Conn) {
	if c, ok := conn.Context().(*Client); ok {
		c.endBatch()
	}
}

// Prefetch reads ahead, for a batch of a connection's commands, where the
// keyspace keeps the first key of each (engine.Prefetch): a pipeline of
// commands on keys the cache does not hold then waits for their cache
// misses together rather than one after the other. It runs nothing and
// checks nothing; each command is then run, and refused, as it would
// have been.
func (s *Server) Prefetch(conn Conn, cmds []resp.Command) {
	c, _ := conn.Context().(*Client)
	if c == nil || s.env.Engine == nil {
		return
	}
	var keys [engine.PrefetchMax][]byte
	n := 0
	cmd := c.bt.named
	for _, m := range cmds {
		args := m.Args
		if cmd == nil || !EqualFold(args[0], cmd.Name) {
			if cmd = s.table.Lookup(args[0]); cmd == nil {
				continue
			}
		}
		if k := firstKey(cmd, args); k != nil {
			keys[n] = k
			if n++; n == len(keys) {
				break
			}
		}
	}
	c.prefetched += s.env.Engine.Prefetch(keys[:n])
}

// firstKey is the first key a command names, or nil; nil too for a
// command whose argument count is wrong, which names none.
func firstKey(cmd *Command, args [][]byte) []byte {
	switch {
	case !cmd.arityOK(len(args)):
	case cmd.Keys != nil:
		if keys := cmd.Keys(args); len(keys) > 0 {
			return keys[0]
		}
	case cmd.FirstKey > 0 && cmd.FirstKey < len(args):
		return args[cmd.FirstKey]
	}
	return nil
}

// Command runs one command of a connection. args alias the connection's
// read buffer and are valid only until it returns.
func (s *Server) Command(conn Conn, args [][]byte) {
	c, _ := conn.Context().(*Client)
	if c == nil {
		return
	}
	s.handle(c, args)
}

// Clients returns the connected clients, ordered by ID.
func (s *Server) Clients() []*Client {
	return s.clients.list()
}

// handle dispatches one command. The transport calls it for each command
// of a batch in order, then EndBatch, then flushes once.
func (s *Server) handle(c *Client, args [][]byte) {
	if c.closing {
		return
	}
	if c.killed.Load() { // CLIENT KILL from another connection
		c.Close()
		return
	}
	if !c.bt.open {
		c.begin()
	}
	c.bt.total++
	cmd := c.bt.named
	if cmd == nil || !EqualFold(args[0], cmd.Name) { // a pipeline repeats its command
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
				c.Errf("unknown subcommand '%s'. Try %s HELP.", Clip(args[1]), cmd.FullName())
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
	c.failed = false
	if s.table.nGates > 0 && !s.table.admit(c, cmd, args) {
		if c.failed { // refused before running (NOAUTH, MOVED, OOM...): Redis's rejected_calls
			cmd.stats.rejected.Add(1)
		}
		c.runAfter() // what an earlier gate took (a migrating slot's hold) ends with the refusal
		return
	}
	c.enter(cmd)
	mark := c.w.Buffered()
	s.run(c, cmd, args)
	if n := s.replicasFor(c, cmd, args); n > 0 {
		c.noteReplicaWait(mark, n)
	}
	c.runAfter()
	c.serveReady()
	c.leave(cmd, args)
}

// replicasFor is how many replicas must acknowledge the effect of the
// command c just ran before its reply leaves: limiter-wait-replicas for a
// limiter command that charged (not a peek, not an error), or what the
// command asked itself (WaitReplicas: a policy's wait_replicas).
func (s *Server) replicasFor(c *Client, cmd *Command, args [][]byte) int {
	n := c.askReplicas
	c.askReplicas = 0
	if s.stream == nil || c.failed {
		return 0
	}
	if all, _ := s.stream.LimiterWait(); all > n && cmd.Flags&FlagWrite != 0 && cmd.Group == "rate_limit" && !cmd.Peeks(args) {
		n = all
	}
	return n
}

// WaitReplicas makes the reply of c's running command wait until n
// replicas acknowledged its effect (replicawait.go); a policy with
// wait_replicas asks it. A command run inside EXEC or called by another
// (a script's) asks nothing: as with limiter-wait-replicas, those replies
// leave as by default, and the outer command's reply is not held for them.
func (c *Client) WaitReplicas(n int) {
	if c.tx == nil && !c.calling {
		c.askReplicas = max(c.askReplicas, n)
	}
}

// runAfter runs what AfterRun asked for, once.
func (c *Client) runAfter() {
	if c.afterRun != nil {
		fn := c.afterRun
		c.afterRun = nil
		fn(c)
	}
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
			s.env.Logger.Printf("panic in %s: %v\n%s", cmd.FullName(), r, debug.Stack())
			c.Err("ERR internal error while running '" + cmd.Name + "'")
		}
	}()
	cmd.Handler(c, args)
	if cmd.Flags&FlagWrite != 0 && c.conn != nil && s.table.blockers.Load() > 0 { // after the write: ready.go
		c.ready, _ = appendCommandKeys(c.ready, cmd, args)
	}
	if o := s.table.observer.Load(); o != nil && cmd.Flags&FlagSkipMonitor == 0 { // someone monitors (ObserveCommands)
		o.fn(c, cmd, args)
	}
}

func unknownCommand(args [][]byte) string {
	msg := fmt.Sprintf("ERR unknown command '%s', with args beginning with: ", Clip(args[0]))
	for i, a := range args[1:] {
		if i == 20 {
			break
		}
		msg += "'" + Clip(a) + "' "
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
