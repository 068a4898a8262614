package command

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/limitdb/limitdb/persistence"
	"github.com/limitdb/limitdb/replication"
)

// The append-only file's lifecycle (opening, appending from the change
// stream, the fsync schedule, rewrites) is replication's (replication/aof.go).
// The command layer holds it behind appendOnly: it writes the file before a
// round's replies go out (EndRound), refuses writes while the file cannot
// be written (MISCONF), and serves BGREWRITEAOF, CONFIG SET appendonly and
// appendfsync, and INFO persistence's aof_* lines.

func registerAOF(t *Table) {
	t.Register(&Command{Name: "bgrewriteaof", Arity: 1, Flags: FlagAdmin, Group: "server", Since: "0.1.0",
		Complexity: "O(N) where N is the number of keys",
		Summary:    "Rewrites the append-only file as a snapshot of the keyspace and starts a new incremental file, in the background.",
		Handler:    cmdBGRewriteAOF})
}

// appendOnly is what the command layer needs of the append-only file
// (replication.AOF).
type appendOnly interface {
	Load() (persistence.AOFLoadStats, bool, error)
	Start() error
	Stop()
	Reload() error // after CONFIG SET appendonly or appendfsync
	Rewrite() error
	CatchUp()          // write (and fsync under always) what a round wrote
	WriteError() error // non-nil while the file cannot be written
	Status() replication.AOFStatus
}

// aofConfig is the append-only file's part of the configuration.
func (s *Server) aofConfig() replication.AOFConfig {
	cfg := s.Config()
	return replication.AOFConfig{On: cfg.AppendOnly.AppendOnly, Dir: filepath.Join(cfg.Dir, cfg.AppendDirname),
		Name: cfg.AppendFilename, Fsync: cfg.AppendFsync, LoadTruncated: cfg.AOFLoadTruncated}
}

// LoadAOF restores the append-only file before serving, when one exists;
// loaded says whether there was one. A server with appendonly yes loads it
// instead of the snapshot file, as Redis does; without one, the caller
// loads the snapshot and StartAOF writes a base from it.
func (s *Server) LoadAOF() (st persistence.AOFLoadStats, loaded bool, err error) {
	if s.aof == nil {
		return st, false, nil
	}
	st, loaded, err = s.aof.Load()
	if !loaded || err != nil {
		return st, loaded, err
	}
	s.persist.statMu.Lock()
	s.persist.changesAtSave = s.eng.Changes()
	s.persist.statMu.Unlock()
	return st, true, nil
}

// StartAOF starts writing the append-only file when appendonly is yes and
// it is not written yet: the node calls it at start-up, CONFIG SET
// appendonly yes at run time.
func (s *Server) StartAOF() error {
	if s.aof == nil {
		return nil
	}
	return s.aof.Start()
}

// StopAOF writes what the stream holds, fsyncs, and stops the writer.
func (s *Server) StopAOF() {
	if s.aof != nil {
		s.aof.Stop()
	}
}

// reloadAOF applies appendonly and appendfsync after CONFIG SET.
func (s *Server) reloadAOF() error {
	if s.aof == nil {
		return nil
	}
	return s.aof.Reload()
}

// errAOFRewriting is Redis's answer when a rewrite is already under way.
var errAOFRewriting = WireError("ERR Background append only file rewriting already in progress")

// RewriteAOF starts a rewrite: through the writer when the file is on; as
// a base alone (a manifest listing just the snapshot) when it is off, as
// Redis 7 writes one.
func (s *Server) RewriteAOF() error {
	if s.aof == nil {
		return errors.New("no keyspace")
	}
	err := s.aof.Rewrite()
	if errors.Is(err, replication.ErrAOFRewriting) {
		return errAOFRewriting
	}
	return err
}

func cmdBGRewriteAOF(c *Client, _ [][]byte) {
	if err := c.srv.RewriteAOF(); err != nil {
		c.Error(err)
		return
	}
	c.Simple("Background append only file rewriting started")
}

// catchUpAOF writes, before a round's replies go out, what the stream
// holds beyond the file (EndRound).
func (s *Server) catchUpAOF() {
	if s.aof != nil {
		s.aof.CatchUp()
	}
}

// aofWriteError is the error that stops writes, if any.
func (s *Server) aofWriteError() error {
	if s.aof == nil {
		return nil
	}
	return s.aof.WriteError()
}

// updateRefuseWrites recomputes whether writes answer MISCONF: a failed
// snapshot under stop-writes-on-bgsave-error, or an append-only file that
// cannot be written.
func (s *Server) updateRefuseWrites() {
	p := &s.persist
	s.refuseWrites.Store((p.stopWrites.Load() && p.failing.Load()) || s.aofWriteError() != nil)
}

func infoAOF(s *Server, b *strings.Builder) {
	var st replication.AOFStatus
	if s.aof != nil {
		st = s.aof.Status()
	} else {
		st = replication.AOFStatus{LastStatus: "ok", WriteOK: true}
	}
	infoLine(b, "aof_enabled", boolInt(st.Enabled))
	infoLine(b, "aof_rewrite_in_progress", boolInt(st.Rewriting))
	infoLine(b, "aof_rewrite_scheduled", boolInt(st.Scheduled))
	infoLine(b, "aof_last_rewrite_time_sec", secondsOrMinus(st.Rewrites, st.LastDuration))
	cur := int64(-1)
	if st.Rewriting {
		cur = int64(st.RewriteFor / time.Second)
	}
	infoLine(b, "aof_current_rewrite_time_sec", cur)
	infoLine(b, "aof_last_bgrewrite_status", st.LastStatus)
	infoLine(b, "aof_rewrites", st.Rewrites)
	infoLine(b, "aof_rewrites_consecutive_failures", st.FailuresInRow)
	writeStatus := "ok"
	if !st.WriteOK {
		writeStatus = "err"
	}
	infoLine(b, "aof_last_write_status", writeStatus)
	infoLine(b, "aof_last_cow_size", 0)
	if st.LastErr != nil {
		infoLine(b, "aof_last_error", strings.ReplaceAll(st.LastErr.Error(), "\n", " "))
	}
	infoLine(b, "aof_last_load_records", st.Loaded.Records)
	infoLine(b, "aof_last_load_truncated_bytes", st.Loaded.Truncated)
	if !st.Enabled {
		return
	}
	infoLine(b, "aof_current_size", st.Files.CurrentSize)
	infoLine(b, "aof_base_size", st.Files.BaseSize)
	infoLine(b, "aof_pending_rewrite", 0)
	infoLine(b, "aof_buffer_length", st.Buffered)
	infoLine(b, "aof_pending_bio_fsync", 0)
	infoLine(b, "aof_delayed_fsync", 0)
}

// errAOFMisconf is Redis's refusal of a write while the append-only file
// cannot be written.
func errAOFMisconf(err error) error {
	return WireError(fmt.Sprintf("MISCONF Errors writing to the AOF file: %s", strings.ReplaceAll(err.Error(), "\n", " ")))
}
