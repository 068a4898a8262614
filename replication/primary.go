package replication

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/limitdb/limitdb/clock"
)

// Sink is a replica's connection as the primary sees it: bytes pushed in
// order, from any goroutine.
type Sink interface {
	Push(b []byte)
	Kill()
	// Unsent is the bytes pushed that the replica's socket has not taken
	// yet; safe from any goroutine.
	Unsent() int64
	// Limit is the output buffer limit of the replica class
	// (client-output-buffer-limit replica), read at each check so that
	// CONFIG SET applies at once.
	Limit() OutputLimit
}

// OutputLimit bounds what a replica has not read of the stream: over Hard
// bytes it is dropped at once, over Soft bytes for SoftFor it is dropped
// too (0 turns a bound off).
type OutputLimit struct {
	Hard, Soft int64
	SoftFor    time.Duration
}

// Replica states, as INFO's slaveN:state names them.
const (
	StateWaitBGSave = "wait_bgsave" // its snapshot is being made
	StateSendBulk   = "send_bulk"   // its snapshot is being sent
	StateOnline     = "online"      // it receives the stream
)

// Replica is one replica attached to this primary.
type Replica struct {
	m      *Manager
	sink   Sink
	IP     string // as it announced itself (REPLCONF ip-address) or its connection's
	Port   int    // its listening port (REPLCONF listening-port)
	reader *Reader
	full   bool  // it gets a snapshot first
	from   int64 // the offset of the stream it gets first

	state   atomic.Value // string
	acked   atomic.Bool  // it acknowledged since it had its snapshot: WAIT counts it
	ack     atomic.Int64 // the offset it acknowledged (REPLCONF ACK)
	ackMono atomic.Int64 // when, on the clock's Mono
	done    chan struct{}
	acks    chan struct{} // it sent REPLCONF ACK: it reads, so its socket may have room
	once    sync.Once

	// sendMu orders the pushes of the stream: the event loops' rounds
	// (Manager.Publish) and serve's own push through it. sent is the
	// offset pushed up to.
	sendMu   sync.Mutex
	sent     atomic.Int64
	streamed bool // Publish pushes to it; m.mu's

	// Since when (on the clock's Mono) its unread stream is past the soft
	// limit, when softOver; serve's own.
	softSince time.Duration
	softOver  bool
}

// State is its INFO state.
func (r *Replica) State() string { return r.state.Load().(string) }

// Ack records REPLCONF ACK off. An acknowledgement before the replica
// was sent its whole snapshot, or of an offset past what it was sent, is
// ignored: a replica cannot have applied what it was not given, and WAIT
// counts only what replicas hold.
func (r *Replica) Ack(off int64) {
	select {
	case r.acks <- struct{}{}:
	default:
	}
	if r.State() != StateOnline || off < r.from || off > r.reader.Pos() {
		return
	}
	r.ack.Store(off)
	r.acked.Store(true)
	r.ackMono.Store(int64(r.m.clk.Mono()))
	if r.m.min.short.Load() {
		r.m.refreshGood()
	}
	r.m.checkWaiters()
}

// Offset is the offset it acknowledged.
func (r *Replica) Offset() int64 { return r.ack.Load() }

// Lag is the seconds since its last acknowledgement.
func (r *Replica) Lag() int64 {
	return int64((r.m.clk.Mono() - time.Duration(r.ackMono.Load())) / time.Second)
}

// Attach makes the connection sink a replica that asked "PSYNC id next":
// it answers +CONTINUE and streams from next when the backlog holds it,
// or +FULLRESYNC, a snapshot and the stream from the snapshot's offset.
// ip and port are what the replica announced. The replica is served from a
// goroutine of its own until Detach or its connection fails.
func (m *Manager) Attach(sink Sink, ip string, port int, id string, next int64) *Replica {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.startJournal()
	r := &Replica{m: m, sink: sink, IP: ip, Port: port, done: make(chan struct{}), acks: make(chan struct{}, 1)}
	r.ackMono.Store(int64(m.clk.Mono()))
	if r.reader = m.stream.Continue(id, next); r.reader != nil {
		r.from = next - 1
		r.acked.Store(true) // it holds the stream up to from already
		r.state.Store(StateOnline)
		m.syncPartialOK.Add(1)
		m.logf("replica %s:%d continues from offset %d (partial resynchronisation)", ip, port, r.from)
	} else {
		r.reader, r.from = m.stream.Tail(false)
		r.full = true
		r.state.Store(StateWaitBGSave)
		m.syncFull.Add(1)
		if id != "?" {
			m.syncPartialErr.Add(1)
		}
		m.logf("replica %s:%d asked for %s:%d: full resynchronisation from offset %d", ip, port, id, next, r.from)
	}
	r.ack.Store(r.from)
	r.sent.Store(r.from)
	m.replicas = append(m.replicas, r)
	go r.serve()
	return r
}

// Detach forgets a replica whose connection is gone.
func (m *Manager) Detach(r *Replica) {
	r.once.Do(func() { close(r.done) })
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, x := range m.replicas {
		if x == r {
			m.replicas = append(m.replicas[:i], m.replicas[i+1:]...)
			break
		}
	}
	m.setStreamedLocked()
	m.refreshGoodLocked()
}

// detachAll drops every replica (the primary became a replica). The
// caller holds m.mu.
func (m *Manager) detachAll() {
	for _, r := range m.replicas {
		r.once.Do(func() { close(r.done) })
		r.sink.Kill()
	}
	m.replicas = nil
	m.setStreamedLocked()
	m.refreshGoodLocked()
}

// serve sends the replica its snapshot when it needs one, then joins the
// replicas the event loops push the stream to at the end of each round
// (Manager.Publish), and pushes itself what no round publishes (PINGs,
// GETACKs, active expiry's deletions) and what waited for the replica's
// socket to make room. It pushes only while the replica's connection
// holds less than pushWindow unsent: what the replica has not read stays
// in the stream, and counts against its output limit (checkLimit).
func (r *Replica) serve() {
	defer r.reader.Close()
	look := r.m.clk.NewTicker(5 * time.Millisecond) // for writes nobody publishes, and the socket's progress
	defer look.Stop()
	id, _, _ := r.m.stream.IDs()
	if r.full {
		if !r.sendSnapshot(id, look) {
			return
		}
	} else {
		r.sink.Push([]byte("+CONTINUE " + id + "\r\n"))
	}
	r.state.Store(StateOnline)
	r.m.stream.Quiet(r.reader) // the rounds push to it: Publish need not wake serve
	r.m.addStreamed(r)
	r.m.checkWaiters()
	for {
		if !r.push() || !r.checkLimit(r.sink.Unsent()) {
			return
		}
		select {
		case <-r.reader.Wake():
		case <-look.C():
		case <-r.acks:
		case <-r.done:
			return
		}
	}
}

// push writes what the replica has not been sent of the stream to its
// connection, up to pushWindow unsent; false when the replica fell behind
// the stream and is dropped.
func (r *Replica) push() bool {
	r.sendMu.Lock()
	defer r.sendMu.Unlock()
	for r.sink.Unsent() < pushWindow {
		b, err := r.reader.NextView(1 << 20)
		if err != nil {
			r.m.logf("replica %s:%d: %v; dropping it", r.IP, r.Port, err)
			r.sink.Kill()
			return false
		}
		if len(b) == 0 {
			break
		}
		r.sink.Push(b) // the stream's own bytes: the sink copies them
		r.sent.Add(int64(len(b)))
	}
	return true
}

// pushWindow is the most a replica's connection is given to hold unsent
// before the stream waits for it: enough for the socket never to run dry
// between two looks, little enough that a replica that does not read
// costs the primary its lag in the shared stream and no copy of it.
const pushWindow = 4 << 20

// sendSnapshot answers +FULLRESYNC and sends a snapshot made now, in
// pieces of at most pushWindow, each once the connection has sent the
// one before; it returns once the socket took the last byte (the snapshot
// is delivered, as Redis counts a replica only after its RDB is
// transferred), false when the replica is gone.
func (r *Replica) sendSnapshot(id string, look clock.Ticker) bool {
	r.sink.Push([]byte("+FULLRESYNC " + id + " " + strconv.FormatInt(r.from, 10) + "\r\n"))
	var snap bytes.Buffer
	if err := r.m.host.Snapshot(&snap); err != nil {
		r.m.logf("replica %s:%d: snapshot failed: %v", r.IP, r.Port, err)
		r.sink.Kill()
		return false
	}
	r.state.Store(StateSendBulk)
	r.sink.Push(fmt.Appendf(nil, "$%d\r\n", snap.Len()))
	for b := snap.Bytes(); ; {
		piece := b[:min(len(b), pushWindow)]
		b = b[len(piece):]
		r.sink.Push(piece)
		below := int64(pushWindow)
		if len(b) == 0 {
			below = 1 // delivered: the socket took it all
		}
		for r.sink.Unsent() >= below {
			// The stream it will get next waits in the stream: that
			// counts against its output limit, as Redis counts the
			// writes it buffers for a replica during its sync.
			if !r.checkLimit(0) {
				return false
			}
			select {
			case <-look.C():
			case <-r.reader.Wake(): // the stream grew: its lag is to check
			case <-r.acks:
			case <-r.done:
				return false
			}
		}
		if len(b) == 0 {
			break
		}
	}
	r.m.logf("replica %s:%d: snapshot of %d bytes sent", r.IP, r.Port, snap.Len())
	return true
}

// checkLimit drops the replica when what it has not read of the stream
// (the stream past what it was pushed, and unsent, pushed bytes its socket
// has not taken) passes its output limit: the hard bound at once, the
// soft one after SoftFor. It reports whether the replica is kept.
func (r *Replica) checkLimit(unsent int64) bool {
	unread := r.m.stream.Offset() - r.reader.Pos() + unsent
	lim := r.sink.Limit()
	switch {
	case lim.Hard > 0 && unread > lim.Hard:
	case lim.Soft > 0 && unread > lim.Soft:
		now := r.m.clk.Mono()
		if !r.softOver {
			r.softSince, r.softOver = now, true
			return true
		}
		if now-r.softSince < lim.SoftFor {
			return true
		}
	default:
		r.softOver = false
		return true
	}
	r.m.logf("replica %s:%d closed for overcoming of output buffer limits (%d bytes of the stream unread)", r.IP, r.Port, unread)
	r.sink.Kill()
	return false
}

// Publish pushes the stream to every online replica up to its end, from
// the calling goroutine: the event loops call it (through the command
// layer's EndRound) once the commands of a round have run and before any
// of their replies is flushed, so that a write reaches the replicas'
// connections before its reply leaves, in one push per replica per round.
// It also wakes the stream's other readers (the append-only file's).
func (m *Manager) Publish() {
	m.askAcks()
	m.stream.Publish()
	rs := m.streamed.Load()
	if rs == nil {
		return
	}
	end := m.stream.Offset()
	for _, r := range *rs {
		if r.sent.Load() < end {
			r.push() // a replica that fell behind is dropped, and detached by its serve
		}
	}
}

// addStreamed adds r to the replicas Publish pushes to.
func (m *Manager) addStreamed(r *Replica) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, x := range m.replicas {
		if x == r {
			r.streamed = true
			m.setStreamedLocked()
			m.refreshGoodLocked()
			return
		}
	}
}

// setStreamedLocked republishes the list of replicas Publish pushes to.
// The caller holds m.mu.
func (m *Manager) setStreamedLocked() {
	var rs []*Replica
	for _, r := range m.replicas {
		if r.streamed {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		m.streamed.Store(nil)
		return
	}
	m.streamed.Store(&rs)
}
