// Package node assembles a limitdb server: the engine, the command layer
// (table, policies, snapshots), the transport, the listeners and the
// background loops (active expiry, automatic snapshots), and the order in
// which they start and stop (Run). cmd/limitdb and the end-to-end tests use
// it.
//
// It is the one package that imports both the transport (server/) and the
// command layer (command/); neither imports the other, and nothing imports
// node but cmd/ and tests.
package node

import (
	"crypto/tls"
	"log"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/command/admin"
	"github.com/limitdb/limitdb/command/analytics"
	"github.com/limitdb/limitdb/command/clustering"
	"github.com/limitdb/limitdb/command/conn"
	"github.com/limitdb/limitdb/command/envoy"
	"github.com/limitdb/limitdb/command/keyspace"
	"github.com/limitdb/limitdb/command/monitor"
	"github.com/limitdb/limitdb/command/persist"
	"github.com/limitdb/limitdb/command/pubsub"
	"github.com/limitdb/limitdb/command/ratelimit"
	"github.com/limitdb/limitdb/command/regions"
	"github.com/limitdb/limitdb/command/replicas"
	"github.com/limitdb/limitdb/command/scripts"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/policy"
	"github.com/limitdb/limitdb/resp"
	"github.com/limitdb/limitdb/rls"
	"github.com/limitdb/limitdb/server"
)

// ShutdownGrace bounds how long SHUTDOWN and SIGTERM wait for in-flight
// commands before closing the remaining connections.
const ShutdownGrace = 5 * time.Second

// Node is one limitdb server: its command layer (CommandServer), its
// transport and its listeners.
type Node struct {
	cmds    *command.Server
	limits  *ratelimit.Family  // the rate-limit commands and named policies
	regions *regions.Family    // global policies shared with peer regions
	scripts *scripts.Family    // EVAL, FUNCTION and the scripts they keep
	cluster *clustering.Family // cluster routing and administration, the member's start
	persist *persist.Family    // snapshots and the append-only file
	insight *analytics.Family  // RL.TOP, RL.HISTORY and the dashboard's data
	net     *server.Server
	logger  *log.Logger

	// OnShutdown is called by Shutdown once every connection has finished
	// (save is false for SHUTDOWN NOSAVE): where the final snapshot is
	// written. When nil, Shutdown just closes.
	OnShutdown func(save bool) error

	// BeforeServe, when set, is called by Run once every listener is
	// open, just before it serves: cmd/limitdb starts its metrics
	// listener there. An error stops start-up.
	BeforeServe func() error

	serveMu   sync.Mutex // orders Serve's start against Close and Shutdown
	ln        net.Listener
	grpc      []*rls.Server  // Envoy's rate limit service (rls.go), stopped by Close
	rls       *rls.Service   // what gRPC, HTTP and RL.SHOULD answer from
	charger   *rlsCharger    // how it charges: through the command layer (rls_charge.go)
	rlsHTTP   []*http.Server // its HTTP side (rls.go), closed by Close
	rlsOnce   sync.Once      // StartRLS
	rlsErr    error
	done      chan struct{}
	serving   chan struct{} // closed once Serve serves
	servOnce  sync.Once
	closeOnce sync.Once
	startOnce sync.Once
	shutting  atomic.Bool
	shutErr   atomic.Pointer[error]
}

// New returns a server of eng with configuration cfg; call Serve or
// ListenAndServe to start it. A nil logger logs to the standard logger.
func New(cfg config.Config, eng *engine.Engine, logger *log.Logger) *Node {
	if logger == nil {
		logger = log.Default()
	}
	limits, scripts, cluster, persist, svc := ratelimit.New(), scripts.New(), clustering.New(), persist.New(), rls.New(eng, nil)
	insight := analytics.New()
	// The envoy family comes before admin, so that INFO all shows its
	// hidden rls section before commandstats and latencystats; persist
	// comes last, so that Close stops the append-only file after what the
	// other families stop, as the last writes to the stream.
	regs := regions.New(limits.Policies())
	cmds := command.New(cfg, eng, logger, conn.New(), keyspace.New(), scripts, limits, envoy.New(rlsCommands{svc}), insight, pubsub.New(), monitor.New(), admin.New(), replicas.New(), cluster, regs, persist)
	n := &Node{cmds: cmds, limits: limits, regions: regs, scripts: scripts, cluster: cluster, persist: persist, insight: insight, logger: logger, done: make(chan struct{}), serving: make(chan struct{}), rls: svc}
	n.net = server.New(handler{cmds}, transportLimits(cfg.Limits), cfg.EventLoop, cmds.Clock())
	n.net.Logf = logger.Printf
	cmds.OnLimits = func(l config.Limits) { n.net.SetLimits(transportLimits(l)) }
	cmds.ClientMemory = n.net.ClientMemory
	cmds.RequestShutdown = func(save bool) { go n.Shutdown(save, ShutdownGrace) }
	n.charger = newRLSCharger(cmds, cluster.RLSRoute)
	n.rls.SetCharger(n.charger)
	n.configureRLS(cfg)
	return n
}

// CommandServer is the node's command layer.
func (n *Node) CommandServer() *command.Server { return n.cmds }

// ClusterSummary is the node's cluster state, as CLUSTER INFO reports it.
func (n *Node) ClusterSummary() clustering.Summary { return n.cluster.Summary() }

// Engine is the keyspace the node serves.
func (n *Node) Engine() *engine.Engine { return n.cmds.Engine() }

// Config returns a copy of the current configuration.
func (n *Node) Config() config.Config { return n.cmds.Config() }

// Prepare loads the ACL users and the limits from the configuration, once
// (command.Server.Prepare); Run and Serve call it.
func (n *Node) Prepare() error { return n.cmds.Prepare() }

// Snapshots is the node's snapshots and append-only file: what the
// metrics read of them (LastSave, Failing).
func (n *Node) Snapshots() *persist.Family { return n.persist }

// Save writes a snapshot now and waits for it, as SAVE does; its error
// says why none was written.
func (n *Node) Save() error { return n.persist.Save() }

// Policies is the named policies the node applies.
func (n *Node) Policies() *policy.Store { return n.limits.Policies() }

// Regions is the family that shares global policies with the peer regions.
func (n *Node) Regions() *regions.Family { return n.regions }

// Analytics is the node's operators' view of its limits: RL.TOP's and
// RL.HISTORY's recorder, and DashboardView, the whole of it for a
// dashboard page.
func (n *Node) Analytics() *analytics.Family { return n.insight }

// StartRules loads the rules file (if configured) and watches it until
// Close; a file that does not load is an error.
func (n *Node) StartRules() error { return n.limits.StartRules() }

// transportLimits are the limits the transport enforces.
func transportLimits(l config.Limits) server.Limits {
	var out [server.Classes]server.OutputLimit
	for i, o := range l.OutputBuffer {
		out[i] = server.OutputLimit{Hard: o.Hard, Soft: o.Soft, SoftFor: time.Duration(o.SoftSeconds) * time.Second}
	}
	return server.Limits{
		Output: out,
		// The clamp keeps the reader's arithmetic far from overflow.
		Frame:        resp.Limits{MaxArgs: l.MaxArgs, MaxBulk: min(l.MaxBulkLen, 1<<40), MaxQuery: l.QueryBufferLimit},
		Timeout:      time.Duration(l.Timeout) * time.Second,
		WriteTimeout: time.Duration(l.WriteTimeout) * time.Second,
	}
}

// handler gives the transport the command layer, each connection as the
// command.Conn it asks for.
type handler struct{ s *command.Server }

func (h handler) Open(c *server.Conn) bool              { return h.s.Open(c) }
func (h handler) Command(c *server.Conn, args [][]byte) { h.s.Command(c, args) }
func (h handler) EndBatch(c *server.Conn)               { h.s.EndBatch(c) }
func (h handler) EndRound()                             { h.s.EndRound() }
func (h handler) Prefetch(c *server.Conn, cmds []resp.Command) {
	h.s.Prefetch(c, cmds)
}
func (h handler) Closed(c *server.Conn, err error) { h.s.Closed(c, err) }

// Listen opens the configured address, and the TLS port if one is set.
func (n *Node) Listen() (net.Listener, error) {
	cfg := n.Config()
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Bind, strconv.Itoa(cfg.Port)))
	if err != nil {
		return nil, err
	}
	if cfg.TLSPort == 0 {
		return ln, nil
	}
	tc, err := n.TLSConfig()
	if err != nil {
		ln.Close()
		return nil, err
	}
	raw, err := net.Listen("tcp", net.JoinHostPort(cfg.Bind, strconv.Itoa(cfg.TLSPort)))
	if err != nil {
		ln.Close()
		return nil, err
	}
	n.logger.Printf("TLS listening on %s (client certificates: %s)", raw.Addr(), cfg.TLSAuthClients)
	return server.JoinListeners(ln, tls.NewListener(raw, tc)), nil
}

// TLSConfig builds the crypto/tls configuration of the tls-* directives.
func (n *Node) TLSConfig() (*tls.Config, error) {
	cfg := n.Config()
	return server.TLSConfig(server.TLSFiles{CertFile: cfg.TLSCertFile, KeyFile: cfg.TLSKeyFile,
		CACertFile: cfg.TLSCACertFile, AuthClients: cfg.TLSAuthClients})
}

// ListenAndServe listens on the configured address and serves until Close.
func (n *Node) ListenAndServe() error {
	ln, err := n.Listen()
	if err != nil {
		return err
	}
	return n.Serve(ln)
}

// Serve serves connections from ln until Close or Shutdown, running the
// background loops meanwhile.
func (n *Node) Serve(ln net.Listener) error {
	if err := n.Prepare(); err != nil {
		ln.Close()
		return err
	}
	if !n.register(ln, func() { n.ln = ln }) {
		return nil
	}
	port := n.Config().Port
	if a, ok := ln.Addr().(*net.TCPAddr); ok {
		n.cmds.SetListenPort(a.Port)
		port = a.Port
	}
	if err := n.cluster.StartCluster(port); err != nil {
		ln.Close()
		return err
	}
	n.Start()
	n.servOnce.Do(func() { close(n.serving) })
	err := n.net.Serve(ln)
	if n.net.Draining() { // Shutdown: wait for the final snapshot
		<-n.done
		if p := n.shutErr.Load(); p != nil {
			return *p
		}
		return nil
	}
	select {
	case <-n.done:
		return nil
	default:
		return err
	}
}

// register records what a listener serves, with add, so that Close
// stops it; when the node has closed already it closes ln instead and
// reports false.
func (n *Node) register(ln net.Listener, add func()) bool {
	n.serveMu.Lock()
	defer n.serveMu.Unlock()
	select {
	case <-n.done: // closed before it started
		ln.Close()
		return false
	default:
	}
	add()
	return true
}

// Addr is the address the server listens on, once Serve has started.
func (n *Node) Addr() net.Addr {
	n.serveMu.Lock()
	defer n.serveMu.Unlock()
	if n.ln == nil {
		return nil
	}
	return n.ln.Addr()
}

// Close stops accepting, closes every connection and stops background work.
func (n *Node) Close() error {
	var err error
	n.closeOnce.Do(func() {
		n.serveMu.Lock()
		defer n.serveMu.Unlock()
		close(n.done)
		for _, g := range n.grpc {
			g.Stop()
		}
		for _, h := range n.rlsHTTP {
			h.Close()
		}
		n.cmds.Close()
		n.charger.close()
		err = n.net.Close()
	})
	return err
}

// Done is closed when the server closes.
func (n *Node) Done() <-chan struct{} { return n.done }

// Serving is closed once the node serves: Run or Serve has started every
// listener and background loop and accepts connections.
func (n *Node) Serving() <-chan struct{} { return n.serving }

// Shutdown stops the server gracefully: it stops accepting, lets every
// connection finish the commands it has already received and flush their
// replies (waiting at most grace), then calls OnShutdown(save), where the
// final snapshot is written, and closes. Serve returns once it is done,
// with OnShutdown's error if any.
func (n *Node) Shutdown(save bool, grace time.Duration) error {
	if err := n.Prepare(); err != nil {
		return err
	}
	if !n.shutting.CompareAndSwap(false, true) {
		<-n.done
		return nil
	}
	n.logger.Printf("shutting down: no new connections, finishing in-flight commands")
	n.net.Drain(grace)
	var err error
	if n.OnShutdown != nil {
		if err = n.OnShutdown(save); err != nil {
			n.logger.Printf("shutdown: %v", err)
			n.shutErr.Store(&err)
		}
	}
	n.Close()
	return err
}

// Start runs the background loops until Close; Serve calls it. A node
// serving only LocalClients calls it itself. Calls after the first do
// nothing.
//
// Active expiry runs ten cycles a second, each a bounded sample of every
// shard, one shard lock at a time, spread over ten slices of a tenth of
// the shards, one every 10 ms: a whole cycle at once held up every request
// in flight on a server with one core, ten times a second, which showed as
// the p99 at pipeline 1 (PIPELINE=1 bench/headline.sh). The automatic
// snapshot is checked every second (saveIfDue).
func (n *Node) Start() {
	n.startOnce.Do(func() {
		eng := n.Engine()
		const slices = 10
		per := (eng.Shards() + slices - 1) / slices
		// A replica leaves expiry to its primary, whose deletions reach
		// it in the stream, as Redis's replicas do.
		repl := n.cmds.Replication()
		go n.every(100*time.Millisecond/slices, func() {
			if !repl.IsReplica() {
				eng.ExpireShards(eng.Now(), 20, per)
			}
		})
		go n.every(time.Second, n.saveIfDue)
		go n.every(time.Second, n.cmds.ReplicationCron)
		go n.scripts.Watch()
		go n.paceGC()
		n.cmds.StartReplication()
		if err := n.persist.StartAOF(); err != nil {
			n.logger.Printf("append-only file: %v", err)
		}
	})
}

// saveIfDue starts a background snapshot when anything changed and the
// last one (before any, the start) is at least save seconds old.
func (n *Node) saveIfDue() {
	every := n.Config().Save
	if every <= 0 || n.persist.Dirty() == 0 {
		return
	}
	last := n.persist.LastSave()
	if last.IsZero() {
		last = n.cmds.Started()
	}
	if time.Duration(n.cmds.Clock().Now()-last.UnixNano()) >= time.Duration(every)*time.Second {
		n.persist.BGSave() // a save already running is fine
	}
}

// every runs fn every d of the engine's clock until Close.
func (n *Node) every(d time.Duration, fn func()) {
	t := n.Engine().Clock().NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-n.done:
			return
		case <-t.C():
			fn()
		}
	}
}
