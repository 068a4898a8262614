package scripts

import (
	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/engine"
)

// The family's side of the native twins (scripting/twins): the host a
// twin runs on. A twin makes its script's writes without the gates each
// redis.call passes (caller.Call), so it runs only where none of them
// could refuse a write (command.Client.WritesUnchecked); elsewhere the
// script runs on the interpreter, which answers as Redis does.

// twinHost is a client as the twin of its script sees it (twins.Host).
type twinHost struct {
	c       *command.Client
	publish func(channel string, message []byte) int
}

func (h *twinHost) Now() int64 { return h.c.Now() }

func (h *twinHost) Engine() *engine.Engine { return h.c.Engine() }

// Exclusive runs fn in the client's transaction (a script queued in MULTI)
// or in one of its own that holds keys.
func (h *twinHost) Exclusive(keys [][]byte, fn func(tx *engine.Engine)) { h.c.Exclusive(keys, fn) }

func (h *twinHost) Publish(channel string, message []byte) { h.publish(channel, message) }
