package command

import (
	"bytes"

	"github.com/limitdb/limitdb/resp"
)

// LocalClient is a client with no socket: an in-process caller (a test, an
// embedding program) runs commands through it with the same table, gates,
// statistics and replies as a connection.
type LocalClient struct {
	*Client
	out bytes.Buffer
}

// NewLocalClient returns a client of s with no socket, authenticated as
// the default user when no password is required.
func (s *Server) NewLocalClient() *LocalClient {
	lc := &LocalClient{}
	lc.Client = s.newClient(nil)
	lc.w = resp.NewWriter(&lc.out)
	lc.Addr, lc.LAddr = "local", "local"
	lc.setAuthed(!s.authRequired())
	s.clients.add(lc.Client)
	return lc
}

// Do runs one command and returns its reply, in RESP, valid until the
// next call. Each call is a batch of its own: it reads the clock afresh.
func (lc *LocalClient) Do(args ...[]byte) []byte { return lc.Pipeline([][][]byte{args}) }

// Pipeline runs cmds as one batch, as the transport runs what one read of
// a connection delivered (one instant, statistics published once), and
// returns their replies, in RESP, valid until the next call.
func (lc *LocalClient) Pipeline(cmds [][][]byte) []byte {
	lc.out.Reset()
	for _, args := range cmds {
		lc.srv.handle(lc.Client, args)
	}
	lc.endBatch()
	lc.srv.EndRound()
	lc.w.Flush()
	return lc.out.Bytes()
}

// DoString is Do with string arguments.
func (lc *LocalClient) DoString(args ...string) []byte {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return lc.Do(b...)
}

// Close forgets the client: CLIENT LIST no longer shows it.
func (lc *LocalClient) Close() {
	lc.closing = true
	lc.srv.clients.remove(lc.Client)
}
