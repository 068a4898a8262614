// Package persist is the family of persistence commands: SAVE, BGSAVE,
// LASTSAVE, BGREWRITEAOF and INFO persistence. It owns the snapshot
// bookkeeping (one save at a time, the last one's outcome and figures,
// the writes since it), the append-only file's writer (replication.AOF,
// which it builds on the change stream it is handed), the MISCONF gate
// (writes refused after a failed snapshot under
// stop-writes-on-bgsave-error, or while the append-only file cannot be
// written) and the reloads of config.ReloadPersistence and
// config.ReloadAppendOnly.
//
// The assembly holds the family value: it loads the data at start-up
// (LoadAOF, LoadSnapshot), starts the append-only file (StartAOF),
// schedules automatic snapshots (Dirty, LastSave, BGSave) and writes the
// final one (Save); the metrics read LastSave and Failing. The snapshot
// sections every family adds (command.Table.AddSection) are the core's,
// handed here in command.Env.
//
// It imports the command core, the configuration, the engine,
// persistence and replication; never another family, the transport or
// the assembly.
package persist

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/persistence"
	"github.com/limitdb/limitdb/replication"
)

// Family is the persistence commands with the snapshot and append-only
// file state they keep. Its methods may be called from any goroutine once
// Register has run.
type Family struct {
	env command.Env
	aof *replication.AOF // nil without a keyspace (a configuration check)

	mu           sync.Mutex  // held while a snapshot is written: one at a time
	bgRunning    atomic.Bool // a BGSAVE is under way
	failing      atomic.Bool // the last snapshot failed
	stopWrites   atomic.Bool // stop-writes-on-bgsave-error
	refuseWrites atomic.Bool // writes answer MISCONF (SetMisconfCheck)
	bgStart      atomic.Int64

	statMu        sync.Mutex
	lastSave      time.Time // last successful save; zero before any
	lastStatus    string    // "ok" or "err"
	lastErr       error
	last          persistence.SaveStats
	saves         int64
	changesAtSave int64 // engine.Changes() when the last successful save began
	loaded        persistence.LoadStats
}

// New returns the family; Register hands it the keyspace and the change
// stream.
func New() *Family { return &Family{} }

// Register adds the family's commands, INFO persistence, the MISCONF
// check, the snapshot SHUTDOWN writes, the append-only file's write at
// the end of each round and its stop at Close, and the reloads of the
// persistence and append-only directives to t.
func (f *Family) Register(t *command.Table, env command.Env) {
	f.env = env
	f.stopWrites.Store(env.Config().StopWritesOnBGSaveError)
	if env.Replication != nil {
		f.aof = env.Replication.NewAOF(f.aofConfig, f.updateRefuseWrites)
		t.OnEndRound(f.aof.CatchUp)
		t.OnClose(f.aof.Stop)
	}
	f.registerCommands(t)
	t.AddInfo("persistence", 40, f.infoPersistence)
	t.SetMisconfCheck(&f.refuseWrites, f.misconfCheck)
	t.SetSave(f.Save)
	t.OnReload(config.ReloadAppendOnly, f.reloadAOF)
	t.OnReload(config.ReloadPersistence, func() error {
		f.stopWrites.Store(f.env.Config().StopWritesOnBGSaveError)
		f.updateRefuseWrites()
		return nil
	})
}

func (f *Family) registerCommands(t *command.Table) {
	t.Register(
		&command.Command{Name: "save", Arity: 1, Flags: command.FlagAdmin | command.FlagNoMulti, Group: "server", Since: "0.1.0",
			Complexity: "O(N) where N is the number of keys", Summary: "Writes a snapshot of every live key to disk and waits for it.",
			Handler: f.cmdSave},
		&command.Command{Name: "bgsave", Arity: -1, Flags: command.FlagAdmin, Group: "server", Since: "0.1.0",
			Complexity: "O(N) where N is the number of keys", Summary: "Writes a snapshot in the background while serving continues.",
			Syntax: "[SCHEDULE]", Handler: f.cmdBGSave},
		&command.Command{Name: "lastsave", Arity: 1, Flags: command.FlagFast | command.FlagLoading | command.FlagStale, Group: "server", Since: "0.1.0", ACLCats: []string{"admin", "dangerous"},
			Complexity: "O(1)", Summary: "Returns the Unix time of the last successful snapshot.",
			Handler: f.cmdLastSave},
		&command.Command{Name: "bgrewriteaof", Arity: 1, Flags: command.FlagAdmin, Group: "server", Since: "0.1.0",
			Complexity: "O(N) where N is the number of keys",
			Summary:    "Rewrites the append-only file as a snapshot of the keyspace and starts a new incremental file, in the background.",
			Handler:    f.cmdBGRewriteAOF},
	)
}

// Failing reports whether the last snapshot failed (INFO's
// rdb_last_bgsave_status:err, the metrics' limitdb_snapshot_failing).
func (f *Family) Failing() bool { return f.failing.Load() }

// errMisconf is Redis's refusal of a write while snapshots fail.
const errMisconf = command.WireError("MISCONF limitdb is configured to save snapshots, but it is currently unable to persist to disk. " +
	"Commands that may modify the data set are disabled, because this instance is configured to report errors during writes " +
	"if snapshotting fails (stop-writes-on-bgsave-error option). Please check the limitdb logs for details about the error.")

// misconfCheck refuses write commands, and PING as Redis does, while the
// last snapshot failed and stop-writes-on-bgsave-error is yes, or while
// the append-only file cannot be written; a limiter command whose cost
// is 0 only peeks, and is served.
func (f *Family) misconfCheck(c *command.Client, cmd *command.Command, args [][]byte) bool {
	if (cmd.Flags&command.FlagWrite == 0 && cmd.Name != "ping") || cmd.Peeks(args) {
		return true
	}
	if f.failing.Load() && f.stopWrites.Load() {
		c.Error(errMisconf)
		return false
	}
	if err := f.aofWriteError(); err != nil {
		c.Error(errAOFMisconf(err))
		return false
	}
	return true
}

// updateRefuseWrites recomputes whether writes answer MISCONF: a failed
// snapshot under stop-writes-on-bgsave-error, or an append-only file that
// cannot be written.
func (f *Family) updateRefuseWrites() {
	f.refuseWrites.Store((f.stopWrites.Load() && f.failing.Load()) || f.aofWriteError() != nil)
}

// SnapshotPath is where snapshots are written and read: dir joined with
// dbfilename, as the running configuration says now.
func (f *Family) SnapshotPath() string {
	cfg := f.env.Config()
	return filepath.Join(cfg.Dir, cfg.DBFilename)
}

// Save writes a snapshot now and waits for it (SAVE, SHUTDOWN, a signal);
// it waits for a running BGSAVE to finish first. Its error says why the
// snapshot was not written, and until one is, Failing reports true.
func (f *Family) Save() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.saveLocked()
}

func (f *Family) saveLocked() error {
	path := f.SnapshotPath()
	eng, logger := f.env.Engine, f.env.Logger
	changes := eng.Changes()
	err := os.MkdirAll(filepath.Dir(path), 0o755)
	var st persistence.SaveStats
	if err == nil {
		st, err = persistence.Save(path, eng, f.env.Sections)
	}
	f.statMu.Lock()
	defer f.statMu.Unlock()
	if err != nil {
		f.lastStatus, f.lastErr = "err", err
		f.failing.Store(true)
		f.updateRefuseWrites()
		logger.Printf("snapshot failed: %v", err)
		if f.stopWrites.Load() {
			logger.Printf("writes refused (MISCONF) until a snapshot succeeds: stop-writes-on-bgsave-error is yes")
		}
		return err
	}
	f.lastStatus, f.lastErr = "ok", nil
	f.failing.Store(false)
	f.updateRefuseWrites()
	f.lastSave, f.last, f.changesAtSave = st.Started, st, changes
	f.saves++
	logger.Printf("snapshot saved to %s: %d keys, %d bytes in %v (longest shard hold %v)",
		path, st.Keys, st.Bytes, st.Duration.Round(time.Microsecond), st.MaxShardHold.Round(time.Microsecond))
	return nil
}

// errBGRunning is Redis's answer when a save is already under way.
const errBGRunning = command.WireError("ERR Background save already in progress")

// BGSave starts a snapshot in the background and returns at once; while
// another save runs it starts none and returns the wire's "Background
// save already in progress" error.
func (f *Family) BGSave() error {
	if !f.mu.TryLock() {
		return errBGRunning
	}
	f.bgRunning.Store(true)
	f.bgStart.Store(f.env.Clock.Now())
	go func() {
		defer f.mu.Unlock()
		defer f.bgRunning.Store(false)
		f.saveLocked()
	}()
	return nil
}

// Dirty is the number of writes since the last successful save, or since
// the data was loaded when none has been.
func (f *Family) Dirty() int64 {
	f.statMu.Lock()
	defer f.statMu.Unlock()
	return f.env.Engine.Changes() - f.changesAtSave
}

// LastSave is when the last snapshot was written successfully, or the
// zero time when none has been since start (LASTSAVE and INFO answer the
// start then; the snapshot-age gauge and the automatic snapshots count
// from it).
func (f *Family) LastSave() time.Time {
	f.statMu.Lock()
	defer f.statMu.Unlock()
	return f.lastSave
}

// lastSaveOrStart is LASTSAVE's time: the last successful save, or the
// start before any.
func (f *Family) lastSaveOrStart() time.Time {
	if last := f.LastSave(); !last.IsZero() {
		return last
	}
	return f.env.Started
}

// LoadSnapshot restores the snapshot file into the engine, before the
// node serves. A missing file is not an error: it returns zero stats and
// a nil error.
func (f *Family) LoadSnapshot() (persistence.LoadStats, error) {
	st, err := persistence.Load(f.SnapshotPath(), f.env.Engine, f.env.Sections)
	if errors.Is(err, persistence.ErrNotExist) {
		err = nil
	}
	f.statMu.Lock()
	if err == nil {
		f.loaded = st
		f.changesAtSave = f.env.Engine.Changes()
	}
	f.statMu.Unlock()
	return st, err
}

func (f *Family) cmdSave(c *command.Client, _ [][]byte) {
	if f.bgRunning.Load() {
		c.Error(errBGRunning)
		return
	}
	if err := f.Save(); err != nil {
		c.Errf("%v", err)
		return
	}
	c.OK()
}

func (f *Family) cmdBGSave(c *command.Client, args [][]byte) {
	schedule := false
	for _, a := range args[1:] {
		if !command.EqualFold(a, "schedule") {
			c.Error(command.ErrSyntax)
			return
		}
		schedule = true
	}
	if err := f.BGSave(); err != nil {
		if schedule {
			c.Simple("Background saving scheduled")
			go f.Save()
			return
		}
		c.Error(err)
		return
	}
	c.Simple("Background saving started")
}

func (f *Family) cmdLastSave(c *command.Client, _ [][]byte) {
	c.Int(f.lastSaveOrStart().Unix())
}

func (f *Family) infoPersistence(_ *engine.Engine, b *strings.Builder) {
	dirty := f.Dirty()
	f.statMu.Lock()
	defer f.statMu.Unlock()
	last := f.lastSave
	if last.IsZero() {
		last = f.env.Started
	}
	status := f.lastStatus
	if status == "" {
		status = "ok"
	}
	command.InfoLine(b, "loading", 0)
	command.InfoLine(b, "rdb_changes_since_last_save", dirty)
	command.InfoLine(b, "rdb_bgsave_in_progress", command.InfoBool(f.bgRunning.Load()))
	command.InfoLine(b, "rdb_last_save_time", last.Unix())
	command.InfoLine(b, "rdb_last_bgsave_status", status)
	command.InfoLine(b, "rdb_last_bgsave_time_sec", secondsOrMinus(f.saves, f.last.Duration))
	cur := int64(-1)
	if f.bgRunning.Load() {
		cur = (f.env.Clock.Now() - f.bgStart.Load()) / int64(time.Second)
	}
	command.InfoLine(b, "rdb_current_bgsave_time_sec", cur)
	command.InfoLine(b, "rdb_saves", f.saves)
	command.InfoLine(b, "rdb_last_save_duration_ms", f.last.Duration.Milliseconds())
	command.InfoLine(b, "rdb_last_save_keys", f.last.Keys)
	command.InfoLine(b, "rdb_last_save_bytes", f.last.Bytes)
	command.InfoLine(b, "rdb_last_save_max_shard_hold_us", f.last.MaxShardHold.Microseconds())
	command.InfoLine(b, "rdb_last_save_mean_shard_hold_us", f.last.MeanShardHold.Microseconds())
	if f.lastErr != nil {
		command.InfoLine(b, "rdb_last_error", strings.ReplaceAll(f.lastErr.Error(), "\n", " "))
	}
	command.InfoLine(b, "rdb_last_load_keys_loaded", f.loaded.Keys)
	command.InfoLine(b, "rdb_last_load_keys_expired", f.loaded.Expired)
	command.InfoLine(b, "rdb_file", f.SnapshotPath())
	f.infoAOF(b)
}

func secondsOrMinus(n int64, d time.Duration) string {
	if n == 0 {
		return "-1"
	}
	return fmt.Sprint(int64(d / time.Second))
}
