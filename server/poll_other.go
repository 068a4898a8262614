//go:build !linux

package server

import "net"

// Elsewhere than Linux every connection has a goroutine of its own
// (poll_linux.go has the event loop).

type poller struct{}

type fdConn struct{ p *poller }

func newPollers(*Server, int) ([]*poller, error) { return nil, nil }
func stopPollers([]*poller)                      {}
func adopt(net.Conn, *poller) *fdConn            { return nil }
func (p *poller) add(*Conn, *fdConn)             {}
func (f *fdConn) release()                       {}
