package command

import (
	"errors"
	"io"
	"net"
	"runtime"
	"sync"

	"github.com/tidwall/redcon"
)

// limitdb runs its own connection loop and RESP reader instead of redcon's
// Server. redcon's reader copies every command and allocates its argument
// slice, two allocations per command plus the batch's growing []Command:
// BenchmarkReader measures it at about a third of a pipelined CL.THROTTLE's
// CPU. This reader parses a whole read in place and reuses its buffers, so
// a steady pipeline allocates nothing. Replies still go through redcon's
// Writer, and the framing rules, error texts and inline (telnet) commands
// are redcon's: TestReaderMatchesRedcon feeds both readers the same bytes.
//
// The price is a contract: a handler's args alias the connection's read
// buffer and are valid only until the handler returns. Anything kept longer
// (a queued MULTI command, a slow-log entry, a stored value or key) must be
// copied, as every handler already does.

// listener accepts connections and runs one goroutine per connection, like
// redcon.Server, with the same accept/handle/closed callbacks.
type listener struct {
	handle func(conn redcon.Conn, cmd redcon.Command)
	accept func(conn redcon.Conn) bool
	closed func(conn redcon.Conn, err error)

	mu    sync.Mutex
	ln    net.Listener
	conns map[*conn]struct{}
	done  bool

	yield bool // yield before each flush (see loop): only with one P

	loops bool // serve TCP connections from pollers (poll_linux.go; the event-loop directive)
	next  int  // the poller the next connection goes to
}

func newListener(handle func(redcon.Conn, redcon.Command), accept func(redcon.Conn) bool,
	closed func(redcon.Conn, error)) *listener {
	return &listener{handle: handle, accept: accept, closed: closed, conns: map[*conn]struct{}{},
		yield: runtime.GOMAXPROCS(0) == 1}
}

// Serve accepts connections from ln until Close; it then closes every
// connection.
func (l *listener) Serve(ln net.Listener) error {
	var ps []*poller
	if l.loops {
		var err error
		if ps, err = newPollers(l, runtime.GOMAXPROCS(0)); err != nil {
			return err
		}
	}
	l.mu.Lock()
	l.ln = ln
	l.mu.Unlock()
	defer func() {
		ln.Close()
		l.mu.Lock()
		for c := range l.conns {
			c.nc.Close()
		}
		l.conns = nil
		l.mu.Unlock()
		stopPollers(ps)
	}()
	for {
		nc, err := ln.Accept()
		if err != nil {
			l.mu.Lock()
			done := l.done
			l.mu.Unlock()
			if done || errors.Is(err, net.ErrClosed) {
				return nil
			}
			continue
		}
		var fc *fdConn
		if len(ps) > 0 {
			fc = adopt(nc, ps[l.next%len(ps)])
			l.next++
		}
		c := &conn{nc: nc, addr: nc.RemoteAddr().String(), wr: redcon.NewWriter(nc), rd: reader{rd: nc}}
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
		l.mu.Lock()
		if l.conns == nil { // closing
			l.mu.Unlock()
			refuse(nc.Close)
			continue
		}
		l.conns[c] = struct{}{}
		l.mu.Unlock()
		if !l.accept(c) {
			l.forget(c)
			refuse(c.Close) // after any refusal the server wrote
			continue
		}
		if fc != nil {
			fc.p.add(c, fc)
			continue
		}
		go l.serve(c)
	}
}

// Close stops accepting; Serve then closes every connection.
func (l *listener) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ln == nil {
		return errors.New("not serving")
	}
	l.done = true
	return l.ln.Close()
}

func (l *listener) forget(c *conn) {
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
}

// serve runs one connection on its own goroutine: read a batch of
// commands, answer each in order, flush once. A protocol error is answered
// and closes the connection, as in redcon.
func (l *listener) serve(c *conn) {
	err := l.loop(c)
	if errors.Is(err, errDraining) {
		lingerClose(c.nc)
		err = nil
	} else {
		c.nc.Close()
	}
	l.gone(c, err)
}

// gone forgets a closed connection and reports it to the server.
func (l *listener) gone(c *conn, err error) {
	l.forget(c)
	if err == io.EOF {
		err = nil
	}
	l.closed(c, err)
}

func (l *listener) loop(c *conn) error {
	for {
		if err := l.step(c); err != nil {
			return err
		}
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
		// hypervisor on this VM). perf: the wake-up's share of the
		// server's CPU fell from 9-11.5% to 4.3-4.8%; bench/headline.sh
		// medians in bench/README.md.
		//
		// Only with one P (a server pinned to one core, as in the
		// benchmarks): with several, connections already run in parallel,
		// and a yielding goroutine goes to the global run queue where
		// another P may take it, moving the connection to another core for
		// every batch (BenchmarkPipeline at -cpu 2: about 250 ns more per
		// command; at -cpu 1 no cost).
		if l.yield {
			runtime.Gosched()
		}
		if err := c.wr.Flush(); err != nil {
			return err
		}
	}
}

// step reads the next batch of commands and answers each in order, leaving
// the replies in c.wr for the caller to flush.
func (l *listener) step(c *conn) error {
	cmds, err := c.rd.read()
	if err != nil {
		var pe protocolError
		if errors.As(err, &pe) {
			c.wr.WriteError("ERR " + string(pe))
			c.wr.Flush()
		}
		return err
	}
	c.pending = cmds
	for len(c.pending) > 0 {
		cmd := c.pending[0]
		c.pending = c.pending[1:]
		l.handle(c, cmd)
	}
	if cl, ok := c.ctx.(*Client); ok {
		cl.endBatch()
	}
	return nil
}

// conn is one client connection; it implements redcon.Conn so handlers and
// reply helpers are unchanged.
type conn struct {
	nc      net.Conn
	addr    string
	wr      *redcon.Writer
	rd      reader
	ctx     any
	pending []redcon.Command // the rest of the batch being answered
	closed  bool

	fc    *fdConn // the socket, when a poller owns the connection
	dirty bool    // has replies for the poller to flush this round
}

func (c *conn) Close() error {
	c.wr.Flush()
	c.closed = true
	return c.nc.Close()
}
func (c *conn) Context() any                   { return c.ctx }
func (c *conn) SetContext(v any)               { c.ctx = v }
func (c *conn) SetReadBuffer(int)              {}
func (c *conn) RemoteAddr() string             { return c.addr }
func (c *conn) NetConn() net.Conn              { return c.nc }
func (c *conn) WriteString(s string)           { c.wr.WriteString(s) }
func (c *conn) WriteBulk(b []byte)             { c.wr.WriteBulk(b) }
func (c *conn) WriteBulkString(s string)       { c.wr.WriteBulkString(s) }
func (c *conn) WriteInt(n int)                 { c.wr.WriteInt(n) }
func (c *conn) WriteInt64(n int64)             { c.wr.WriteInt64(n) }
func (c *conn) WriteUint64(n uint64)           { c.wr.WriteUint64(n) }
func (c *conn) WriteError(msg string)          { c.wr.WriteError(msg) }
func (c *conn) WriteArray(n int)               { c.wr.WriteArray(n) }
func (c *conn) WriteNull()                     { c.wr.WriteNull() }
func (c *conn) WriteRaw(b []byte)              { c.wr.WriteRaw(b) }
func (c *conn) WriteAny(v any)                 { c.wr.WriteAny(v) }
func (c *conn) PeekPipeline() []redcon.Command { return c.pending }

// ReadPipeline takes the rest of the batch; the commands' arguments stay
// valid only until the current handler returns.
func (c *conn) ReadPipeline() []redcon.Command {
	cmds := c.pending
	c.pending = nil
	return cmds
}

// Detach is not supported: no limitdb command takes over its connection.
func (c *conn) Detach() redcon.DetachedConn { panic("resp: Detach is not supported") }

// errWouldBlock is a read from a poller's socket with nothing to read: the
// connection waits for its poller (poll_linux.go).
var errWouldBlock = errors.New("resp: would block")

// protocolError is a framing error answered as "ERR <text>" before the
// connection closes; the texts are redcon's.
type protocolError string

func (e protocolError) Error() string { return string(e) }

const (
	errMultiBulkLength protocolError = "Protocol error: invalid multibulk length"
	errBulkLength      protocolError = "Protocol error: invalid bulk length"
)

// reader parses RESP commands in place. Every complete command of a read
// becomes one redcon.Command whose Raw and Args slice the reader's buffer;
// both buffers are reused by the next read.
type reader struct {
	rd         io.Reader
	buf        []byte
	start, end int
	out        split // the commands parsed from buf and their arguments
}

// read returns the next batch: every complete command buffered, reading
// from the connection until there is at least one.
func (r *reader) read() ([]redcon.Command, error) {
	if r.buf == nil {
		r.buf = make([]byte, 4096)
	}
	for {
		cmds, err := r.parse()
		if err != nil || len(cmds) > 0 {
			return cmds, err
		}
		if r.start == r.end {
			r.start, r.end = 0, 0
			if len(r.buf) > 64<<10 { // let a one-off large command go
				r.buf = make([]byte, 4096)
			}
		} else if r.end == len(r.buf) {
			if r.start > 0 { // move the unfinished command to the front
				r.end = copy(r.buf, r.buf[r.start:r.end])
				r.start = 0
			}
			if r.end == len(r.buf) {
				nb := make([]byte, 2*len(r.buf))
				copy(nb, r.buf[:r.end])
				r.buf = nb
			}
		}
		aligned := r.start == r.end
		n, err := r.rd.Read(r.buf[r.end:])
		if g, ok := r.rd.(*guardConn); ok && aligned && err == nil {
			if cmds, ok := g.commands(n); ok { // the guard split them already
				r.end += n
				r.start = r.end
				return cmds, nil
			}
		}
		r.end += n
		if err != nil && n == 0 {
			return nil, err
		}
	}
}

// parse slices every complete command out of buf[start:end].
func (r *reader) parse() ([]redcon.Command, error) {
	r.out.cmds, r.out.args, r.out.upto = r.out.cmds[:0], r.out.args[:0], 0
	b := r.buf[r.start:r.end]
	for len(b) > 0 {
		var n int
		var err error
		if b[0] == '*' {
			n, err = r.multibulk(b)
		} else {
			n, err = r.inline(b)
		}
		if err != nil {
			return nil, err // as redcon: the batch's earlier commands are dropped
		}
		if n == 0 {
			break
		}
		b = b[n:]
		r.start += n
	}
	return r.out.cmds, nil
}

// multibulk parses one "*<n>\r\n$<len>\r\n<arg>\r\n..." command at the start
// of b and returns its length, or 0 if b holds only part of it. The checks
// and their order are redcon's, so that the same bytes get the same error.
func (r *reader) multibulk(b []byte) (int, error) {
	// The fast path: a complete command of plain lengths, what clients
	// send, parsed as the guard's fast path parses it (limits.go).
	if n := wholeCommand(b, unlimited, &r.out); n > 0 {
		return n, nil
	}
	i := 1
	for i < len(b) && b[i] != '\n' {
		i++
	}
	if i == len(b) {
		return 0, nil
	}
	if b[i-1] != '\r' {
		return 0, errMultiBulkLength
	}
	count, ok := parseLen(b[1 : i-1])
	if !ok || count <= 0 {
		return 0, errMultiBulkLength
	}
	first := len(r.out.args)
	for j := 0; j < count; j++ {
		i++
		if i >= len(b) {
			r.out.args = r.out.args[:first]
			return 0, nil
		}
		if b[i] != '$' {
			return 0, protocolError("Protocol error: expected '$', got '" + string(b[i]) + "'")
		}
		si := i
		for i < len(b) && b[i] != '\n' {
			i++
		}
		if i == len(b) {
			r.out.args = r.out.args[:first]
			return 0, nil
		}
		if b[i-1] != '\r' {
			return 0, errBulkLength
		}
		size, ok := parseLen(b[si+1 : i-1])
		if !ok || size < 0 {
			return 0, errBulkLength
		}
		if size >= len(b)-i-2 { // i+size+2 >= len(b), without overflow
			r.out.args = r.out.args[:first]
			return 0, nil
		}
		if b[i+size+2] != '\n' || b[i+size+1] != '\r' {
			return 0, errBulkLength
		}
		r.out.args = append(r.out.args, b[i+1:i+1+size:i+1+size])
		i += size + 2
	}
	args := r.out.args[first:len(r.out.args):len(r.out.args)]
	r.out.cmds = append(r.out.cmds, redcon.Command{Raw: b[: i+1 : i+1], Args: args})
	return i + 1, nil
}

// inline parses one telnet-style line with redcon's own parser (quotes and
// escapes included); such commands are rare and may allocate. A blank line
// is consumed without a command.
func (r *reader) inline(b []byte) (int, error) {
	i := 0
	for i < len(b) && b[i] != '\n' {
		i++
	}
	if i == len(b) {
		return 0, nil
	}
	cmd, err := redcon.Parse(b[:i+1])
	switch {
	case err == nil:
		r.out.cmds = append(r.out.cmds, cmd)
	case err.Error() == "incomplete command": // a line of spaces: no arguments
	default:
		return 0, protocolError(err.Error())
	}
	return i + 1, nil
}

// parseLen is redcon's length parser: an optional minus sign and digits
// ("" is 0). Digits beyond int's range are refused instead of wrapping.
func parseLen(b []byte) (int, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	n := 0
	for _, ch := range b {
		if ch < '0' || ch > '9' || n > (1<<62)/10 {
			return 0, false
		}
		n = n*10 + int(ch-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}
