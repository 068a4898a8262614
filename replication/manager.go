package replication

import (
	"io"
	"log"
	"sync"
	"sync/atomic"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/persistence"
)

// Host is what replication needs of the server it runs in.
type Host interface {
	// Snapshot writes the keyspace and its sections in the snapshot
	// format (persistence.Write).
	Snapshot(w io.Writer) error
	// Sections are the snapshot's sections, which SECTION records and
	// full resynchronisations load.
	Sections() *persistence.Sections
	// Self is how this server introduces itself to a primary.
	Self() Self
}

// Self is how a replica introduces itself to its primary and logs in.
type Self struct {
	ListeningPort int    // REPLCONF listening-port
	AnnounceIP    string // REPLCONF ip-address, when set
	User, Pass    string // masteruser, masterauth
	Timeout       time.Duration
}

// Manager is a server's part in replication: a primary with replicas
// attached, or a replica with a link to its primary, and the stream either
// way.
type Manager struct {
	eng    *engine.Engine
	clk    clock.Clock // the engine's: acknowledgements, retries, pacing, lags, WAIT
	logger *log.Logger
	host   Host
	stream *Stream

	mu        sync.Mutex
	journaled bool // the engine tells the stream its changes (a primary with a reader)
	replicas  []*Replica
	link      *link // non-nil on a replica
	waiters   []*waiter
	lastPing  time.Duration // on the clock's Mono
	// known: the keyspace is the stream's history up to its offset, so
	// that a primary may continue it (PSYNC id offset+1); otherwise the
	// link asks "PSYNC ? -1". A primary's own history is known, as Redis
	// takes its own ID and offset when it becomes a replica; a node that
	// starts as a replica knows only what its snapshot kept (saved).
	known    atomic.Bool
	saved    *Saved // the snapshot's replication ID and offset, until Restore
	restored bool   // Restore ran

	streamed atomic.Pointer[[]*Replica] // the online replicas Publish pushes to; nil for none
	min      minReplicas                // min-replicas-to-write (good.go)

	wantAck                         atomic.Bool  // WaitAt registered waiters that no GETACK asked for yet
	limiterWait, limiterWaitTimeout atomic.Int64 // limiter-wait-replicas, limiter-wait-timeout (ns)
	nextClientID                    func() int64 // the server's client IDs, for the link's master client (SetClientIDs)
	// alone is when a primary was last seen with no replica by Cron (on
	// the clock's Mono; -1 while it has replicas or is a replica), for
	// repl-backlog-ttl.
	alone      time.Duration
	backlogTTL atomic.Int64 // repl-backlog-ttl, nanoseconds; 0: never freed

	syncFull, syncPartialOK, syncPartialErr atomic.Int64
}

// New returns the replication of a primary with no replica.
func New(eng *engine.Engine, logger *log.Logger, host Host, backlog int64) *Manager {
	if logger == nil {
		logger = log.Default()
	}
	m := &Manager{eng: eng, clk: eng.Clock(), logger: logger, host: host, stream: NewStream(backlog)}
	m.known.Store(true)
	m.alone = m.clk.Mono()
	m.backlogTTL.Store(int64(DefaultBacklogTTL))
	return m
}

func (m *Manager) logf(format string, args ...any) { m.logger.Printf(format, args...) }

// Stream is the change stream.
func (m *Manager) Stream() *Stream { return m.stream }

// startJournal makes the engine tell the stream every change, from now on:
// a primary with a reader (a replica, the append-only file). The caller
// holds m.mu.
func (m *Manager) startJournal() {
	if !m.journaled && m.link == nil {
		m.eng.SetJournal(m.stream)
		m.journaled = true
	}
}

// Tail returns a reader of the stream from now on, which never falls
// behind: the append-only file's. On a primary it starts the journal.
func (m *Manager) Tail() (*Reader, int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.startJournal()
	return m.stream.Tail(true)
}

// Journaled reports whether the server's own writes go to the stream (a
// primary with a replica or the append-only file).
func (m *Manager) Journaled() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.journaled
}

// Section appends a snapshot section's new state to the stream.
func (m *Manager) Section(name string, data []byte) {
	m.stream.Append(persistence.AppendCommand(nil, persistence.VerbSection, name, string(data)))
}

// knownHistory reports whether the keyspace is the stream's history up to
// its offset (Manager.known).
// It is an atomic, not under mu: the link changes it while ReplicaOf may
// hold mu waiting for the link to stop.
func (m *Manager) knownHistory() bool { return m.known.Load() }

func (m *Manager) setKnown(v bool) { m.known.Store(v) }

// IsReplica reports whether this server replicates a primary.
func (m *Manager) IsReplica() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.link != nil
}

// ReplicaOf makes this server a replica of host:port (REPLICAOF host
// port): it stops taking its own writes into the stream, drops its
// replicas, and connects. It reports false when it already replicates
// that primary (nothing changes, as in Redis).
func (m *Manager) ReplicaOf(host string, port int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.link != nil && m.link.host == host && m.link.port == port {
		return false
	}
	if m.link != nil {
		m.link.stop()
	}
	m.eng.SetJournal(nil)
	m.journaled = false
	m.detachAll()
	m.stream.Activate()
	m.link = newLink(m, host, port)
	m.refreshGoodLocked() // a replica takes writes only from its primary: no check
	m.logf("replicating %s:%d", host, port)
	go m.link.run()
	return true
}

// Promote makes this replica a primary (REPLICAOF NO ONE): the link stops,
// the stream takes a new ID and keeps the old one for the replicas that
// continue from it, and the server's own writes go to the stream again.
// It reports false when it was a primary already.
func (m *Manager) Promote() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.link == nil {
		return false
	}
	m.link.stop()
	m.link = nil
	m.refreshGoodLocked()
	m.stream.Shift()
	if m.stream.active {
		m.startJournal()
	}
	id, _, _ := m.stream.IDs()
	m.logf("now a primary: replication ID %s, offset %d", id, m.stream.Offset())
	return true
}

// Close stops the link and drops the replicas.
func (m *Manager) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.link != nil {
		m.link.stop()
		m.link = nil
	}
	m.detachAll()
	m.failWaiters()
}

// Cron is the once-a-second work: a primary PINGs its replicas every
// period so that their links see it alive, and frees its backlog once it
// has had no replica for repl-backlog-ttl (freeBacklog).
func (m *Manager) Cron(period time.Duration) {
	m.mu.Lock()
	now := m.clk.Mono()
	send := m.link == nil && len(m.replicas) > 0 && now-m.lastPing >= period
	if send {
		m.lastPing = now
	}
	m.refreshGoodLocked()
	switch {
	case m.link != nil || len(m.replicas) > 0:
		m.alone = -1
	case m.alone < 0:
		m.alone = now
	case m.backlogTTL.Load() > 0 && now-m.alone > time.Duration(m.backlogTTL.Load()):
		m.freeBacklog(now - m.alone)
	}
	m.mu.Unlock()
	if send {
		m.stream.Append(persistence.AppendCommand(nil, persistence.VerbPing))
	}
}

// DefaultBacklogTTL is repl-backlog-ttl's default, Redis's: an hour.
const DefaultBacklogTTL = time.Hour

// SetBacklogTTL changes repl-backlog-ttl: how long a primary with no
// replica keeps its backlog; 0 keeps it for ever.
func (m *Manager) SetBacklogTTL(d time.Duration) { m.backlogTTL.Store(int64(max(d, 0))) }

// freeBacklog frees a primary's backlog after it has been alone for idle,
// as Redis's replicationCron does: the stream takes a new replication ID
// and forgets the previous one (a replica that comes back asks for
// history this node no longer keeps, and gets a full copy), keeps no bytes
// beyond what the append-only file has still to read, and, when nothing
// reads it, the engine stops journaling, so master_repl_offset stays
// where it is until a replica attaches. The caller holds m.mu.
func (m *Manager) freeBacklog(idle time.Duration) {
	if !m.stream.Backlog().Active {
		return
	}
	if readers := m.stream.dropBacklog(); readers == 0 && m.journaled {
		m.eng.SetJournal(nil)
		m.journaled = false
	}
	m.logf("replication backlog freed after %d seconds without connected replicas", int64(idle/time.Second))
}

// Status is what INFO replication and ROLE report.
type Status struct {
	Replica  bool       // this server replicates a primary
	Link     LinkStatus // when Replica
	Replicas []ReplicaStatus
	ID, ID2  string
	Off2     int64 // second_repl_offset
	Backlog  BacklogInfo

	SyncFull, SyncPartialOK, SyncPartialErr int64 // INFO stats: resynchronisations served
}

// ReplicaStatus is one slaveN line.
type ReplicaStatus struct {
	IP     string
	Port   int
	State  string
	Offset int64
	Lag    int64
}

// Status reports the replication state.
func (m *Manager) Status() Status {
	m.mu.Lock()
	var st Status
	for _, r := range m.replicas {
		st.Replicas = append(st.Replicas, ReplicaStatus{IP: r.IP, Port: r.Port, State: r.State(), Offset: r.Offset(), Lag: r.Lag()})
	}
	l := m.link
	m.mu.Unlock()
	st.SyncFull, st.SyncPartialOK, st.SyncPartialErr = m.syncFull.Load(), m.syncPartialOK.Load(), m.syncPartialErr.Load()
	st.ID, st.ID2, st.Off2 = m.stream.IDs()
	st.Backlog = m.stream.Backlog()
	if l != nil {
		st.Replica = true
		now := m.clk.Mono()
		state := l.state.Load().(string)
		st.Link = LinkStatus{Host: l.host, Port: l.port, State: state, Up: state == LinkConnected,
			SyncInProgress: state == LinkSync, LastIOSeconds: -1, DownSeconds: -1}
		if io := l.lastIO.Load(); io != 0 {
			st.Link.LastIOSeconds = int64((now - time.Duration(io)) / time.Second)
		}
		if !st.Link.Up {
			st.Link.DownSeconds = int64((now - time.Duration(l.downMono.Load())) / time.Second)
		}
	}
	return st
}
