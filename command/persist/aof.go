package persist

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/persistence"
	"github.com/limitdb/limitdb/replication"
)

// The append-only file's lifecycle (opening, appending from the change
// stream, the fsync schedule, rewrites) is replication's (replication/aof.go).
// The family builds it on the stream it is handed and drives it: it
// writes the file before a round's replies go out (command.Table.OnEndRound),
// refuses writes while the file cannot be written (MISCONF), and serves
// BGREWRITEAOF, CONFIG SET appendonly and appendfsync, and INFO
// persistence's aof_* lines.

// aofConfig is the append-only file's part of the configuration.
func (f *Family) aofConfig() replication.AOFConfig {
	cfg := f.env.Config()
	return replication.AOFConfig{On: cfg.AppendOnly.AppendOnly, Dir: filepath.Join(cfg.Dir, cfg.AppendDirname),
		Name: cfg.AppendFilename, Fsync: cfg.AppendFsync, LoadTruncated: cfg.AOFLoadTruncated}
}

// LoadAOF restores the append-only file before serving, when one exists;
// loaded says whether there was one. A server with appendonly yes loads it
// instead of the snapshot file, as Redis does; without one, the caller
// loads the snapshot (LoadSnapshot) and StartAOF writes a base from it.
func (f *Family) LoadAOF() (st persistence.AOFLoadStats, loaded bool, err error) {
	if f.aof == nil {
		return st, false, nil
	}
	st, loaded, err = f.aof.Load()
	if !loaded || err != nil {
		return st, loaded, err
	}
	f.statMu.Lock()
	f.changesAtSave = f.env.Engine.Changes()
	f.statMu.Unlock()
	return st, true, nil
}

// StartAOF starts writing the append-only file when appendonly is yes and
// it is not written yet: the node calls it at start-up, CONFIG SET
// appendonly yes at run time. Its error (a file that cannot be opened)
// leaves the file off.
func (f *Family) StartAOF() error {
	if f.aof == nil {
		return nil
	}
	return f.aof.Start()
}

// reloadAOF applies appendonly and appendfsync after CONFIG SET.
func (f *Family) reloadAOF() error {
	if f.aof == nil {
		return nil
	}
	return f.aof.Reload()
}

// errAOFRewriting is Redis's answer when a rewrite is already under way.
const errAOFRewriting = command.WireError("ERR Background append only file rewriting already in progress")

// rewriteAOF starts a rewrite: through the writer when the file is on; as
// a base alone (a manifest listing just the snapshot) when it is off, as
// Redis 7 writes one.
func (f *Family) rewriteAOF() error {
	if f.aof == nil {
		return errors.New("no keyspace")
	}
	err := f.aof.Rewrite()
	if errors.Is(err, replication.ErrAOFRewriting) {
		return errAOFRewriting
	}
	return err
}

func (f *Family) cmdBGRewriteAOF(c *command.Client, _ [][]byte) {
	if err := f.rewriteAOF(); err != nil {
		c.Error(err)
		return
	}
	c.Simple("Background append only file rewriting started")
}

// aofWriteError is the error that stops writes, if any.
func (f *Family) aofWriteError() error {
	if f.aof == nil {
		return nil
	}
	return f.aof.WriteError()
}

func (f *Family) infoAOF(b *strings.Builder) {
	var st replication.AOFStatus
	if f.aof != nil {
		st = f.aof.Status()
	} else {
		st = replication.AOFStatus{LastStatus: "ok", WriteOK: true}
	}
	command.InfoLine(b, "aof_enabled", command.InfoBool(st.Enabled))
	command.InfoLine(b, "aof_rewrite_in_progress", command.InfoBool(st.Rewriting))
	command.InfoLine(b, "aof_rewrite_scheduled", command.InfoBool(st.Scheduled))
	command.InfoLine(b, "aof_last_rewrite_time_sec", secondsOrMinus(st.Rewrites, st.LastDuration))
	cur := int64(-1)
	if st.Rewriting {
		cur = int64(st.RewriteFor / time.Second)
	}
	command.InfoLine(b, "aof_current_rewrite_time_sec", cur)
	command.InfoLine(b, "aof_last_bgrewrite_status", st.LastStatus)
	command.InfoLine(b, "aof_rewrites", st.Rewrites)
	command.InfoLine(b, "aof_rewrites_consecutive_failures", st.FailuresInRow)
	writeStatus := "ok"
	if !st.WriteOK {
		writeStatus = "err"
	}
	command.InfoLine(b, "aof_last_write_status", writeStatus)
	command.InfoLine(b, "aof_last_cow_size", 0)
	if st.LastErr != nil {
		command.InfoLine(b, "aof_last_error", strings.ReplaceAll(st.LastErr.Error(), "\n", " "))
	}
	command.InfoLine(b, "aof_last_load_records", st.Loaded.Records)
	command.InfoLine(b, "aof_last_load_truncated_bytes", st.Loaded.Truncated)
	if !st.Enabled {
		return
	}
	command.InfoLine(b, "aof_current_size", st.Files.CurrentSize)
	command.InfoLine(b, "aof_base_size", st.Files.BaseSize)
	command.InfoLine(b, "aof_pending_rewrite", 0)
	command.InfoLine(b, "aof_buffer_length", st.Buffered)
	command.InfoLine(b, "aof_pending_bio_fsync", 0)
	command.InfoLine(b, "aof_delayed_fsync", 0)
}

// errAOFMisconf is Redis's refusal of a write while the append-only file
// cannot be written.
func errAOFMisconf(err error) error {
	return command.WireError(fmt.Sprintf("MISCONF Errors writing to the AOF file: %s", strings.ReplaceAll(err.Error(), "\n", " ")))
}
