package command

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/redcon"
)

// Limits bound what one client can make the server hold or do. Every limit
// has a directive (flag, config file, CONFIG GET/SET) named as in Redis where
// Redis has one.
type Limits struct {
	MaxBulkLen       int64 // proto-max-bulk-len: longest argument, bytes
	MaxArgs          int   // proto-max-multibulk-len: most arguments in one command
	QueryBufferLimit int64 // client-query-buffer-limit: longest unfinished command, bytes
	MaxClients       int   // maxclients
	Timeout          int   // timeout: seconds a client may stay idle (0: forever)
	MaxKeyLen        int   // max-key-len: longest key, bytes
	WriteTimeout     int   // client-write-timeout: seconds a reply may wait on a client that does not read (0: forever)
}

// Limits for clients that have not authenticated yet, when a password is
// required: as in Redis, they cannot make the server buffer much.
const (
	unauthMaxArgs    = 10
	unauthMaxBulkLen = 16 << 10
)

// maxInline is the longest inline (telnet-style) command line, as in Redis.
const maxInline = 64 << 10

func defaultLimits() Limits {
	return Limits{
		MaxBulkLen:       512 << 20,
		MaxArgs:          1 << 20,
		QueryBufferLimit: 1 << 30,
		MaxClients:       10000,
		MaxKeyLen:        64 << 10,
		WriteTimeout:     60,
	}
}

func init() {
	reload := func(s *Server) error { s.guard.loadLimits(s.Config().Limits); return nil }
	size := func(name, help string, min int64, field func(c *Config) *int64) *Directive {
		return &Directive{Name: name, Help: help, Mutable: true, Apply: reload,
			Get: func(c *Config) string { return strconv.FormatInt(*field(c), 10) },
			Set: func(c *Config, v string) error {
				n, err := ParseSize(v)
				if err != nil {
					return err
				}
				if n < min {
					return fmt.Errorf("argument must be at least %d", min)
				}
				*field(c) = n
				return nil
			}}
	}
	integer := func(name, help string, min int, field func(c *Config) *int) *Directive {
		d := IntDirective(name, help, true, min, field)
		d.Apply = reload
		return d
	}
	RegisterDirective(size("proto-max-bulk-len", "longest argument a client may send (bytes; k, kb, m, mb, g, gb accepted)", 1<<10,
		func(c *Config) *int64 { return &c.MaxBulkLen }))
	RegisterDirective(integer("proto-max-multibulk-len", "most arguments in one command", 1,
		func(c *Config) *int { return &c.MaxArgs }))
	RegisterDirective(size("client-query-buffer-limit", "longest unfinished command a client may make the server hold (bytes)", 1<<20,
		func(c *Config) *int64 { return &c.QueryBufferLimit }))
	RegisterDirective(integer("maxclients", "most simultaneous client connections", 1,
		func(c *Config) *int { return &c.MaxClients }))
	RegisterDirective(integer("timeout", "close a client idle for this many seconds (0: never)", 0,
		func(c *Config) *int { return &c.Timeout }))
	RegisterDirective(integer("max-key-len", "longest key a command may name (bytes)", 1,
		func(c *Config) *int { return &c.MaxKeyLen }))
	RegisterDirective(integer("client-write-timeout", "close a client whose replies wait this many seconds unread (0: never)", 0,
		func(c *Config) *int { return &c.WriteTimeout }))
	registerGate(15, "key length", keyLengthGate)
}

// ParseSize reads a byte count as Redis's config does: a plain integer or one
// with a unit (k, kb, m, mb, g, gb; k is 1000 and kb 1024).
func ParseSize(v string) (int64, error) {
	s := strings.ToLower(strings.TrimSpace(v))
	mul := int64(1)
	for _, u := range []struct {
		suffix string
		mul    int64
	}{{"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}, {"g", 1e9}, {"m", 1e6}, {"k", 1e3}, {"b", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mul = strings.TrimSuffix(s, u.suffix), u.mul
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || (mul > 1 && n > (1<<62)/mul) {
		return 0, fmt.Errorf("argument must be a memory value")
	}
	return n * mul, nil
}

// keyLengthGate refuses a command naming a key longer than max-key-len
// before it reaches the keyspace.
func keyLengthGate(c *Client, cmd *Command, args [][]byte) bool {
	if cmd.FirstKey <= 0 {
		return true
	}
	max := c.srv.guard.limits().MaxKeyLen
	last := cmd.LastKey
	if last < 0 {
		last = len(args) + last
	}
	step := max1(cmd.Step)
	for i := cmd.FirstKey; i <= last && i < len(args); i += step {
		if len(args[i]) > max {
			c.Errf("key is too long (%d bytes; max-key-len is %d)", len(args[i]), max)
			return false
		}
	}
	return true
}

func max1(n int) int {
	if n < 1 {
		return 1
	}
	return n
}

// guard is the server's protection state: current limits, users, shutdown
// draining. It lives in Server so the hot path reads it with one atomic load.
type guard struct {
	lim      atomic.Pointer[Limits]
	acl      atomic.Pointer[aclTable]
	draining atomic.Bool
	drained  chan struct{} // closed once draining connections have gone
	once     sync.Once     // Prepare
	prepErr  error
	shutErr  atomic.Pointer[error]
}

func (g *guard) loadLimits(l Limits) { g.lim.Store(&l) }

func (g *guard) limits() *Limits {
	if l := g.lim.Load(); l != nil {
		return l
	}
	d := defaultLimits()
	g.lim.CompareAndSwap(nil, &d)
	return g.lim.Load()
}

// admitConn decides whether a new connection may stay: maxclients and
// protected mode. It answers the refusal itself; the caller closes.
func (s *Server) admitConn(c *Client) bool {
	if gc, ok := c.conn.NetConn().(*guardConn); ok {
		gc.client = c
	}
	c.authed = !s.authRequired()
	if s.guard.draining.Load() {
		c.conn.WriteError("ERR server is shutting down")
		return false
	}
	if !c.authed {
		// fall through: a password protects the server wherever it listens
	} else if s.Config().ProtectedMode && !isLoopback(c.conn.NetConn()) {
		s.rejectedConn.Add(1)
		c.conn.WriteError(errProtected)
		return false
	}
	max := s.guard.limits().MaxClients
	s.clientsMu.Lock()
	n := len(s.clients)
	s.clientsMu.Unlock()
	if n >= max {
		s.rejectedConn.Add(1)
		c.conn.WriteError("ERR max number of clients reached")
		return false
	}
	return true
}

const errProtected = "DENIED limitdb is running in protected mode because protected mode is enabled and no password is set for the default user. " +
	"In this mode connections are only accepted from the loopback interface. " +
	"If you want to connect from external computers, either set a password (--requirepass or --aclfile), " +
	"or disable protected mode with --protected-mode no (only if the network is trusted)."

// isLoopback reports whether the peer is on this machine.
func isLoopback(nc net.Conn) bool {
	if nc == nil {
		return true
	}
	switch a := nc.RemoteAddr().(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case *net.UnixAddr:
		return true
	case nil:
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

// ---- the connection guard -------------------------------------------------

// guardListener wraps every accepted connection in a guardConn.
type guardListener struct {
	net.Listener
	s *Server
}

func (l guardListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		if l.s.guard.draining.Load() {
			// Hold redcon's accept loop until the draining clients have
			// finished: when it returns it closes every connection.
			<-l.s.guard.drained
		}
		return nil, err
	}
	return &guardConn{Conn: nc, s: l.s}, nil
}

// guardConn checks the RESP framing of everything a client sends before
// the command reader (conn.go) sees it. The reader accepts any declared
// length and any argument count, grows its buffer for as long as a command
// is unfinished, and re-parses an unfinished command from its start on every
// read. (redcon's reader, used before, also overflowed its index arithmetic
// on a length near MaxInt64 and panicked the process.) The guard enforces
// the limits, answers a violation with Redis's protocol error and closes the
// connection, fills the reader's buffer while no command is complete (one
// re-parse per buffer size, not per network read), and hands the reader
// whole commands where it can so its buffer rewinds. Good input passes
// through byte for byte.
type guardConn struct {
	net.Conn
	s      *Server
	client *Client // set by admitConn; read only on the connection's goroutine

	sc      frameScanner
	split   split  // the last Read's commands, as the scan found them
	carry   []byte // bytes after the last whole command, held back for the next Read
	readErr error  // error to return once the bytes before it are delivered
	timed   bool   // a read deadline is set
	shaken  bool   // TLS handshake done
}

// inner is the connection under the guard, which a poller may replace
// with its own (poll_linux.go).
func (g *guardConn) inner() *net.Conn { return &g.Conn }

// handshakeTimeout bounds a TLS handshake, so a client that connects and
// says nothing cannot hold a connection forever.
const handshakeTimeout = 10 * time.Second

var errClosedByGuard = errors.New("connection closed by limit")

// errDraining ends a connection's reads once the server is shutting down;
// the connection then closes through lingerClose.
var errDraining = errors.New("server shutting down")

// lingerClose ends a connection whose client may still be sending: a
// pipeline that shutdown cut short. Closing a socket with unread input
// makes the kernel send RST, and a client's kernel drops the replies its
// application has not read yet when the RST arrives, so a client could miss
// replies to commands that did run (TestGracefulShutdown caught it). So the
// write side is closed first: the client reads every reply, then EOF. What
// it still sends is discarded for at most a second, then the socket closes.
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
	if g.readErr != nil {
		return 0, g.readErr
	}
	if g.s.guard.draining.Load() {
		return 0, errDraining
	}
	if !g.shaken {
		g.shaken = true
		if err := handshake(g.Conn); err != nil {
			return 0, err
		}
	}
	lim := g.s.guard.limits()
	if lim.Timeout > 0 {
		g.Conn.SetReadDeadline(time.Now().Add(time.Duration(lim.Timeout) * time.Second))
		g.timed = true
	} else if g.timed {
		g.Conn.SetReadDeadline(time.Time{})
		g.timed = false
	}
	if g.s.guard.draining.Load() { // checked again after setting the deadline; see Server.Shutdown
		return 0, errDraining
	}
	// Held-back bytes come first. They are scanned again from a command
	// boundary, under the limits of now: an AUTH or CONFIG SET just run may
	// have changed them, as in Redis, where each command is parsed after the
	// previous one ran.
	n := copy(p, g.carry)
	g.carry = g.carry[:copy(g.carry, g.carry[n:])]
	g.split.reset()
	scanned, boundary := 0, -1 // boundary: end of the last whole command in p[:n]
	for {
		if scanned < n {
			end, bad := g.sc.scan(p[scanned:n], g.maxima(lim), &g.split)
			if end >= 0 {
				boundary = scanned + end
			}
			scanned = n
			if bad != "" {
				if boundary >= 0 {
					// Run the whole commands first; judge the rest after them.
					break
				}
				g.Conn.SetWriteDeadline(time.Now().Add(time.Second))
				io.WriteString(g.Conn, "-ERR Protocol error: "+bad+"\r\n")
				g.readErr = errClosedByGuard
				return 0, g.readErr
			}
		}
		if boundary >= 0 || n == len(p) || len(g.carry) > 0 || g.readErr != nil {
			break
		}
		// No whole command yet: keep filling p, so redcon parses a long
		// command once per buffer size instead of once per network read.
		m, err := g.Conn.Read(p[n:])
		n += m
		if err == errWouldBlock { // a poller's socket with nothing more for now
			if n == 0 {
				return 0, err
			}
			break
		}
		if err != nil {
			g.readErr = err
		} else if m == 0 {
			break
		}
	}
	if boundary >= 0 && boundary < n {
		// Hold back the start of the next command so redcon's buffer ends
		// on a command boundary and rewinds after the pipeline.
		if len(g.carry) == 0 {
			g.carry = append(g.carry, p[boundary:n]...) // reuses the buffer: no allocation in a steady pipeline
		} else {
			g.carry = append(append(make([]byte, 0, n-boundary+len(g.carry)), p[boundary:n]...), g.carry...)
		}
		g.sc = frameScanner{}
		n = boundary
	}
	if n == 0 && g.readErr != nil {
		return 0, g.readErr
	}
	return n, nil
}

// maxima are the framing limits for this client now.
func (g *guardConn) maxima(lim *Limits) frameMax {
	// The clamp keeps the scanner's arithmetic far from overflow.
	m := frameMax{args: lim.MaxArgs, bulk: min(lim.MaxBulkLen, 1<<40), query: lim.QueryBufferLimit}
	if g.client != nil && !g.client.authed {
		m.args, m.bulk = min(m.args, unauthMaxArgs), min(m.bulk, unauthMaxBulkLen)
	}
	return m
}

func (g *guardConn) Write(p []byte) (int, error) {
	if wt := g.s.guard.limits().WriteTimeout; wt > 0 {
		g.Conn.SetWriteDeadline(time.Now().Add(time.Duration(wt) * time.Second))
	}
	return g.Conn.Write(p)
}

// frameMax are the limits the scanner enforces.
type frameMax struct {
	args  int
	bulk  int64
	query int64
}

// unlimited is no limit at all: the reader's own use of wholeCommand,
// behind a guard that has enforced the real ones.
var unlimited = frameMax{args: math.MaxInt, bulk: math.MaxInt64 / 2, query: math.MaxInt64}

// frameScanner follows RESP framing byte by byte across reads, keeping only
// counters: where in a command it is, how many arguments and bytes remain.
type frameScanner struct {
	state   scanState
	num     int64 // number being read
	neg     bool
	digits  int
	args    int64 // arguments left in this command
	body    int64 // bytes left in this argument, CRLF included
	pending int64 // bytes of the unfinished command
}

type scanState uint8

const (
	scanStart   scanState = iota // between commands
	scanCount                    // after '*': the argument count
	scanCountLF                  // after the count's '\r'
	scanDollar                   // expecting '$'
	scanLen                      // after '$': the argument length
	scanLenLF                    // after the length's '\r'
	scanBody                     // argument bytes and their CRLF
	scanInline                   // a telnet-style line
)

// scan consumes b. It returns the offset just past the last command that
// ended in b (-1 if none) and, if b breaks the protocol or a limit, the
// protocol error to answer. The commands its fast path finds from the
// start of b on go to sp, if not nil (see split).
func (sc *frameScanner) scan(b []byte, max frameMax, sp *split) (end int, bad string) {
	end = -1
	if sp != nil && (sc.state != scanStart || sp.upto > 0) {
		sp.broken = true // b does not start at a command, or is not a Read's start
	}
	for i := 0; i < len(b); i++ {
		ch := b[i]
		switch sc.state {
		case scanStart:
			sc.pending = 0
			if n := wholeCommand(b[i:], max, sp); n > 0 {
				i += n - 1
				end = i + 1
				continue
			}
			if sp != nil {
				sp.broken = true
			}
			if ch == '*' {
				sc.state, sc.num, sc.neg, sc.digits = scanCount, 0, false, 0
			} else {
				sc.state = scanInline
				i-- // the byte belongs to the line
				continue
			}
		case scanInline:
			if ch == '\n' {
				sc.state = scanStart
				end = i + 1
				continue
			}
			if sc.pending >= maxInline {
				return end, "too big inline request"
			}
		case scanCount, scanLen:
			isCount := sc.state == scanCount
			switch {
			case ch == '\r' && sc.digits > 0:
				if isCount {
					sc.state = scanCountLF
				} else {
					sc.state = scanLenLF
				}
			case ch == '-' && sc.digits == 0 && !sc.neg:
				sc.neg = true
			case ch >= '0' && ch <= '9':
				sc.digits++
				sc.num = sc.num*10 + int64(ch-'0')
				if isCount && (sc.num > int64(max.args)) {
					return end, "invalid multibulk length"
				}
				if !isCount && sc.num > max.bulk {
					return end, "invalid bulk length"
				}
			default:
				if isCount {
					return end, "invalid multibulk length"
				}
				return end, "invalid bulk length"
			}
		case scanCountLF:
			if ch != '\n' || sc.neg || sc.num == 0 {
				return end, "invalid multibulk length"
			}
			sc.args = sc.num
			sc.state = scanDollar
		case scanDollar:
			if ch != '$' {
				return end, fmt.Sprintf("expected '$', got '%s'", printable(ch))
			}
			sc.state, sc.num, sc.neg, sc.digits = scanLen, 0, false, 0
		case scanLenLF:
			if ch != '\n' || sc.neg {
				return end, "invalid bulk length"
			}
			sc.body = sc.num + 2
			sc.state = scanBody
		case scanBody:
			// Skip the argument's bytes in one step; check the CRLF.
			if sc.body > 2 {
				skip := min(sc.body-2, int64(len(b)-i))
				sc.body -= skip
				sc.pending += skip
				if sc.pending > max.query {
					return end, "client query buffer limit reached"
				}
				i += int(skip) - 1
				continue
			}
			if (sc.body == 2 && ch != '\r') || (sc.body == 1 && ch != '\n') {
				return end, "invalid bulk length"
			}
			sc.body--
			if sc.body == 0 {
				sc.args--
				if sc.args == 0 {
					sc.state = scanStart
					end = i + 1
					continue
				}
				sc.state = scanDollar
			}
		}
		sc.pending++
		if sc.pending > max.query {
			return end, "client query buffer limit reached"
		}
	}
	return end, ""
}

// wholeCommand is the scanner's fast path: if b starts with a complete,
// well-formed command within the limits, it returns the command's length;
// otherwise 0, and the byte-by-byte path takes over to wait for the rest or
// name the error. A pipeline of small commands is checked here at the cost
// of one pass over its length fields. Unless sp is nil or broken, the
// command, split into its arguments, is added to sp.
func wholeCommand(b []byte, max frameMax, sp *split) int {
	if len(b) < 4 || b[0] != '*' {
		return 0
	}
	count, i := fastLen(b, 1)
	if i < 0 || count < 1 || count > int64(max.args) {
		return 0
	}
	var args [][]byte
	record := sp != nil && !sp.broken
	if record {
		args = sp.args
	}
	first := len(args)
	for ; count > 0; count-- {
		if i >= len(b) || b[i] != '$' {
			return 0
		}
		size, j := fastLen(b, i+1)
		if j < 0 || size > max.bulk || int64(len(b)-j) < size+2 {
			return 0
		}
		end := j + int(size)
		if b[end] != '\r' || b[end+1] != '\n' {
			return 0
		}
		if record {
			args = append(args, b[j:end:end])
		}
		i = end + 2
	}
	if int64(i) > max.query {
		return 0
	}
	if record {
		sp.args = args
		sp.cmds = append(sp.cmds, redcon.Command{Raw: b[:i:i], Args: args[first:len(args):len(args)]})
		sp.upto += i
	}
	return i
}

// split is a run of commands wholeCommand read whole, one after the other,
// with their arguments, sliced from the bytes they came from. The reader
// keeps its parse in one (conn.go). A guard's Read keeps what its scan
// found from the start of the bytes the Read returns: when those commands
// cover everything the Read returned, the reader takes them instead of
// parsing the same bytes again (reader.read), since the guard has walked
// every length field already. perf put the two walks at 7.6% of the
// server's CPU at pipeline 16 (bench/README.md, "Fourth session").
type split struct {
	cmds   []redcon.Command
	args   [][]byte
	upto   int  // bytes the commands cover
	broken bool // a byte was read another way: the commands are not the Read's start
}

func (sp *split) reset() {
	clear(sp.cmds) // drop the last Read's slices of the buffer
	sp.cmds, sp.args, sp.upto, sp.broken = sp.cmds[:0], sp.args[:0], 0, false
}

// commands returns the commands of the last Read when they are exactly
// its n bytes.
func (g *guardConn) commands(n int) ([]redcon.Command, bool) {
	if g.split.broken || g.split.upto != n || n == 0 {
		return nil, false
	}
	return g.split.cmds, true
}

// fastLen reads the digits of a length starting at b[i] up to their CRLF,
// and returns the value and the index after the CRLF, or -1 when the
// digits are not a plain non-negative number of at most 18 digits or the
// line is incomplete.
func fastLen(b []byte, i int) (int64, int) {
	var n int64
	start := i
	for ; i < len(b) && i-start <= 18; i++ {
		ch := b[i]
		if ch == '\r' {
			if i == start || i+1 >= len(b) || b[i+1] != '\n' {
				return 0, -1
			}
			return n, i + 2
		}
		if ch < '0' || ch > '9' {
			return 0, -1
		}
		n = n*10 + int64(ch-'0')
	}
	return 0, -1
}

func printable(ch byte) string {
	if ch >= ' ' && ch <= '~' {
		return string(ch)
	}
	return fmt.Sprintf("\\x%02x", ch)
}
