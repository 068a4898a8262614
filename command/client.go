package command

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/engine/gcra"
	"github.com/limitdb/limitdb/engine/limit"
	"github.com/limitdb/limitdb/resp"
)

// Client is one connection's state: identity, protocol version, and the
// reply writer. Handlers run on the connection's own goroutine; fields other
// goroutines read (CLIENT LIST, INFO) are atomics or behind mu.
type Client struct {
	srv  *Server
	conn Conn // nil for a client with no socket (LocalClient)
	w    *resp.Writer

	ID      int64
	Addr    string
	LAddr   string
	Created time.Time

	proto   int // 2 or 3
	authed  bool
	user    string
	closing bool
	killed  atomic.Bool // by CLIENT KILL: run no more commands

	calling bool // a command called from inside another (Admit, Call): calls.go

	internal bool // the server's own charges for Envoy's rate limit service: past the ACL (LocalClient.SetUser)

	mu      sync.Mutex
	name    string
	libName string
	libVer  string

	lastActive atomic.Int64 // Unix ns
	lastCmd    atomic.Pointer[Command]
	cmdCount   atomic.Int64

	scratch []byte // reused by reply formatting
	failed  bool   // the current command answered with an error
	bt      batch  // per-batch clock and stats (batch.go)

	prefetched uint32 // what Prefetch read, kept so that its reads stay in the program

	multi *multiState    // MULTI and WATCH (multi.go); nil until first used
	tx    *engine.Engine // the transaction's handle while EXEC runs; nil otherwise

	class atomic.Int32  // the config.Class* SetClass set: CLIENT KILL TYPE and PING read it
	mode  atomic.Uint32 // Mode bits: what modeGate checks
	slots []any         // families' per-connection state (Slot), one place per slot from the start
	// multiShown is what CLIENT LIST, on another connection's goroutine,
	// says of multi: 1 + the commands queued inside MULTI, 0 outside.
	multiShown atomic.Int32

	afterRun func(c *Client) // what runs once the current command has (AfterRun)

	blk *blocked     // while a command waits to answer (blocking.go)
	rh  *replicaHold // while replies wait for replicas (replicawait.go)
	// askReplicas is what the running command asked its reply to wait
	// for (WaitReplicas): replicas that must acknowledge its effect.
	askReplicas int
}

// eng is the keyspace as the current command must reach it: through the
// transaction's handle while EXEC runs its queue, the engine otherwise.
func (c *Client) Engine() *engine.Engine {
	if c.tx != nil {
		return c.tx
	}
	return c.srv.env.Engine
}

// Name is the name set with CLIENT SETNAME.
func (c *Client) Name() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.name
}

// Proto is the RESP version the client chose with HELLO (2 by default).
func (c *Client) Proto() int { return c.proto }

// ReplyProto is the RESP version of the reply being written: the
// client's, or inside a script's redis.call the script's (2 unless it chose
// 3 with redis.setresp), whatever its client speaks.
func (c *Client) ReplyProto() int { return c.w.Proto }

// Scratch is an empty buffer with the capacity c keeps between commands:
// a handler may read a value into it and reply from it without allocating.
// SetScratch hands the buffer back, grown, for the next command.
func (c *Client) Scratch() []byte { return c.scratch[:0] }

// SetScratch keeps b's storage as c's scratch buffer (see Scratch).
func (c *Client) SetScratch(b []byte) { c.scratch = b[:0] }

// Server is the server the client is connected to.
func (c *Client) Server() *Server { return c.srv }

// Close ends the connection once the current replies are flushed.
func (c *Client) Close() {
	c.closing = true
	if c.conn != nil {
		c.conn.Close()
	}
}

// HasConn reports whether c has a connection: a LocalClient has none, so
// nothing can be pushed to it later (a message, a MONITOR line).
func (c *Client) HasConn() bool { return c.conn != nil }

// Deliver queues whole RESP values (a message, a MONITOR line) on c's
// connection, outside any reply; any goroutine may call it. A client with
// no connection drops them.
func (c *Client) Deliver(b []byte) {
	if c.conn != nil {
		c.conn.Push(b)
	}
}

// StreamOutput makes c's connection carry a stream that other goroutines
// Deliver to: each Deliver is written to the socket at once, from the
// delivering goroutine, where the transport can (Conn.Stream). Only from
// c's own command.
func (c *Client) StreamOutput() {
	if c.conn != nil {
		c.conn.Stream()
	}
}

// OutputMemory is the bytes queued for c's connection that its socket has
// not taken yet, replies and Deliver's messages; any goroutine may call
// it. 0 without a connection.
func (c *Client) OutputMemory() int64 {
	if c.conn == nil {
		return 0
	}
	return c.conn.OutputMemory()
}

// SetClass sets which client-output-buffer-limit class (config.ClassNormal,
// ClassPubSub...) applies to c's connection. As Redis's client type, it is
// also what CLIENT KILL TYPE matches and what makes PING answer a
// subscribed RESP2 client with an array.
func (c *Client) SetClass(class int) {
	c.class.Store(int32(class))
	if c.conn != nil {
		c.conn.SetClass(class)
	}
}

// setProto switches the client's replies to RESP2 or RESP3.
func (c *Client) setProto(p int) {
	c.proto = p
	c.w.Proto = p
}

// ---- replies --------------------------------------------------------------

// OK writes +OK.
func (c *Client) OK() { c.w.Simple("OK") }

// Simple writes a simple string.
func (c *Client) Simple(s string) { c.w.Simple(s) }

// Int writes an integer.
func (c *Client) Int(n int64) { c.w.Int(n) }

// IntOrError writes err as the reply when there is one, else n.
func (c *Client) IntOrError(n int64, err error) {
	if err != nil {
		c.Error(err)
		return
	}
	c.Int(n)
}

// Bulk writes a bulk string.
func (c *Client) Bulk(b []byte) { c.w.Bulk(b) }

// BulkString writes a bulk string.
func (c *Client) BulkString(s string) { c.w.BulkString(s) }

// Array writes an array header of n elements.
func (c *Client) Array(n int) { c.w.Array(n) }

// Null writes the null bulk string (RESP3 null).
func (c *Client) Null() { c.w.Null() }

// Push writes the header of an out-of-band reply of n values: a RESP3
// push, an array in RESP2 (pub/sub's replies and messages).
func (c *Client) Push(n int) { c.w.Push(n) }

// NullArray writes the null array (RESP3 null).
func (c *Client) NullArray() { c.w.NullArray() }

// Map writes a map header of n pairs: a RESP3 map, or a flat array in RESP2.
func (c *Client) Map(n int) { c.w.Map(n) }

// Set writes a set header: a RESP3 set, or an array in RESP2.
func (c *Client) Set(n int) { c.w.Set(n) }

// Double writes a float: a RESP3 double, or a bulk string in RESP2.
func (c *Client) Double(f float64) { c.w.Double(f) }

// Verbatim writes text: a RESP3 verbatim string, or a bulk string in RESP2.
func (c *Client) Verbatim(s string) { c.w.Verbatim(s) }

// Raw writes bytes that are already RESP.
func (c *Client) Raw(b []byte) { c.w.Raw(b) }

// Err writes an error reply. msg must start with an error code such as ERR
// or WRONGTYPE; newlines are replaced so the reply stays one line.
func (c *Client) Err(msg string) {
	c.failed = true
	if c.multi != nil {
		c.multi.queueError()
	}
	c.w.Error(msg)
}

// Errf writes an ERR reply from a format.
func (c *Client) Errf(format string, a ...any) { c.Err("ERR " + fmt.Sprintf(format, a...)) }

// Error writes err as a Redis-style error, mapping engine errors to their
// Redis codes.
func (c *Client) Error(err error) {
	switch {
	case errors.Is(err, engine.ErrWrongType):
		c.Err(ErrWrongType)
	case errors.Is(err, ErrSyntax):
		c.Err("ERR syntax error")
	case errors.Is(err, ErrNotInt):
		c.Err("ERR value is not an integer or out of range")
	case errors.Is(err, gcra.ErrZeroRate), errors.Is(err, gcra.ErrOverflow):
		c.Err("ERR " + err.Error())
	default:
		var we WireError
		if errors.As(err, &we) {
			c.Err(string(we))
			return
		}
		c.Err("ERR " + err.Error())
	}
}

// Limit counts the decision r on key (CountLimitOn) and writes the uniform
// limiter reply; with delay it adds LB.QUEUE's sixth field.
func (c *Client) Limit(key []byte, r limit.Result, withDelay bool) {
	n := 5
	if withDelay {
		n = 6
	}
	limited := int64(0)
	if r.Limited {
		limited = 1
	}
	c.CountLimitOn(key, r)
	// One WriteRaw of the whole reply instead of six writer calls: the
	// reply is a third of a pipelined CL.THROTTLE's CPU otherwise.
	b := append(c.scratch[:0], '*', byte('0'+n), '\r', '\n')
	b = resp.AppendInt(b, limited)
	b = resp.AppendInt(b, r.Limit)
	b = resp.AppendInt(b, r.Remaining)
	b = resp.AppendInt(b, r.RetryAfter)
	b = resp.AppendInt(b, r.ResetAfter)
	if withDelay {
		b = resp.AppendInt(b, r.Delay)
	}
	c.scratch = b
	c.w.Raw(b)
}

const ErrWrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"

// WireError is an error whose text is already a complete Redis error reply.
type WireError string

func (e WireError) Error() string { return string(e) }
