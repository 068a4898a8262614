package replication

import (
	"errors"
	"log"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/persistence"
)

// The append-only file is the change stream on disk (persistence/doc.go):
// the file tails the stream with a reader that is never dropped. As in
// Redis, what a round of commands wrote reaches the file (a write to the
// OS) before the round's replies go out: the command layer calls CatchUp,
// which does it or finds that another connection's call already did.
// appendfsync says when it fsyncs:
//
//   - always: also before the replies go out. Connections that wrote
//     meanwhile wait on the same lock and find their records written and
//     fsynced by the one holding it (group commit).
//   - everysec: a writer goroutine fsyncs once a second of the clock it
//     is given. kill -9 loses nothing acknowledged; a power loss up to
//     about a second.
//   - no: never; the OS flushes when it likes.
//
// The writer goroutine also writes the records no connection waits for
// (active expiry's deletions, what a replica applies) and rotates files
// for rewrites.

// AOFConfig is what the append-only file's directives say.
type AOFConfig struct {
	On            bool   // appendonly
	Dir           string // dir joined with appenddirname
	Name          string // appendfilename
	Fsync         string // appendfsync: always, everysec or no
	LoadTruncated bool   // aof-load-truncated: accept a torn last record
}

// ErrAOFRewriting is the error of a rewrite asked for while one runs.
var ErrAOFRewriting = errors.New("aof: a rewrite is already in progress")

// fsync policies.
const (
	fsyncAlways int32 = iota
	fsyncEverySec
	fsyncNo
)

func fsyncPolicy(s string) int32 {
	switch s {
	case "always":
		return fsyncAlways
	case "no":
		return fsyncNo
	}
	return fsyncEverySec
}

// AOF writes a server's change stream to its append-only file, when
// appendonly is yes: loading it at start-up, starting and stopping the
// writer, fsyncing on the appendfsync schedule and rewriting it.
type AOF struct {
	m        *Manager
	clk      clock.Clock // fsync timer and rewrite durations
	logger   *log.Logger
	config   func() AOFConfig
	onStatus func() // called when the file stops being writable, or is again

	mu  sync.Mutex             // orders starts and stops
	run atomic.Pointer[aofRun] // nil when appendonly is no; read by every round

	policy atomic.Int32

	// rewrites
	rewriting     atomic.Bool
	scheduled     atomic.Bool  // the writer asked for one while one ran: it starts when that one ends
	claimed       atomic.Bool  // BGREWRITEAOF claimed the rewrite (rewriting) for the writer to start
	rewriteStart  atomic.Int64 // Unix ns
	statMu        sync.Mutex
	lastStatus    string // "ok" or "err"
	lastErr       error
	lastDuration  time.Duration
	rewrites      int64
	failuresInRow int64
	loaded        persistence.AOFLoadStats
	fromFile      bool // Load loaded a file that Start goes on appending to
}

// aofRun is one enabled period: the file, its reader and its writer.
type aofRun struct {
	file    *persistence.AOF
	stop    chan struct{}
	done    chan struct{}
	rewrite chan struct{} // asks the writer to rotate and start a rewrite

	ioMu     sync.Mutex // one writer of the file at a time; guards reader, buf, lastSync
	reader   *Reader
	buf      []byte        // read from the stream, not written yet (after a write error)
	lastSync time.Duration // on clk.Mono

	written atomic.Int64 // the stream offset written to the file
	synced  atomic.Int64 // the stream offset fsynced
	writeOK atomic.Bool
	errMu   sync.Mutex
	wrErr   error
}

// NewAOF returns the append-only file of m's stream, on m's clock (the
// engine's). config is read at each Load, Start, Reload and Rewrite;
// onStatus, when set, is called whenever WriteError changes.
func (m *Manager) NewAOF(config func() AOFConfig, onStatus func()) *AOF {
	if onStatus == nil {
		onStatus = func() {}
	}
	return &AOF{m: m, clk: m.clk, logger: m.logger, config: config, onStatus: onStatus}
}

func (c AOFConfig) open() (*persistence.AOF, error) {
	return persistence.OpenAOF(c.Dir, c.Name)
}

// Enabled reports whether the file is being written.
func (a *AOF) Enabled() bool { return a.run.Load() != nil }

// Load restores the append-only file before serving, when one exists;
// loaded says whether there was one. A server with appendonly yes loads it
// instead of the snapshot file, as Redis does; without one, the caller
// loads the snapshot and Start writes a base from it.
func (a *AOF) Load() (st persistence.AOFLoadStats, loaded bool, err error) {
	cfg := a.config()
	f, err := cfg.open()
	if err != nil {
		return st, false, err
	}
	if !f.Exists() {
		return st, false, nil
	}
	eng := a.m.eng
	ap := persistence.Applier{Eng: eng, Sections: a.m.host.Sections()}
	now := eng.Now()
	st, err = f.Load(eng, ap.Sections, func(args [][]byte) error { return ap.Apply(now, args) }, cfg.LoadTruncated)
	if err != nil {
		return st, true, err
	}
	a.statMu.Lock()
	a.loaded, a.fromFile = st, true
	a.statMu.Unlock()
	return st, true, nil
}

// Start starts writing the append-only file when appendonly is yes and
// it is not written yet: at start-up, and after CONFIG SET appendonly yes
// (Reload). A file that did not exist (or that was not loaded, as after
// CONFIG SET) begins with a rewrite, whose base is the keyspace as it is.
func (a *AOF) Start() error {
	cfg := a.config()
	a.policy.Store(fsyncPolicy(cfg.Fsync))
	a.mu.Lock()
	defer a.mu.Unlock()
	if !cfg.On || a.run.Load() != nil {
		return nil
	}
	f, err := cfg.open()
	if err != nil {
		return err
	}
	a.statMu.Lock()
	fresh := !a.fromFile || !f.Exists()
	a.fromFile = false
	a.statMu.Unlock()
	reader, _ := a.m.Tail()
	if err := f.Reopen(); err != nil {
		reader.Close()
		return err
	}
	r := &aofRun{file: f, reader: reader, stop: make(chan struct{}), done: make(chan struct{}),
		rewrite: make(chan struct{}, 1), lastSync: a.clk.Mono()}
	r.writeOK.Store(true)
	r.written.Store(reader.Pos())
	r.synced.Store(reader.Pos())
	a.run.Store(r)
	a.logger.Printf("append-only file on in %s (appendfsync %s)", cfg.Dir, cfg.Fsync)
	if fresh {
		// The first rewrite starts before Start returns, so that INFO
		// shows it in progress from then on (a caller waiting for it to
		// end never sees it not yet begun).
		r.ioMu.Lock()
		if a.write(r, false) {
			a.rotateAndRewrite(r)
		} else {
			r.rewrite <- struct{}{} // the writer tries again
		}
		r.ioMu.Unlock()
	}
	go a.writer(r)
	return nil
}

// Stop writes what the stream holds, fsyncs, and stops the writer.
func (a *AOF) Stop() {
	a.mu.Lock()
	r := a.run.Swap(nil)
	a.mu.Unlock()
	if r == nil {
		return
	}
	close(r.stop)
	<-r.done
	a.onStatus()
}

// Reload applies appendonly and appendfsync after CONFIG SET.
func (a *AOF) Reload() error {
	cfg := a.config()
	a.policy.Store(fsyncPolicy(cfg.Fsync))
	if !cfg.On {
		a.Stop()
		return nil
	}
	return a.Start()
}

// writer is the writer goroutine of one run.
func (a *AOF) writer(r *aofRun) {
	defer close(r.done)
	tick := a.clk.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-r.stop:
			if a.claimed.CompareAndSwap(true, false) { // asked for, never started
				a.rewriting.Store(false)
			}
			r.ioMu.Lock()
			a.write(r, true)
			r.reader.Close()
			if err := r.file.Close(); err != nil {
				a.logger.Printf("append-only file: %v", err)
			}
			r.ioMu.Unlock()
			return
		case <-r.reader.Wake():
		case <-tick.C():
		case <-r.rewrite:
			r.ioMu.Lock()
			if a.write(r, false) { // the rotation must fall on a record boundary
				a.rotateAndRewrite(r)
			} else {
				r.rewrite <- struct{}{} // again once the file can be written
			}
			r.ioMu.Unlock()
			continue
		}
		r.ioMu.Lock()
		a.write(r, a.policy.Load() == fsyncEverySec && a.clk.Mono()-r.lastSync >= time.Second)
		r.ioMu.Unlock()
	}
}

// write writes what the stream holds beyond the file, and fsyncs when
// sync is set or appendfsync is always. It reports whether everything read
// is written. The caller holds r.ioMu.
func (a *AOF) write(r *aofRun, sync bool) bool {
	var err error
	r.buf, err = r.reader.Next(r.buf, math.MaxInt)
	if errors.Is(err, ErrLagging) {
		// The stream started over: this replica loaded a full copy from
		// its primary. What the file holds is history now; a rewrite
		// takes the copy as the new base.
		r.reader.Close()
		var from int64
		r.reader, from = a.m.Tail()
		if a.flush(r) {
			a.rotateAndRewrite(r)
		}
		r.written.Store(from)
		r.synced.Store(from)
		return len(r.buf) == 0
	}
	pos := r.reader.Pos()
	if !a.flush(r) {
		return false
	}
	r.written.Store(pos)
	if (sync || a.policy.Load() == fsyncAlways) && r.synced.Load() < pos {
		if err := r.file.Sync(); err != nil {
			a.writeFailed(r, err)
			return false
		}
		r.lastSync = a.clk.Mono()
		r.synced.Store(pos)
	}
	return true
}

// flush writes r.buf to the file and reports whether it all went; after
// an error it keeps it, to be retried. The caller holds r.ioMu.
func (a *AOF) flush(r *aofRun) bool {
	if len(r.buf) == 0 {
		return true
	}
	if n, err := r.file.Append(r.buf); err != nil {
		r.buf = append(r.buf[:0], r.buf[n:]...) // a partial write: the rest goes next, so records stay whole
		a.writeFailed(r, err)
		return false
	}
	r.buf = r.buf[:0]
	if !r.writeOK.Load() {
		r.errMu.Lock()
		r.wrErr = nil
		r.errMu.Unlock()
		r.writeOK.Store(true)
		a.logger.Printf("append-only file: writing again")
		a.onStatus()
	}
	return true
}

// writeFailed makes WriteError report err until the file can be written
// again: the command layer refuses writes meanwhile, as Redis does
// (MISCONF).
func (a *AOF) writeFailed(r *aofRun, err error) {
	r.errMu.Lock()
	first := r.wrErr == nil
	r.wrErr = err
	r.errMu.Unlock()
	r.writeOK.Store(false)
	if first {
		a.logger.Printf("append-only file: %v; writes are refused until it can be written", err)
	}
	a.onStatus()
}

// rotateAndRewrite starts a new incr file and then, in the background,
// a new base. The caller holds r.ioMu and has written everything read.
// While a rewrite runs it schedules one for when that one ends, as Redis
// does (aof_rewrite_scheduled): a replica's full copy that arrives during
// the first rewrite must still become a base.
func (a *AOF) rotateAndRewrite(r *aofRun) {
	if !a.claimed.CompareAndSwap(true, false) && !a.beginRewrite() {
		a.scheduled.Store(true)
		return
	}
	seq, err := r.file.Rotate()
	if err != nil {
		a.rewriteDone(err, 0)
		return
	}
	go a.rewrite(r.file, seq)
}

// beginRewrite claims the one rewrite that may run; false when one runs.
func (a *AOF) beginRewrite() bool {
	if !a.rewriting.CompareAndSwap(false, true) {
		return false
	}
	a.rewriteStart.Store(a.clk.Now())
	return true
}

// rewrite writes f's new base, a snapshot, replacing every file before
// incr file seq, and records the outcome.
func (a *AOF) rewrite(f *persistence.AOF, seq int64) {
	start := a.clk.Mono()
	var keys int
	err := f.Rewrite(seq, func(path string) error {
		st, err := persistence.Save(path, a.m.eng, a.m.host.Sections())
		keys = st.Keys
		return err
	})
	d := a.clk.Mono() - start
	a.rewriteDone(err, d)
	if err == nil {
		a.logger.Printf("append-only file rewritten: %d keys in the new base, in %v", keys, d.Round(time.Microsecond))
	}
}

func (a *AOF) rewriteDone(err error, d time.Duration) {
	a.statMu.Lock()
	if err != nil {
		a.lastStatus, a.lastErr = "err", err
		a.failuresInRow++
		a.logger.Printf("append-only file rewrite failed: %v", err)
	} else {
		a.lastStatus, a.lastErr, a.lastDuration = "ok", nil, d
		a.rewrites++
		a.failuresInRow = 0
	}
	a.statMu.Unlock()
	a.rewriting.Store(false)
	if a.scheduled.CompareAndSwap(true, false) {
		if r := a.run.Load(); r != nil {
			select {
			case r.rewrite <- struct{}{}:
			default:
			}
		}
	}
}

// Rewrite starts a rewrite (BGREWRITEAOF): through the writer when the
// file is on; as a base alone (a manifest listing just the snapshot) when
// it is off, as Redis 7 writes one. It returns ErrAOFRewriting when one
// runs already.
func (a *AOF) Rewrite() error {
	if a.rewriting.Load() {
		return ErrAOFRewriting
	}
	r := a.run.Load()
	if r != nil {
		// Claimed here, before BGREWRITEAOF answers, as Redis forks before
		// it answers: INFO says it is in progress, and a second one is
		// refused, from the reply on.
		if !a.beginRewrite() {
			return ErrAOFRewriting
		}
		a.claimed.Store(true)
		select {
		case r.rewrite <- struct{}{}:
		default:
		}
		return nil
	}
	f, err := a.config().open()
	if err != nil {
		return err
	}
	if !a.beginRewrite() {
		return ErrAOFRewriting
	}
	go a.rewrite(f, math.MaxInt64) // no incr file stays
	return nil
}

// CatchUp writes, before a round's replies go out, what the stream holds
// beyond the file, and under appendfsync always fsyncs it: unless
// another connection already did.
func (a *AOF) CatchUp() {
	r := a.run.Load()
	if r == nil {
		return
	}
	always := a.policy.Load() == fsyncAlways
	end := a.m.stream.Offset()
	done := func() bool { return r.written.Load() >= end && (!always || r.synced.Load() >= end) }
	if done() {
		return
	}
	r.ioMu.Lock()
	if !done() {
		a.write(r, false)
	}
	r.ioMu.Unlock()
}

// WriteError is the error that keeps the file from being written, if any.
func (a *AOF) WriteError() error {
	r := a.run.Load()
	if r == nil || r.writeOK.Load() {
		return nil
	}
	r.errMu.Lock()
	defer r.errMu.Unlock()
	return r.wrErr
}

// AOFStatus is what INFO persistence reports of the append-only file.
type AOFStatus struct {
	Enabled       bool
	Rewriting     bool
	Scheduled     bool          // a rewrite waits for the running one to end
	RewriteFor    time.Duration // how long the running rewrite has run
	Rewrites      int64         // successful rewrites
	LastDuration  time.Duration // of the last successful rewrite
	LastStatus    string        // of the last rewrite: "ok" or "err"
	LastErr       error         // of the last rewrite, when it failed
	FailuresInRow int64
	WriteOK       bool // the file is being written, or is off
	Loaded        persistence.AOFLoadStats
	Files         persistence.AOFStats // when Enabled
	Buffered      int64                // stream bytes not written yet, when Enabled
}

// Status reports the file's state.
func (a *AOF) Status() AOFStatus {
	r := a.run.Load()
	a.statMu.Lock()
	st := AOFStatus{Enabled: r != nil, Rewriting: a.rewriting.Load(), Scheduled: a.scheduled.Load(), Rewrites: a.rewrites, LastDuration: a.lastDuration,
		LastStatus: a.lastStatus, LastErr: a.lastErr, FailuresInRow: a.failuresInRow, WriteOK: true, Loaded: a.loaded}
	a.statMu.Unlock()
	if st.LastStatus == "" {
		st.LastStatus = "ok"
	}
	if st.Rewriting {
		st.RewriteFor = time.Duration(a.clk.Now() - a.rewriteStart.Load())
	}
	if r != nil {
		st.WriteOK = r.writeOK.Load()
		st.Files = r.file.Stats()
		st.Buffered = max(0, a.m.stream.Offset()-r.written.Load())
	}
	return st
}
