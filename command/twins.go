package command

import (
	"github.com/limitdb/limitdb/engine"
)

// The command layer's side of the native twins (scripting/twins): the
// host a twin runs on, and whether it may run at all.

// twinHost is a client as the twin of its script sees it (twins.Host).
type twinHost Client

func (h *twinHost) Now() int64 { return (*Client)(h).Now() }

func (h *twinHost) Engine() *engine.Engine { return (*Client)(h).Engine() }

// Exclusive runs fn in the client's transaction (a script queued in MULTI)
// or in one of its own that holds keys.
func (h *twinHost) Exclusive(keys [][]byte, fn func(tx *engine.Engine)) {
	if h.tx != nil {
		fn(h.tx)
		return
	}
	h.srv.eng.Exclusive(keys, false, fn)
}

func (h *twinHost) Publish(channel string, message []byte) { h.srv.Publish(channel, message) }

// nativeAdmits reports whether a twin may run for c. A twin makes its
// script's writes without the gates each redis.call passes
// (scriptCaller.Call), so where one of them could refuse a write (a
// read-only replica, writes stopped by a failed save, a user whose
// commands are limited, a keyspace at maxmemory) the script runs on the
// interpreter, which answers as Redis does.
func (s *Server) nativeAdmits(c *Client) bool {
	if s.readOnly.Load() || s.refuseWrites.Load() {
		return false
	}
	if !unrestricted(s.guard.acl.Load(), c) {
		return false
	}
	max, limited := s.memoryLimit()
	return !limited || s.eng.UsedBytes() <= max
}
