package server

import (
	"errors"
	"io"
	"net"
	"time"
)

// guardConn is the socket as the reader and writer use it: it completes
// the TLS handshake under a deadline before the first read, keeps the idle
// and write deadlines from the limits of now, and ends reads once the
// server drains.
type guardConn struct {
	net.Conn
	s      *Server
	c      *Conn
	timed  bool // a read deadline is set
	shaken bool // TLS handshake done
}

// inner is the connection under the guard, which a poller may replace
// with its own (poll_linux.go).
func (g *guardConn) inner() *net.Conn { return &g.Conn }

// errDraining ends a connection's reads once the server is shutting down;
// the connection then closes through lingerClose.
var errDraining = errors.New("server shutting down")

// lingerClose ends a connection whose client may still be sending: a
// pipeline that shutdown cut short. Closing a socket with unread input
// makes the kernel send RST, and a client's kernel drops the replies its
// application has not read yet when the RST arrives, so a client could miss
// replies to commands that did run (TestGracefulShutdown). So the write
// side is closed first: the client reads every reply, then EOF. What it
// still sends is discarded for at most a second, then the socket closes.
func lingerClose(nc net.Conn) {
	if g, ok := nc.(*guardConn); ok {
		nc = g.Conn // past the guard, which answers draining with errDraining
	}
	if cw, ok := nc.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
		nc.SetReadDeadline(time.Now().Add(time.Second))
		io.Copy(io.Discard, io.LimitReader(nc, 64<<20))
	}
	nc.Close()
}

func (g *guardConn) Read(p []byte) (int, error) {
	if g.s.draining.Load() {
		return 0, errDraining
	}
	if !g.shaken {
		g.shaken = true
		if err := handshake(g.Conn); err != nil {
			return 0, err
		}
	}
	if g.s.draining.Load() { // checked again after armIdle set the deadline; see Server.Drain
		return 0, errDraining
	}
	return g.Conn.Read(p)
}

// wake makes a read blocked on the socket return at once (a timeout), so
// that the connection's goroutine delivers pushed mail; rearm undoes it.
func (g *guardConn) wake() { g.Conn.SetReadDeadline(time.Unix(1, 0)) }

// rearm sets the read deadline again after a wake: none, or the idle
// timeout's.
func (g *guardConn) rearm() {
	g.Conn.SetReadDeadline(time.Time{})
	g.timed = false
	g.armIdle(false)
}

// armIdle starts the idle timeout unless partial: the client then has
// timeout to send a whole command. The caller says partial while a command
// is arriving and none has been served since the timeout started, so a
// client that trickles a byte a second is closed like an idle one.
func (g *guardConn) armIdle(partial bool) {
	t := g.s.limits().Timeout
	switch {
	case t > 0 && !partial:
		g.Conn.SetReadDeadline(time.Now().Add(t))
		g.timed = true
	case t == 0 && g.timed:
		g.Conn.SetReadDeadline(time.Time{})
		g.timed = false
	}
}

func (g *guardConn) Write(p []byte) (int, error) {
	if wt := g.s.limits().WriteTimeout; wt > 0 {
		g.Conn.SetWriteDeadline(time.Now().Add(wt))
	}
	return g.Conn.Write(p)
}
