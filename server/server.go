// Package server is limitdb's transport: it accepts connections (plain TCP
// and TLS), runs each one's read-answer-flush loop on an event loop of its
// own (Linux) or a goroutine, enforces the protocol limits and timeouts,
// and drains connections on shutdown. It hands every command to a Handler
// and knows nothing of what a command does.
//
// It imports resp (the wire format) and clock, and nothing else of the
// project: never the command layer or the engine.
package server

import (
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/resp"
)

// Handler is what the transport calls; the command layer implements it.
// Every call for one connection comes from that connection's goroutine or
// event loop, one at a time and in order. An event loop may go on on
// another goroutine while a command that said it may run long
// (Conn.BeginLong) runs: that command's connection is then served by the
// goroutine running it until it hands the connection back to the loop,
// and each call still happens after the one before it.
type Handler interface {
	// Open is called for each accepted connection before it is read. It
	// returns false to refuse it, having written its refusal to
	// c.Writer(); the transport then flushes and closes it.
	Open(c *Conn) bool
	// Command runs one command, writing its reply to c.Writer(). args
	// alias the connection's read buffer and are valid only until it
	// returns.
	Command(c *Conn, args [][]byte)
	// EndBatch is called after the commands of one read have run, before
	// their replies are flushed.
	EndBatch(c *Conn)
	// EndRound is called once the commands of a round have run and
	// before any of their replies is flushed: once per round of an event
	// loop (every connection it served), or after each batch where a
	// connection has a goroutine of its own. Work that every write of the
	// round must see done before its reply leaves, done once for all of
	// them: waking replicas, writing the append-only file.
	EndRound()
	// Closed is called once the connection is gone.
	Closed(c *Conn, err error)
}

// Prefetcher is a Handler that prepares for a batch of commands before
// they run one by one: the transport gives it every batch of more than one
// command first. It must not reply or change anything; it may read ahead
// what the commands will read.
type Prefetcher interface {
	Prefetch(c *Conn, cmds []resp.Command)
}

// Limits bound what one client can make the server hold or wait for.
type Limits struct {
	Frame        resp.Limits   // for an authenticated client
	Timeout      time.Duration // a client idle this long is closed (0: never)
	WriteTimeout time.Duration // a reply unread this long closes the client (0: never)
	Output       [Classes]OutputLimit
}

// The classes of client Limits.Output bounds, as Redis's
// client-output-buffer-limit names them.
const (
	ClassNormal = iota
	ClassReplica
	ClassPubSub
	Classes
)

// OutputLimit bounds the replies a client has not read: over Hard bytes
// it is closed, over Soft bytes for SoftFor it is closed too (0: no bound).
type OutputLimit struct {
	Hard, Soft int64
	SoftFor    time.Duration
}

// Limits for clients that have not authenticated yet, when a password is
// required: as in Redis, they cannot make the server buffer much.
const (
	unauthMaxArgs = 10
	unauthMaxBulk = 16 << 10
)

// handshakeTimeout bounds a TLS handshake, so a client that connects and
// says nothing cannot hold a connection forever.
const handshakeTimeout = 10 * time.Second

// Server accepts connections and serves them with its Handler.
type Server struct {
	h   Handler
	pf  Prefetcher // h, when it is one
	clk clock.Clock
	lim atomic.Pointer[Limits]

	mu    sync.Mutex
	ln    net.Listener
	conns map[*Conn]struct{}
	done  bool

	yield bool // yield before each flush (see loop): only with one P
	loops bool // serve TCP connections from pollers (poll_linux.go)
	next  int  // the poller the next connection goes to

	// Logf, when set, logs what the transport has to say (accept errors).
	Logf func(format string, args ...any)

	backoff   time.Duration // after an accept error; 0 after a success
	warned    bool          // accept errors have been logged
	lastWarn  time.Duration // on clk's Mono, when they were last logged
	acceptErr int           // accept errors since then

	clientMem atomic.Int64 // what every connection holds: unsent replies and read buffers

	draining atomic.Bool
	drained  chan struct{} // closed once draining connections have gone
	left     chan struct{} // a connection closed (Drain waits on it)
}

// New returns a server for h. With eventLoop, plain TCP connections on
// Linux are served by event loops (poll_linux.go); otherwise each
// connection has a goroutine. clk times the drain's grace.
func New(h Handler, lim Limits, eventLoop bool, clk clock.Clock) *Server {
	pf, _ := h.(Prefetcher)
	s := &Server{h: h, pf: pf, clk: clk, conns: map[*Conn]struct{}{}, loops: eventLoop,
		yield: runtime.GOMAXPROCS(0) == 1, drained: make(chan struct{}), left: make(chan struct{}, 1)}
	s.SetLimits(lim)
	return s
}

// SetLimits replaces the limits; every connection's next read uses them.
func (s *Server) SetLimits(l Limits) { s.lim.Store(&l) }

func (s *Server) limits() *Limits { return s.lim.Load() }

// Serve accepts connections from ln until Close; it then closes every
// connection.
func (s *Server) Serve(ln net.Listener) error {
	var ps []*poller
	if s.loops {
		var err error
		if ps, err = newPollers(s, runtime.GOMAXPROCS(0)); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.ln = ln
	stopped := s.done || s.draining.Load() // Close or Drain came first: they found no listener to close
	s.mu.Unlock()
	if stopped {
		ln.Close()
	}
	defer func() {
		ln.Close()
		s.mu.Lock()
		for c := range s.conns {
			c.nc.Close()
		}
		s.conns = nil
		s.mu.Unlock()
		stopPollers(ps)
	}()
	for {
		raw, err := ln.Accept()
		if err != nil {
			if s.draining.Load() {
				// Wait for the draining clients to finish: returning
				// closes every connection.
				<-s.drained
			}
			s.mu.Lock()
			done := s.done
			s.mu.Unlock()
			if done || errors.Is(err, net.ErrClosed) {
				return nil
			}
			s.acceptFailed(err)
			continue
		}
		s.backoff = 0
		nc := &guardConn{Conn: raw, s: s}
		var fc *fdConn
		if len(ps) > 0 {
			fc = adopt(nc, ps[s.next%len(ps)])
			s.next++
		}
		c := &Conn{nc: nc, addr: raw.RemoteAddr().String(), laddr: raw.LocalAddr().String(),
			wr: resp.NewWriter(nc), rd: resp.NewReader(nc)}
		nc.c = c
		// refuse closes a connection no poller or goroutine will serve.
		refuse := func(close func() error) {
			if fc != nil {
				fc.p = nil // never the poller's: closed here
			}
			close()
			if fc != nil {
				fc.release()
			}
		}
		s.mu.Lock()
		if s.conns == nil { // closing
			s.mu.Unlock()
			refuse(nc.Close)
			continue
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		if s.draining.Load() {
			c.wr.Error("ERR server is shutting down")
			s.forget(c)
			refuse(c.Close)
			continue
		}
		if !s.h.Open(c) {
			s.forget(c)
			refuse(c.Close) // after any refusal the handler wrote
			continue
		}
		if fc != nil {
			fc.p.add(c, fc)
			continue
		}
		go s.serve(c)
	}
}

// acceptFailed waits after a failed accept, from 5 ms doubling up to 1 s,
// as net/http does: out of file descriptors (EMFILE), accept fails at once
// on every call while connections wait, and retrying at once would spin a
// core. It logs the error at most once a minute, with how often it
// happened.
func (s *Server) acceptFailed(err error) {
	s.acceptErr++
	if now := s.clk.Mono(); s.Logf != nil && (!s.warned || now-s.lastWarn >= time.Minute) {
		s.Logf("accepting a connection failed (%d times since the last report): %v; "+
			"out of file descriptors? raise ulimit -n or lower maxclients", s.acceptErr, err)
		s.warned, s.lastWarn, s.acceptErr = true, now, 0
	}
	s.backoff = min(max(2*s.backoff, 5*time.Millisecond), time.Second)
	s.clk.Sleep(s.backoff)
}

// Addr is the address Serve listens on, or nil before it starts.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Close stops accepting; Serve then closes every connection.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	if s.ln == nil {
		return nil
	}
	return s.ln.Close()
}

// Conns is the number of open connections.
func (s *Server) Conns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Drain stops accepting and lets every connection finish the commands it
// has already received and flush their replies, waiting until no
// connection is left or grace has passed on the server's clock. Serve
// returns after Close.
func (s *Server) Drain(grace time.Duration) {
	if !s.draining.CompareAndSwap(false, true) {
		return
	}
	s.mu.Lock()
	if s.ln != nil {
		s.ln.Close() // the accept loop now waits for drained
	}
	conns := make([]*Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	// A connection blocked reading gets a past deadline and ends; one that
	// is running commands finishes its pipeline, flushes, and ends at its
	// next read (guardConn.Read checks draining after setting its deadline).
	for _, c := range conns {
		c.nc.SetReadDeadline(time.Unix(1, 0))
	}
	deadline := s.clk.Mono() + grace
	tick := s.clk.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for s.Conns() > 0 && s.clk.Mono() < deadline {
		select {
		case <-s.left:
		case <-tick.C():
		}
	}
	close(s.drained)
}

// Draining reports whether Drain has begun.
func (s *Server) Draining() bool { return s.draining.Load() }

func (s *Server) forget(c *Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	select {
	case s.left <- struct{}{}:
	default:
	}
}

// serve runs one connection on its own goroutine: read a batch of
// commands, answer each in order, flush once. A protocol error is answered
// and closes the connection.
func (s *Server) serve(c *Conn) {
	err := s.loop(c)
	if errors.Is(err, errDraining) {
		lingerClose(c.nc)
		err = nil
	} else {
		c.nc.Close()
	}
	s.gone(c, err)
}

// ClientMemory is what the connections hold, replies not yet sent and
// read buffers, as of the end of each one's last batch: maxmemory counts
// it, as Redis counts its clients' buffers.
func (s *Server) ClientMemory() int64 { return s.clientMem.Load() }

// gone forgets a closed connection and reports it to the handler.
func (s *Server) gone(c *Conn, err error) {
	c.setOmem(0)
	c.setRmem(0)
	s.forget(c)
	if err == io.EOF {
		err = nil
	}
	s.h.Closed(c, err)
}

func (s *Server) loop(c *Conn) error {
	for {
		if err := s.step(c); err != nil {
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() || !c.hasMail() {
				return err
			}
			// Woken by Push, not timed out: deliver the mail below.
			c.nc.rearm()
		}
		c.deliverMail()
		if c.closed {
			return nil
		}
		// Let the other connections that have input run their commands
		// before this one writes, so that the replies of a round leave
		// close together, as Redis writes all its clients' replies after
		// its event loop has run their commands. A client woken by one
		// reply then finds the next ones waiting instead of being woken
		// again for each: waking a sleeping CPU is the costliest part of a
		// loopback write (sock_def_readable, an interrupt through the
		// hypervisor on a VM); perf shows the wake-up's share of the
		// server's CPU halved (docs/performance-history.md).
		//
		// Only with one P (a server pinned to one core, as in the
		// benchmarks): with several, connections already run in parallel,
		// and a yielding goroutine goes to the global run queue where
		// another P may take it, moving the connection to another core for
		// every batch (go test -bench Pipeline -cpu 2 ./node/: about
		// 250 ns more per command; at -cpu 1 no cost).
		if s.yield {
			runtime.Gosched()
		}
		if err := c.wr.Flush(); err != nil {
			return err
		}
		c.setOmem(0) // the socket took every byte: Write returned
	}
}

// step reads the next batch of commands and answers each in order, leaving
// the replies in c's writer for the caller to flush.
func (s *Server) step(c *Conn) error {
	// The idle timeout runs from the last command served: bytes of an
	// unfinished command do not restart it.
	c.nc.armIdle(c.rd.Partial() && !c.served)
	if c.fc == nil && c.hasMail() {
		c.nc.wake() // mail pushed since the last delivery: do not block reading
	}
	cmds, err := c.rd.Read(c.frameLimits())
	c.served = len(cmds) > 0
	if err != nil {
		var pe resp.ProtocolError
		if errors.As(err, &pe) {
			c.wr.Error("ERR " + string(pe))
			c.wr.Flush()
		}
		return err
	}
	if len(cmds) > 1 && s.pf != nil {
		s.pf.Prefetch(c, cmds)
	}
	for i := range cmds {
		if c.closed {
			break
		}
		s.h.Command(c, cmds[i].Args)
	}
	s.h.EndBatch(c)
	if c.fc == nil { // a goroutine of its own: the round is this batch
		s.h.EndRound()
	}
	return s.checkOutput(c)
}

// errOutputLimit closes a client over its output buffer limit.
var errOutputLimit = errors.New("output buffer limit reached")

// checkOutput measures the replies c has not been sent yet and closes it,
// dropping them, when they pass its class's limit: the hard bound at once,
// the soft one after SoftFor. The event loop also checks the soft bound
// while a client's replies wait (poller.expire).
func (s *Server) checkOutput(c *Conn) error {
	c.setRmem(int64(c.rd.Size()))
	size := int64(c.wr.Buffered()) + c.unsent()
	c.setOmem(size)
	lim := s.limits().Output[c.class]
	switch {
	case lim.Hard > 0 && size > lim.Hard:
	case lim.Soft > 0 && size > lim.Soft:
		now := s.clk.Mono()
		if c.softSince == 0 {
			c.softSince = now
			return nil
		}
		if now-c.softSince < lim.SoftFor {
			return nil
		}
	default:
		c.softSince = 0
		return nil
	}
	if s.Logf != nil {
		s.Logf("client addr=%s closed for overcoming of output buffer limits (%d bytes of replies unread)", c.addr, size)
	}
	c.wr.Reset()
	if c.fc != nil {
		c.fc.dropOut() // dropped, not sent
	}
	c.closed = true
	c.setOmem(0)
	return errOutputLimit
}
