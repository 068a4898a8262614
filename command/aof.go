package command

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/persistence"
	"github.com/limitdb/limitdb/replication"
)

// The append-only file is the change stream on disk (persistence/doc.go):
// the file tails the stream with a reader that is never dropped. As in
// Redis, what a batch of commands wrote reaches the file (a write to the
// OS) before the batch's replies go out: the connection's goroutine does
// it in endBatch, or finds that another connection's write already did.
// appendfsync says when it fsyncs:
//
//   - always: also before the replies go out. Connections that wrote
//     meanwhile wait on the same lock and find their records written and
//     fsynced by the one holding it (group commit).
//   - everysec: a writer goroutine fsyncs once a second. kill -9 loses
//     nothing acknowledged; a power loss up to about a second.
//   - no: never; the OS flushes when it likes.
//
// The writer goroutine also writes the records no connection waits for
// (active expiry's deletions, what a replica applies) and rotates files
// for rewrites. Its timers run on real time, as replication's do, whatever
// the engine's clock is.

func registerAOF(t *Table) {
	t.Register(&Command{Name: "bgrewriteaof", Arity: 1, Flags: FlagAdmin, Group: "server", Since: "0.1.0",
		Complexity: "O(N) where N is the number of keys",
		Summary:    "Rewrites the append-only file as a snapshot of the keyspace and starts a new incremental file, in the background.",
		Handler:    cmdBGRewriteAOF})
}

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

// aofState is the append-only file of a server, when appendonly is yes.
type aofState struct {
	clk clock.Clock            // the engine's: fsync timers and rewrite durations
	mu  sync.Mutex             // orders starts and stops
	run atomic.Pointer[aofRun] // nil when appendonly is no; read by every batch

	policy atomic.Int32

	// rewrites
	rewriting     atomic.Bool
	rewriteStart  atomic.Int64 // Unix ns
	statMu        sync.Mutex
	lastStatus    string // "ok" or "err"
	lastErr       error
	lastDuration  time.Duration
	rewrites      int64
	failuresInRow int64
	loaded        persistence.AOFLoadStats
	fromFile      bool // LoadAOF loaded a file that StartAOF goes on appending to
}

// aofRun is one enabled period: the file, its reader and its writer.
type aofRun struct {
	file    *persistence.AOF
	stop    chan struct{}
	done    chan struct{}
	rewrite chan struct{} // asks the writer to rotate and start a rewrite

	ioMu     sync.Mutex // one writer of the file at a time; guards reader, buf, lastSync
	reader   *replication.Reader
	buf      []byte        // read from the stream, not written yet (after a write error)
	lastSync time.Duration // on clk.Mono

	written atomic.Int64 // the stream offset written to the file
	synced  atomic.Int64 // the stream offset fsynced
	writeOK atomic.Bool
	errMu   sync.Mutex
	wrErr   error
}

func (s *Server) aofDir() string {
	cfg := s.Config()
	return filepath.Join(cfg.Dir, cfg.AppendDirname)
}

// AOFEnabled reports whether the server writes an append-only file.
func (s *Server) AOFEnabled() bool {
	return s.aof.run.Load() != nil
}

// LoadAOF restores the append-only file before serving, when one exists;
// loaded says whether there was one. A server with appendonly yes loads it
// instead of the snapshot file, as Redis does; without one, the caller
// loads the snapshot and StartAOF writes a base from it.
func (s *Server) LoadAOF() (st persistence.AOFLoadStats, loaded bool, err error) {
	cfg := s.Config()
	f, err := persistence.OpenAOF(s.aofDir(), cfg.AppendFilename)
	if err != nil {
		return st, false, err
	}
	if !f.Exists() {
		return st, false, nil
	}
	ap := replication.Applier{Eng: s.eng, Sections: &s.sections}
	now := s.eng.Now()
	st, err = f.Load(s.eng, &s.sections, func(args [][]byte) error { return ap.Apply(now, args) }, cfg.AOFLoadTruncated)
	if err != nil {
		return st, true, err
	}
	s.aof.statMu.Lock()
	s.aof.loaded, s.aof.fromFile = st, true
	s.aof.statMu.Unlock()
	s.persist.statMu.Lock()
	s.persist.changesAtSave = s.eng.Changes()
	s.persist.statMu.Unlock()
	return st, true, nil
}

// StartAOF starts writing the append-only file when appendonly is yes and
// it is not written yet: the node calls it at start-up, CONFIG SET
// appendonly yes at run time. A file that did not exist (or that the
// server did not load, as after CONFIG SET) begins with a rewrite, whose
// base is the keyspace as it is.
func (s *Server) StartAOF() error {
	cfg := s.Config()
	s.aof.policy.Store(fsyncPolicy(cfg.AppendFsync))
	s.aof.mu.Lock()
	defer s.aof.mu.Unlock()
	if !cfg.AppendOnly.AppendOnly || s.aof.run.Load() != nil || s.repl == nil {
		return nil
	}
	f, err := persistence.OpenAOF(s.aofDir(), cfg.AppendFilename)
	if err != nil {
		return err
	}
	s.aof.statMu.Lock()
	fresh := !s.aof.fromFile || !f.Exists()
	s.aof.fromFile = false
	s.aof.statMu.Unlock()
	reader, _ := s.repl.Tail()
	if err := f.Reopen(); err != nil {
		reader.Close()
		return err
	}
	r := &aofRun{file: f, reader: reader, stop: make(chan struct{}), done: make(chan struct{}),
		rewrite: make(chan struct{}, 1), lastSync: s.aof.clk.Mono()}
	r.writeOK.Store(true)
	r.written.Store(reader.Pos())
	r.synced.Store(reader.Pos())
	s.aof.run.Store(r)
	go s.aofWriter(r)
	if fresh {
		r.rewrite <- struct{}{}
	}
	s.logger.Printf("append-only file on in %s (appendfsync %s)", s.aofDir(), cfg.AppendFsync)
	return nil
}

// StopAOF writes what the stream holds, fsyncs, and stops the writer.
func (s *Server) StopAOF() {
	s.aof.mu.Lock()
	r := s.aof.run.Swap(nil)
	s.aof.mu.Unlock()
	if r == nil {
		return
	}
	close(r.stop)
	<-r.done
	s.updateRefuseWrites()
}

// reloadAOF applies appendonly and appendfsync after CONFIG SET.
func (s *Server) reloadAOF() error {
	cfg := s.Config()
	s.aof.policy.Store(fsyncPolicy(cfg.AppendFsync))
	if !cfg.AppendOnly.AppendOnly {
		s.StopAOF()
		return nil
	}
	return s.StartAOF()
}

// aofWriter is the writer goroutine of one run.
func (s *Server) aofWriter(r *aofRun) {
	defer close(r.done)
	tick := s.aof.clk.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-r.stop:
			r.ioMu.Lock()
			s.aofWrite(r, true)
			r.reader.Close()
			if err := r.file.Close(); err != nil {
				s.logger.Printf("append-only file: %v", err)
			}
			r.ioMu.Unlock()
			return
		case <-r.reader.Wake():
		case <-tick.C():
		case <-r.rewrite:
			r.ioMu.Lock()
			if s.aofWrite(r, false) { // the rotation must fall on a record boundary
				s.aofRotateAndRewrite(r)
			} else {
				r.rewrite <- struct{}{} // again once the file can be written
			}
			r.ioMu.Unlock()
			continue
		}
		r.ioMu.Lock()
		s.aofWrite(r, s.aof.policy.Load() == fsyncEverySec && s.aof.clk.Mono()-r.lastSync >= time.Second)
		r.ioMu.Unlock()
	}
}

// aofWrite writes what the stream holds beyond the file, and fsyncs when
// sync is set or appendfsync is always. It reports whether everything read
// is written. The caller holds r.ioMu.
func (s *Server) aofWrite(r *aofRun, sync bool) bool {
	var err error
	r.buf, err = r.reader.Next(r.buf, math.MaxInt)
	if errors.Is(err, replication.ErrLagging) {
		// The stream started over: this replica loaded a full copy from
		// its primary. What the file holds is history now; a rewrite
		// takes the copy as the new base.
		r.reader.Close()
		var from int64
		r.reader, from = s.repl.Tail()
		if s.aofFlush(r) {
			s.aofRotateAndRewrite(r)
		}
		r.written.Store(from)
		r.synced.Store(from)
		return len(r.buf) == 0
	}
	pos := r.reader.Pos()
	if !s.aofFlush(r) {
		return false
	}
	r.written.Store(pos)
	if (sync || s.aof.policy.Load() == fsyncAlways) && r.synced.Load() < pos {
		if err := r.file.Sync(); err != nil {
			s.aofWriteFailed(r, err)
			return false
		}
		r.lastSync = s.aof.clk.Mono()
		r.synced.Store(pos)
	}
	return true
}

// aofFlush writes r.buf to the file and reports whether it all went; after
// an error it keeps it, to be retried. The caller holds r.ioMu.
func (s *Server) aofFlush(r *aofRun) bool {
	if len(r.buf) == 0 {
		return true
	}
	if n, err := r.file.Append(r.buf); err != nil {
		r.buf = append(r.buf[:0], r.buf[n:]...) // a partial write: the rest goes next, so records stay whole
		s.aofWriteFailed(r, err)
		return false
	}
	r.buf = r.buf[:0]
	if !r.writeOK.Load() {
		r.errMu.Lock()
		r.wrErr = nil
		r.errMu.Unlock()
		r.writeOK.Store(true)
		s.logger.Printf("append-only file: writing again")
		s.updateRefuseWrites()
	}
	return true
}

// aofWriteFailed refuses writes until the file can be written again, as
// Redis does (MISCONF).
func (s *Server) aofWriteFailed(r *aofRun, err error) {
	r.errMu.Lock()
	first := r.wrErr == nil
	r.wrErr = err
	r.errMu.Unlock()
	r.writeOK.Store(false)
	if first {
		s.logger.Printf("append-only file: %v; writes are refused until it can be written", err)
	}
	s.updateRefuseWrites()
}

// aofRotateAndRewrite starts a new incr file and then, in the background,
// a new base. The caller holds r.ioMu and has written everything read.
func (s *Server) aofRotateAndRewrite(r *aofRun) {
	if !s.beginAOFRewrite() {
		return
	}
	seq, err := r.file.Rotate()
	if err != nil {
		s.aofRewriteDone(err, 0)
		return
	}
	go s.rewriteAOF(r.file, seq)
}

// beginAOFRewrite claims the one rewrite that may run; false when one runs.
func (s *Server) beginAOFRewrite() bool {
	if !s.aof.rewriting.CompareAndSwap(false, true) {
		return false
	}
	s.aof.rewriteStart.Store(s.aof.clk.Now())
	return true
}

// rewriteAOF writes f's new base, a snapshot, replacing every file before
// incr file seq, and records the outcome.
func (s *Server) rewriteAOF(f *persistence.AOF, seq int64) {
	start := s.aof.clk.Mono()
	var keys int
	err := f.Rewrite(seq, func(path string) error {
		st, err := persistence.Save(path, s.eng, &s.sections)
		keys = st.Keys
		return err
	})
	d := s.aof.clk.Mono() - start
	s.aofRewriteDone(err, d)
	if err == nil {
		s.logger.Printf("append-only file rewritten: %d keys in the new base, in %v", keys, d.Round(time.Microsecond))
	}
}

func (s *Server) aofRewriteDone(err error, d time.Duration) {
	a := &s.aof
	a.statMu.Lock()
	if err != nil {
		a.lastStatus, a.lastErr = "err", err
		a.failuresInRow++
		s.logger.Printf("append-only file rewrite failed: %v", err)
	} else {
		a.lastStatus, a.lastErr, a.lastDuration = "ok", nil, d
		a.rewrites++
		a.failuresInRow = 0
	}
	a.statMu.Unlock()
	a.rewriting.Store(false)
}

// errAOFRewriting is Redis's answer when a rewrite is already under way.
var errAOFRewriting = WireError("ERR Background append only file rewriting already in progress")

// RewriteAOF starts a rewrite: through the writer when the file is on; as
// a base alone (a manifest listing just the snapshot) when it is off, as
// Redis 7 writes one.
func (s *Server) RewriteAOF() error {
	if s.aof.rewriting.Load() {
		return errAOFRewriting
	}
	r := s.aof.run.Load()
	if r != nil {
		select {
		case r.rewrite <- struct{}{}:
		default:
		}
		return nil
	}
	cfg := s.Config()
	f, err := persistence.OpenAOF(s.aofDir(), cfg.AppendFilename)
	if err != nil {
		return err
	}
	if !s.beginAOFRewrite() {
		return errAOFRewriting
	}
	go s.rewriteAOF(f, math.MaxInt64) // no incr file stays
	return nil
}

func cmdBGRewriteAOF(c *Client, _ [][]byte) {
	if err := c.srv.RewriteAOF(); err != nil {
		c.Error(err)
		return
	}
	c.Simple("Background append only file rewriting started")
}

// catchUpAOF writes, before a batch's replies go out, what the stream
// holds beyond the file, and under appendfsync always fsyncs it: unless
// another connection already did (endBatch).
func (s *Server) catchUpAOF() {
	r := s.aof.run.Load()
	if r == nil {
		return
	}
	always := s.aof.policy.Load() == fsyncAlways
	end := s.repl.Stream().Offset()
	done := func() bool { return r.written.Load() >= end && (!always || r.synced.Load() >= end) }
	if done() {
		return
	}
	r.ioMu.Lock()
	if !done() {
		s.aofWrite(r, false)
	}
	r.ioMu.Unlock()
}

// aofWriteError is the error that stops writes, if any.
func (s *Server) aofWriteError() error {
	r := s.aof.run.Load()
	if r == nil || r.writeOK.Load() {
		return nil
	}
	r.errMu.Lock()
	defer r.errMu.Unlock()
	return r.wrErr
}

// updateRefuseWrites recomputes whether writes answer MISCONF: a failed
// snapshot under stop-writes-on-bgsave-error, or an append-only file that
// cannot be written.
func (s *Server) updateRefuseWrites() {
	p := &s.persist
	s.refuseWrites.Store((p.stopWrites.Load() && p.failing.Load()) || s.aofWriteError() != nil)
}

func infoAOF(s *Server, b *strings.Builder) {
	a := &s.aof
	r := a.run.Load()
	a.statMu.Lock()
	defer a.statMu.Unlock()
	status := a.lastStatus
	if status == "" {
		status = "ok"
	}
	infoLine(b, "aof_enabled", boolInt(r != nil))
	infoLine(b, "aof_rewrite_in_progress", boolInt(a.rewriting.Load()))
	infoLine(b, "aof_rewrite_scheduled", 0)
	infoLine(b, "aof_last_rewrite_time_sec", secondsOrMinus(a.rewrites, a.lastDuration))
	cur := int64(-1)
	if a.rewriting.Load() {
		cur = (a.clk.Now() - a.rewriteStart.Load()) / int64(time.Second)
	}
	infoLine(b, "aof_current_rewrite_time_sec", cur)
	infoLine(b, "aof_last_bgrewrite_status", status)
	infoLine(b, "aof_rewrites", a.rewrites)
	infoLine(b, "aof_rewrites_consecutive_failures", a.failuresInRow)
	writeStatus := "ok"
	if r != nil && !r.writeOK.Load() {
		writeStatus = "err"
	}
	infoLine(b, "aof_last_write_status", writeStatus)
	infoLine(b, "aof_last_cow_size", 0)
	if a.lastErr != nil {
		infoLine(b, "aof_last_error", strings.ReplaceAll(a.lastErr.Error(), "\n", " "))
	}
	infoLine(b, "aof_last_load_records", a.loaded.Records)
	infoLine(b, "aof_last_load_truncated_bytes", a.loaded.Truncated)
	if r == nil {
		return
	}
	st := r.file.Stats()
	infoLine(b, "aof_current_size", st.CurrentSize)
	infoLine(b, "aof_base_size", st.BaseSize)
	infoLine(b, "aof_pending_rewrite", 0)
	infoLine(b, "aof_buffer_length", max(0, s.repl.Stream().Offset()-r.written.Load()))
	infoLine(b, "aof_pending_bio_fsync", 0)
	infoLine(b, "aof_delayed_fsync", 0)
}

// errAOFMisconf is Redis's refusal of a write while the append-only file
// cannot be written.
func errAOFMisconf(err error) error {
	return WireError(fmt.Sprintf("MISCONF Errors writing to the AOF file: %s", strings.ReplaceAll(err.Error(), "\n", " ")))
}
