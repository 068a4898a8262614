package server

import (
	"errors"
	"io"
	"net"
	"time"

	"github.com/limitdb/limitdb/resp"
)

// ServeStream serves one client whose bytes come from rd and whose replies
// go to w, through the same read-answer-flush loop as a socket's, until rd
// ends; it returns the error that ended it (io.EOF at rd's end). It
// measures parsing, dispatch and replies without the kernel
// (BenchmarkPipeline in node/).
func (s *Server) ServeStream(rd io.Reader, w io.Writer) error {
	nc := &guardConn{Conn: streamConn{rd, w}, s: s}
	c := &Conn{nc: nc, addr: "127.0.0.1:1", laddr: "127.0.0.1:0", wr: resp.NewWriter(nc), rd: resp.NewReader(nc)}
	nc.c = c
	if !s.h.Open(c) {
		c.Close()
		return errors.New("server: connection refused")
	}
	err := s.loop(c)
	c.setOmem(0)
	c.setRmem(0)
	s.h.Closed(c, err)
	return err
}

// streamConn is a net.Conn over a reader and a writer.
type streamConn struct {
	io.Reader
	io.Writer
}

func (streamConn) Close() error                     { return nil }
func (streamConn) LocalAddr() net.Addr              { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }
func (streamConn) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
func (streamConn) SetDeadline(time.Time) error      { return nil }
func (streamConn) SetReadDeadline(time.Time) error  { return nil }
func (streamConn) SetWriteDeadline(time.Time) error { return nil }
