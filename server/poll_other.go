//go:build !linux

package server

import "net"

// Elsewhere than Linux every connection has a goroutine of its own
// (poll_linux.go has the event loop): no connection has an fdConn, and
// none of these is ever called with one.

type poller struct{ mailed, roomy []*Conn }

type fdConn struct {
	p      *poller
	out    []byte
	shared bool
}

func newPollers(*Server, int) ([]*poller, error) { return nil, nil }
func stopPollers([]*poller)                      {}
func adopt(net.Conn, *poller) *fdConn            { return nil }
func (p *poller) add(*Conn, *fdConn)             {}
func (p *poller) post(func()) bool               { return false }
func (p *poller) beginLong(*Conn)                {}
func (p *poller) endLong(*Conn)                  {}
func (f *fdConn) release()                       {}
func (f *fdConn) pending() int                   { return 0 }
func (f *fdConn) dropOut()                       {}
func (f *fdConn) send([]byte) (int, bool, error) { return 0, false, nil }
