package server

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/limitdb/limitdb/resp"
)

// Conn is one client connection as the handler sees it: its reply writer,
// its addresses and a slot for the handler's own state. Its methods are
// for the connection's own goroutine unless they say otherwise.
//
// The transport parses commands in place (resp.Reader): a handler's args
// alias the connection's read buffer and are valid only until the handler
// returns. Anything kept longer (a queued MULTI command, a slow-log entry,
// a stored value or key) must be copied.
type Conn struct {
	nc     *guardConn
	addr   string
	laddr  string
	wr     *resp.Writer
	rd     *resp.Reader
	ctx    any
	closed bool
	authed bool // the client may send commands of the full limits
	class  int  // for the output buffer limit: ClassNormal unless the handler says

	omem      atomic.Int64  // replies not yet sent, bytes (CLIENT LIST's omem)
	rmem      atomic.Int64  // the read buffer's size
	softSince time.Duration // on the clock's Mono, since the soft output limit is passed
	served    bool          // the last read gave commands (the idle timeout restarts)

	streaming atomic.Bool // Push writes to the socket itself (Stream)

	mailMu sync.Mutex
	mail   []byte // pushed (Push), not yet in the reply buffer
	spare  []byte // the last mail delivered, for the next to fill; the deliverer's own

	fc    *fdConn // the socket, when a poller owns the connection
	dirty bool    // has replies for the poller to flush this round

	// A long command (BeginLong) and the hand-over of its loop
	// (poll_linux.go): the goroutine running the connection's commands
	// owns the first four, the loop's goroutine away.
	longDepth int    // BeginLong calls not yet ended
	longOn    bool   // the outermost BeginLong told the poller
	longSeq   uint64 // the poller's long count it set
	detached  bool   // the loop was taken over during the long command: hand the connection back
	away      bool   // out of the poller until handed back
}

// Writer is where replies go; the transport flushes it after each batch.
func (c *Conn) Writer() *resp.Writer { return c.wr }

// Close flushes the replies written so far and closes the connection; the
// rest of the batch is not run.
func (c *Conn) Close() error {
	c.wr.Flush()
	c.closed = true
	return c.nc.Close()
}

// Push queues b, whole RESP values (a pub/sub message), for the client:
// it is written after the replies of the commands the connection is
// running, in the order pushed. Safe from any goroutine. On a connection
// that carries a stream (Stream) it is written to the socket at once.
func (c *Conn) Push(b []byte) {
	if c.streaming.Load() {
		c.send(b)
		return
	}
	c.mailMu.Lock()
	first := len(c.mail) == 0
	c.mail = append(c.mail, b...)
	c.mailMu.Unlock()
	if !first {
		return // a wake-up is already on its way
	}
	if c.fc != nil { // the event loop delivers it between rounds
		p := c.fc.p
		p.post(func() { p.mailed = append(p.mailed, c) })
		return
	}
	// A goroutine blocked reading: a deadline in the past wakes it, and
	// its loop delivers the mail (Server.loop).
	c.nc.wake()
}

// Stream makes the connection carry a stream that other goroutines write,
// a replica's link: from now on Push writes to the socket at once, from
// the pushing goroutine, as much as the socket takes without waiting; the
// rest waits on the connection, counted in OutputMemory, and its event
// loop writes it as the socket makes room. Pushes keep their order; the
// connection's own replies, if it still sends commands, go between two
// pushes, never inside one. What was written before (replies, mail) is
// flushed first. Only from Handler.Command, on the connection's
// goroutine. A connection with a goroutine of its own (TLS) keeps its
// pushes for that goroutine to write.
func (c *Conn) Stream() {
	if c.fc == nil || c.streaming.Load() {
		return
	}
	c.deliverMail()
	c.fc.shared = true // before any other goroutine writes: they do once Push sees streaming
	c.wr.Flush()
	c.streaming.Store(true)
}

// send writes b for Push on a streaming connection.
func (c *Conn) send(b []byte) {
	waiting, started, err := c.fc.send(b)
	if err != nil {
		c.Kill()
		return
	}
	c.setOmem(int64(waiting))
	if started { // the socket is full: its poller writes the rest when it has room
		p := c.fc.p
		p.post(func() { p.roomy = append(p.roomy, c) })
	}
}

// deliverMail moves pushed bytes into the reply buffer; it reports
// whether there were any. The connection's own goroutine or event loop
// calls it.
//
// Mail alternates between two buffers: a replica's link is mailed the
// stream round after round, hundreds of kilobytes at a time, and a new
// buffer each round would be garbage each round. A buffer larger than
// maxSpareMail is not kept.
func (c *Conn) deliverMail() bool {
	c.mailMu.Lock()
	mail := c.mail
	c.mail = c.spare[:0]
	c.mailMu.Unlock()
	if len(mail) == 0 {
		c.spare = mail
		return false
	}
	c.wr.Raw(mail)
	c.spare = nil
	if cap(mail) <= maxSpareMail {
		c.spare = mail
	}
	return true
}

// maxSpareMail is the largest mail buffer a connection keeps.
const maxSpareMail = 4 << 20

// hasMail reports whether bytes were pushed and not delivered yet.
func (c *Conn) hasMail() bool {
	c.mailMu.Lock()
	defer c.mailMu.Unlock()
	return len(c.mail) > 0
}

// Kill closes the connection from any goroutine: the client is served
// nothing more once its current command returns.
func (c *Conn) Kill() { c.nc.Close() }

// BeginLong says that the command the connection is running may run long:
// a script, a walk of the whole keyspace, a wait for another server. Until
// the matching EndLong, the connection's event loop may go on serving its
// other connections from another goroutine once the command has run for a
// moment (a tenth of a second of the server's clock), instead of waiting
// for it; the connection's replies keep their order. Calls nest. Only from
// Handler.Command, on the connection's goroutine; a connection with a
// goroutine of its own holds up no other, and the calls do nothing.
func (c *Conn) BeginLong() {
	c.longDepth++
	if c.longDepth == 1 && c.fc != nil && !c.detached {
		c.longOn = true
		c.fc.p.beginLong(c)
	}
}

// EndLong ends what BeginLong began.
func (c *Conn) EndLong() {
	if c.longDepth == 0 {
		return
	}
	c.longDepth--
	if c.longDepth == 0 && c.longOn {
		c.longOn = false
		c.fc.p.endLong(c)
	}
}

// Context is the handler's state for the connection.
func (c *Conn) Context() any { return c.ctx }

// SetContext sets the handler's state for the connection.
func (c *Conn) SetContext(v any) { c.ctx = v }

// RemoteAddr is the client's address, host:port.
func (c *Conn) RemoteAddr() string { return c.addr }

// LocalAddr is the server's address the client connected to.
func (c *Conn) LocalAddr() string { return c.laddr }

// SetAuthenticated lifts the limits for clients that have not
// authenticated (a password is required and AUTH has not succeeded).
func (c *Conn) SetAuthenticated(ok bool) { c.authed = ok }

// SetClass sets which of Limits.Output applies to the client.
func (c *Conn) SetClass(class int) { c.class = class }

// OutputMemory is the bytes of replies the client has not been sent yet,
// pushed bytes not yet in the reply buffer included; safe from any
// goroutine.
func (c *Conn) OutputMemory() int64 {
	c.mailMu.Lock()
	mail := len(c.mail)
	c.mailMu.Unlock()
	return c.omem.Load() + int64(mail)
}

// Memory is what the connection holds: its unsent replies and its read
// buffer. Safe from any goroutine, as of the end of its last batch.
func (c *Conn) Memory() int64 { return c.omem.Load() + c.rmem.Load() }

// setOmem and setRmem record what the connection holds, and keep the
// server's total (Server.ClientMemory) in step.
func (c *Conn) setOmem(v int64) { c.nc.s.clientMem.Add(v - c.omem.Swap(v)) }
func (c *Conn) setRmem(v int64) { c.nc.s.clientMem.Add(v - c.rmem.Swap(v)) }

// unsent is the replies a poller's socket has not taken yet.
func (c *Conn) unsent() int64 {
	if c.fc == nil {
		return 0
	}
	return int64(c.fc.pending())
}

// Loopback reports whether the client is on this machine.
func (c *Conn) Loopback() bool {
	switch a := c.nc.RemoteAddr().(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case *net.UnixAddr, nil:
		return true
	default:
		host, _, err := net.SplitHostPort(a.String())
		if err != nil {
			return false
		}
		ip := net.ParseIP(host)
		return ip != nil && ip.IsLoopback()
	}
}

// frameLimits are the limits of the client's next read.
func (c *Conn) frameLimits() resp.Limits {
	lim := c.nc.s.limits().Frame
	if !c.authed {
		lim.UnauthArgs, lim.UnauthBulk = unauthMaxArgs, unauthMaxBulk
	}
	return lim
}
