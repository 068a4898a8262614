package replication

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/limitdb/limitdb/persistence"
)

// Link states, as ROLE names them on a replica.
const (
	LinkConnect    = "connect"    // waiting to connect
	LinkConnecting = "connecting" // connected, in the handshake
	LinkSync       = "sync"       // receiving a snapshot
	LinkConnected  = "connected"  // applying the stream
)

// link is a replica's connection to its primary: it connects, hands
// shakes, resynchronises and applies the stream, and starts over after
// any failure (at once, then backing off: nextRetry) until stopped.
type link struct {
	m    *Manager
	host string
	port int

	state    atomic.Value // string: LinkConnect...
	lastIO   atomic.Int64 // Mono of the last byte from the primary
	downMono atomic.Int64 // Mono at which the link went down (or was made)
	upSince  atomic.Int64 // Mono at which the current connection began applying the stream (0: not yet)

	mu   sync.Mutex // guards conn and writes to it, clientID and clientMade
	conn net.Conn
	// The master client (MasterClient): its ID, 0 until the stream first
	// flows, and when it was made on the clock's Mono.
	clientID   int64
	clientMade time.Duration
	closed     bool
	done       chan struct{}
	ended      chan struct{}
}

func newLink(m *Manager, host string, port int) *link {
	l := &link{m: m, host: host, port: port, done: make(chan struct{}), ended: make(chan struct{})}
	l.state.Store(LinkConnect)
	l.downMono.Store(int64(m.clk.Mono()))
	return l
}

// stop closes the link and waits until it applies nothing more.
func (l *link) stop() {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.done)
		if l.conn != nil {
			l.conn.Close()
		}
	}
	l.mu.Unlock()
	<-l.ended
}

func (l *link) run() {
	defer close(l.ended)
	var wait time.Duration // before the next attempt
	for {
		l.upSince.Store(0)
		err := l.connection()
		now := l.m.clk.Mono()
		if l.state.Load() == LinkConnected || l.state.Load() == LinkSync {
			l.downMono.Store(int64(now))
		}
		l.state.Store(LinkConnect)
		select {
		case <-l.done:
			return
		default:
		}
		if l.upSince.Load() != 0 {
			wait = 0
		}
		if wait == 0 {
			l.m.logf("replication link to %s:%d: %v; reconnecting", l.host, l.port, err)
		} else {
			l.m.logf("replication link to %s:%d: %v; retrying in %v", l.host, l.port, err, wait)
			select {
			case <-l.done:
				return
			case <-l.m.clk.After(wait):
			}
		}
		wait = nextRetry(wait)
	}
}

// A replica whose link applied the stream reconnects at once when it
// fails, as Redis 7 does, so that it asks for the stream while the
// primary's backlog still holds where it stopped; when an attempt fails
// before the stream flows it waits retryFirst, then twice as long each
// time up to retryMax (Redis retries from its once-a-second cron).
const (
	retryFirst = 50 * time.Millisecond
	retryMax   = time.Second
)

// nextRetry is the wait after an attempt that waited wait and failed.
func nextRetry(wait time.Duration) time.Duration {
	return min(max(2*wait, retryFirst), retryMax)
}

// Up reports whether the link applies the stream.
func (l *link) up() bool { return l.state.Load() == LinkConnected }

// connection is one connection to the primary: handshake,
// resynchronisation, stream.
func (l *link) connection() error {
	self := l.m.host.Self()
	timeout := self.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	d := net.Dialer{Timeout: min(timeout, 5*time.Second)}
	c, err := d.Dial("tcp", net.JoinHostPort(l.host, strconv.Itoa(l.port)))
	if err != nil {
		return err
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		c.Close()
		return errors.New("stopped")
	}
	l.conn = c
	l.mu.Unlock()
	defer c.Close()
	l.state.Store(LinkConnecting)
	br := bufio.NewReaderSize(c, 256<<10)
	deadline := func() { c.SetReadDeadline(time.Now().Add(timeout)) }
	ask := func(args ...string) (string, error) {
		if err := l.send(args...); err != nil {
			return "", err
		}
		deadline()
		line, err := br.ReadString('\n')
		if err != nil {
			return "", err
		}
		return strings.TrimRight(line, "\r\n"), nil
	}
	// PING: a primary that wants a password answers NOAUTH, which is fine.
	if r, err := ask("PING"); err != nil {
		return err
	} else if r != "+PONG" && !strings.HasPrefix(r, "-NOAUTH") && !strings.HasPrefix(r, "-NOPERM") {
		return fmt.Errorf("PING answered %q", r)
	}
	if self.Pass != "" {
		args := []string{"AUTH", self.Pass}
		if self.User != "" {
			args = []string{"AUTH", self.User, self.Pass}
		}
		if r, err := ask(args...); err != nil {
			return err
		} else if r != "+OK" {
			return fmt.Errorf("AUTH answered %q", r)
		}
	}
	handshake := [][]string{{"REPLCONF", "listening-port", strconv.Itoa(self.ListeningPort)}}
	if self.AnnounceIP != "" {
		handshake = append(handshake, []string{"REPLCONF", "ip-address", self.AnnounceIP})
	}
	handshake = append(handshake, []string{"REPLCONF", "capa", "eof", "capa", "psync2"})
	for _, h := range handshake {
		if r, err := ask(h...); err != nil {
			return err
		} else if r != "+OK" {
			return fmt.Errorf("%s answered %q", strings.Join(h, " "), r)
		}
	}
	id, next := "?", int64(-1) // no history a primary may continue, as Redis asks then
	if l.m.knownHistory() {
		id, _, _ = l.m.stream.IDs()
		next = l.m.stream.Offset() + 1
	}
	r, err := ask("PSYNC", id, strconv.FormatInt(next, 10))
	if err != nil {
		return err
	}
	switch f := strings.Fields(r); {
	case len(f) == 3 && f[0] == "+FULLRESYNC":
		off, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || off < 0 {
			return fmt.Errorf("PSYNC answered %q", r)
		}
		l.state.Store(LinkSync)
		if err := l.loadSnapshot(br, deadline); err != nil {
			return err
		}
		l.m.stream.Reset(f[1], off)
		l.m.setKnown(true)
		l.newMasterClient() // a new one after a full copy, as Redis makes
		l.m.logf("full resynchronisation from %s:%d done: replication ID %s, offset %d", l.host, l.port, f[1], off)
	case len(f) >= 1 && f[0] == "+CONTINUE":
		if len(f) == 2 {
			l.m.stream.Adopt(f[1])
		}
		l.mu.Lock()
		first := l.clientID == 0
		l.mu.Unlock()
		if first {
			l.newMasterClient()
		}
		l.m.logf("partial resynchronisation from %s:%d at offset %d", l.host, l.port, next-1)
	default:
		return fmt.Errorf("PSYNC answered %q", r)
	}
	l.state.Store(LinkConnected)
	l.upSince.Store(int64(max(l.m.clk.Mono(), 1)))
	l.lastIO.Store(int64(l.m.clk.Mono()))
	acks := make(chan struct{})
	defer close(acks)
	go l.ackEverySecond(acks)
	return l.apply(br, deadline)
}

// newMasterClient gives the link a new master client.
func (l *link) newMasterClient() {
	id := l.m.newClientID()
	l.mu.Lock()
	l.clientID, l.clientMade = id, l.m.clk.Mono()
	l.mu.Unlock()
}

// loadSnapshot reads the snapshot the primary sends as "$len\r\n" and len
// bytes (newlines before it are keep-alives), verifies and decodes it
// whole, and only then loads it in place of the keyspace: a primary that
// announces more than it sends, or sends a snapshot that does not verify,
// leaves the replica's data as it was.
func (l *link) loadSnapshot(br *bufio.Reader, deadline func()) error {
	var header string
	for {
		deadline()
		line, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		if header = strings.TrimRight(line, "\r\n"); header != "" {
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimPrefix(header, "$"), 10, 64)
	if !strings.HasPrefix(header, "$") || err != nil || n < 0 {
		return fmt.Errorf("bad snapshot header %q", header)
	}
	data, err := readSnapshot(br, n, func() {
		deadline()
		l.lastIO.Store(int64(l.m.clk.Mono()))
	})
	if err != nil {
		return fmt.Errorf("reading the snapshot: %w", err)
	}
	eng := l.m.eng
	snap, err := persistence.Decode(data, eng.Now())
	if err != nil {
		return fmt.Errorf("the primary's snapshot does not load, the keyspace is kept: %w", err)
	}
	l.m.setKnown(false) // from here until the stream starts over, the keyspace is no history
	if _, err := snap.Restore(eng, l.m.host.Sections(), true); err != nil {
		return fmt.Errorf("loading the primary's snapshot: %w", err)
	}
	return nil
}

// snapshotPiece is the most a replica reads of a snapshot at once. The
// buffer grows with the bytes that arrive, never with the size the primary
// announced: a primary can make a replica hold what it sends, not what it
// claims it will.
const snapshotPiece = 1 << 20

// readSnapshot reads n bytes from r in pieces of at most snapshotPiece,
// calling progress before each read.
func readSnapshot(r io.Reader, n int64, progress func()) ([]byte, error) {
	var data []byte
	for int64(len(data)) < n {
		piece := int(min(n-int64(len(data)), snapshotPiece))
		start := len(data)
		data = slices.Grow(data, piece)[:start+piece]
		progress()
		k, err := io.ReadFull(r, data[start:])
		data = data[:start+k]
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, fmt.Errorf("the primary announced %d bytes and sent %d", n, len(data))
			}
			return nil, err
		}
	}
	return data, nil
}

// apply applies the stream until the connection fails or the link stops.
// The records wholly in the socket's buffer are parsed and applied where
// they lie and go to the local stream together, before an
// acknowledgement; a record the buffer holds only the start of is read
// whole by itself.
func (l *link) apply(br *bufio.Reader, deadline func()) error {
	ap := persistence.Applier{Eng: l.m.eng, Sections: l.m.host.Sections()}
	var raw []byte
	var args [][]byte
	var now int64
	for {
		if br.Buffered() == 0 {
			deadline()
			if _, err := br.Peek(1); err != nil {
				return linkError(err)
			}
			// The clocks are read once per read from the socket, not
			// per record: under load a read holds hundreds of records.
			l.lastIO.Store(int64(l.m.clk.Mono()))
			now = l.m.eng.Now()
		}
		window, _ := br.Peek(br.Buffered())
		done, getack := 0, false
		for done < len(window) && !getack {
			var n int
			var err error
			if args, n, err = persistence.ParseRecord(window[done:], args[:0]); err != nil {
				l.m.stream.Append(window[:done])
				return err
			}
			if n == 0 {
				break
			}
			getack = l.applyRecord(&ap, now, args)
			done += n
		}
		if done == 0 { // the buffer ends inside the record
			deadline()
			var err error
			if args, raw, err = persistence.ReadRecord(br, raw[:0], args[:0]); err != nil {
				return linkError(err)
			}
			l.lastIO.Store(int64(l.m.clk.Mono()))
			now = l.m.eng.Now()
			getack = l.applyRecord(&ap, now, args)
			l.m.stream.Append(raw)
		} else {
			l.m.stream.Append(window[:done])
			br.Discard(done)
		}
		if getack {
			if err := l.ack(); err != nil {
				return err
			}
		}
	}
}

// applyRecord applies one record of the stream; it reports whether the
// record asks for an acknowledgement (REPLCONF GETACK).
func (l *link) applyRecord(ap *persistence.Applier, now int64, args [][]byte) (getack bool) {
	if err := ap.Apply(now, args); err != nil {
		l.m.logf("replication: a record from the primary was not applied: %v", err)
	}
	return len(args) >= 2 && persistence.EqualFold(args[0], persistence.VerbReplconf) && persistence.EqualFold(args[1], "GETACK")
}

// linkError is the error that ended the stream from the primary.
func linkError(err error) error {
	if errors.Is(err, io.EOF) {
		return errors.New("the primary closed the connection")
	}
	return err
}

// ack sends REPLCONF ACK with the offset applied.
func (l *link) ack() error {
	return l.send("REPLCONF", "ACK", strconv.FormatInt(l.m.stream.Offset(), 10))
}

func (l *link) ackEverySecond(stop chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-l.m.clk.After(time.Second):
			if l.ack() != nil {
				return
			}
		}
	}
}

// send writes one command to the primary.
func (l *link) send(args ...string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return errors.New("not connected")
	}
	l.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := l.conn.Write(persistence.AppendCommand(nil, args...))
	return err
}

// LinkStatus is what INFO and ROLE say of a replica's link.
type LinkStatus struct {
	Host           string
	Port           int
	State          string // LinkConnect, ...
	Up             bool
	LastIOSeconds  int64 // since the last byte from the primary; -1 when never
	DownSeconds    int64 // since the link went down; -1 when up
	SyncInProgress bool
}
