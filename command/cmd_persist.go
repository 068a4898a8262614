package command

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/persistence"
)

func registerPersist(t *Table) {
	t.Register(
		&Command{Name: "save", Arity: 1, Flags: FlagAdmin | FlagNoMulti, Group: "server", Since: "0.1.0",
			Complexity: "O(N) where N is the number of keys", Summary: "Writes a snapshot of every live key to disk and waits for it.",
			Handler: cmdSave},
		&Command{Name: "bgsave", Arity: -1, Flags: FlagAdmin, Group: "server", Since: "0.1.0",
			Complexity: "O(N) where N is the number of keys", Summary: "Writes a snapshot in the background while serving continues.",
			Syntax: "[SCHEDULE]", Handler: cmdBGSave},
		&Command{Name: "lastsave", Arity: 1, Flags: FlagFast | FlagLoading | FlagStale, Group: "server", Since: "0.1.0",
			Complexity: "O(1)", Summary: "Returns the Unix time of the last successful snapshot.",
			Handler: cmdLastSave},
	)
	t.registerInfo("persistence", 40, infoPersistence)
}

// persistState is the server's snapshot bookkeeping.
type persistState struct {
	mu         sync.Mutex  // held while a snapshot is written: one at a time
	bgRunning  atomic.Bool // a BGSAVE is under way
	failing    atomic.Bool // the last snapshot failed
	stopWrites atomic.Bool // stop-writes-on-bgsave-error
	bgStart    atomic.Int64

	statMu        sync.Mutex
	lastSave      time.Time // last successful save (start-up time before any)
	lastStatus    string    // "ok" or "err"
	lastErr       error
	last          persistence.SaveStats
	saves         int64
	changesAtSave int64 // engine.Changes() when the last successful save began
	loaded        persistence.LoadStats
}

// SnapshotFailing reports whether the last snapshot failed (INFO's
// rdb_last_bgsave_status:err, the metrics' limitdb_snapshot_failing).
func (s *Server) SnapshotFailing() bool { return s.persist.failing.Load() }

// errMisconf is Redis's refusal of a write while snapshots fail.
var errMisconf = WireError("MISCONF limitdb is configured to save snapshots, but it is currently unable to persist to disk. " +
	"Commands that may modify the data set are disabled, because this instance is configured to report errors during writes " +
	"if snapshotting fails (stop-writes-on-bgsave-error option). Please check the limitdb logs for details about the error.")

// misconfGate refuses write commands, and PING as Redis does, while the
// last snapshot failed and stop-writes-on-bgsave-error is yes, or while
// the append-only file cannot be written (modeGate calls it).
func misconfGate(c *Client, cmd *Command, args [][]byte) bool {
	p := &c.srv.persist
	if (cmd.Flags&FlagWrite == 0 && cmd.Name != "ping") || isPeek(cmd, args) {
		return true
	}
	if p.failing.Load() && p.stopWrites.Load() {
		c.Error(errMisconf)
		return false
	}
	if err := c.srv.aofWriteError(); err != nil {
		c.Error(errAOFMisconf(err))
		return false
	}
	return true
}

// SnapshotPath is where snapshots are written and read.
func (s *Server) SnapshotPath() string {
	cfg := s.Config()
	return filepath.Join(cfg.Dir, cfg.DBFilename)
}

// Save writes a snapshot now and waits for it; it waits for a running
// BGSAVE to finish first.
func (s *Server) Save() error {
	p := &s.persist
	p.mu.Lock()
	defer p.mu.Unlock()
	return s.saveLocked()
}

func (s *Server) saveLocked() error {
	p := &s.persist
	path := s.SnapshotPath()
	changes := s.eng.Changes()
	err := os.MkdirAll(filepath.Dir(path), 0o755)
	var st persistence.SaveStats
	if err == nil {
		st, err = persistence.Save(path, s.eng, &s.sections)
	}
	p.statMu.Lock()
	defer p.statMu.Unlock()
	if err != nil {
		p.lastStatus, p.lastErr = "err", err
		p.failing.Store(true)
		s.updateRefuseWrites()
		s.logger.Printf("snapshot failed: %v", err)
		if p.stopWrites.Load() {
			s.logger.Printf("writes refused (MISCONF) until a snapshot succeeds: stop-writes-on-bgsave-error is yes")
		}
		return err
	}
	p.lastStatus, p.lastErr = "ok", nil
	p.failing.Store(false)
	s.updateRefuseWrites()
	p.lastSave, p.last, p.changesAtSave = st.Started, st, changes
	p.saves++
	s.logger.Printf("snapshot saved to %s: %d keys, %d bytes in %v (longest shard hold %v)",
		path, st.Keys, st.Bytes, st.Duration.Round(time.Microsecond), st.MaxShardHold.Round(time.Microsecond))
	return nil
}

// errBGRunning is Redis's answer when a save is already under way.
var errBGRunning = WireError("ERR Background save already in progress")

// BGSave starts a snapshot in the background and returns at once.
func (s *Server) BGSave() error {
	p := &s.persist
	if !p.mu.TryLock() {
		return errBGRunning
	}
	p.bgRunning.Store(true)
	p.bgStart.Store(s.clk.Now())
	go func() {
		defer p.mu.Unlock()
		defer p.bgRunning.Store(false)
		s.saveLocked()
	}()
	return nil
}

// Dirty is the number of writes since the last successful save.
func (s *Server) Dirty() int64 {
	p := &s.persist
	p.statMu.Lock()
	defer p.statMu.Unlock()
	return s.eng.Changes() - p.changesAtSave
}

// LoadSnapshot restores the snapshot file into the engine (before Serve).
// A missing file is not an error: it returns zero stats and a nil error.
func (s *Server) LoadSnapshot() (persistence.LoadStats, error) {
	st, err := persistence.Load(s.SnapshotPath(), s.eng, &s.sections)
	if errors.Is(err, persistence.ErrNotExist) {
		err = nil
	}
	p := &s.persist
	p.statMu.Lock()
	if err == nil {
		p.loaded = st
		p.changesAtSave = s.eng.Changes()
	}
	p.statMu.Unlock()
	return st, err
}

func cmdSave(c *Client, _ [][]byte) {
	if c.srv.persist.bgRunning.Load() {
		c.Error(errBGRunning)
		return
	}
	if err := c.srv.Save(); err != nil {
		c.Errf("%v", err)
		return
	}
	c.OK()
}

func cmdBGSave(c *Client, args [][]byte) {
	schedule := false
	for _, a := range args[1:] {
		if !EqualFold(a, "schedule") {
			c.Error(ErrSyntax)
			return
		}
		schedule = true
	}
	if err := c.srv.BGSave(); err != nil {
		if schedule {
			c.Simple("Background saving scheduled")
			go c.srv.Save()
			return
		}
		c.Error(err)
		return
	}
	c.Simple("Background saving started")
}

func cmdLastSave(c *Client, _ [][]byte) {
	p := &c.srv.persist
	p.statMu.Lock()
	last := p.lastSave
	p.statMu.Unlock()
	if last.IsZero() {
		last = c.srv.started
	}
	c.Int(last.Unix())
}

func infoPersistence(s *Server, eng *engine.Engine, b *strings.Builder) {
	p := &s.persist
	dirty := s.Dirty()
	p.statMu.Lock()
	defer p.statMu.Unlock()
	last := p.lastSave
	if last.IsZero() {
		last = s.started
	}
	status := p.lastStatus
	if status == "" {
		status = "ok"
	}
	infoLine(b, "loading", 0)
	infoLine(b, "rdb_changes_since_last_save", dirty)
	infoLine(b, "rdb_bgsave_in_progress", boolInt(p.bgRunning.Load()))
	infoLine(b, "rdb_last_save_time", last.Unix())
	infoLine(b, "rdb_last_bgsave_status", status)
	infoLine(b, "rdb_last_bgsave_time_sec", secondsOrMinus(p.saves, p.last.Duration))
	cur := int64(-1)
	if p.bgRunning.Load() {
		cur = int64(s.since(time.Unix(0, p.bgStart.Load())) / time.Second)
	}
	infoLine(b, "rdb_current_bgsave_time_sec", cur)
	infoLine(b, "rdb_saves", p.saves)
	infoLine(b, "rdb_last_save_duration_ms", p.last.Duration.Milliseconds())
	infoLine(b, "rdb_last_save_keys", p.last.Keys)
	infoLine(b, "rdb_last_save_bytes", p.last.Bytes)
	infoLine(b, "rdb_last_save_max_shard_hold_us", p.last.MaxShardHold.Microseconds())
	infoLine(b, "rdb_last_save_mean_shard_hold_us", p.last.MeanShardHold.Microseconds())
	if p.lastErr != nil {
		infoLine(b, "rdb_last_error", strings.ReplaceAll(p.lastErr.Error(), "\n", " "))
	}
	infoLine(b, "rdb_last_load_keys_loaded", p.loaded.Keys)
	infoLine(b, "rdb_last_load_keys_expired", p.loaded.Expired)
	infoLine(b, "rdb_file", s.SnapshotPath())
	infoAOF(s, b)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func secondsOrMinus(n int64, d time.Duration) string {
	if n == 0 {
		return "-1"
	}
	return fmt.Sprint(int64(d / time.Second))
}
