package persist_test

import (
	"io"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/command/admin"
	"github.com/limitdb/limitdb/command/conn"
	"github.com/limitdb/limitdb/command/keyspace"
	"github.com/limitdb/limitdb/command/persist"
	"github.com/limitdb/limitdb/command/ratelimit"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
)

// t0 is the fake clock's start, a whole second.
const t0 = 1_700_000_000

// newServer is a command layer with this family, PING, the keyspace and
// the rate-limit commands to write with, and administration for INFO and
// CONFIG SET; it returns the family too.
func newServer(t *testing.T, cfg config.Config, clk clock.Clock) (*command.Server, *persist.Family) {
	t.Helper()
	f := persist.New()
	s := command.New(cfg, engine.New(clk, 0), log.New(io.Discard, "", 0), conn.New(), keyspace.New(), ratelimit.New(), admin.New(), f)
	if err := s.Prepare(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, f
}

// TestStopWritesOnSnapshotError: a failed snapshot shows in INFO; with
// stop-writes-on-bgsave-error yes, writes (and PING, as in Redis) get
// MISCONF until a snapshot succeeds, reads go on; with no (the default)
// limits keep working.
func TestStopWritesOnSnapshotError(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Dir = t.TempDir()
	s, f := newServer(t, cfg, clock.NewFake(t0*1e9))
	c := s.NewLocalClient()
	blocker := filepath.Join(cfg.Dir, cfg.DBFilename)
	if err := os.Mkdir(blocker, 0o755); err != nil { // the snapshot's rename fails
		t.Fatal(err)
	}
	misconf := func(got []byte) bool { return strings.HasPrefix(string(got), "-MISCONF ") }
	steps := []struct {
		args []string
		want func([]byte) bool
		what string
	}{
		{[]string{"SAVE"}, func(b []byte) bool { return b[0] == '-' }, "SAVE fails"},
		{[]string{"INFO", "persistence"}, func(b []byte) bool { return strings.Contains(string(b), "rdb_last_bgsave_status:err") }, "INFO says err"},
		{[]string{"CL.THROTTLE", "k", "5", "10", "60"}, func(b []byte) bool { return b[0] == '*' }, "a limiter works (default no)"},
		{[]string{"CONFIG", "SET", "stop-writes-on-bgsave-error", "yes"}, func(b []byte) bool { return string(b) == "+OK\r\n" }, "CONFIG SET"},
		{[]string{"CL.THROTTLE", "k", "5", "10", "60"}, misconf, "a limiter is refused"},
		{[]string{"CL.THROTTLE", "k", "5", "10", "60", "0"}, func(b []byte) bool { return b[0] == '*' }, "a limiter that only peeks works"},
		{[]string{"SET", "a", "1"}, misconf, "SET is refused"},
		{[]string{"PING"}, misconf, "PING is refused, as in Redis"},
		{[]string{"GET", "a"}, func(b []byte) bool { return string(b) == "$-1\r\n" }, "GET works"},
		{[]string{"EXISTS", "k"}, func(b []byte) bool { return string(b) == ":1\r\n" }, "EXISTS works"},
	}
	for i, st := range steps {
		if got := c.DoString(st.args...); !st.want(got) {
			t.Fatalf("step %d (%s): %q answered %q", i, st.what, st.args, got)
		}
	}
	if !f.Failing() {
		t.Error("Failing is false after a failed snapshot")
	}
	os.Remove(blocker)
	if got := string(c.DoString("SAVE")); got != "+OK\r\n" {
		t.Fatalf("SAVE once the cause is gone: %q", got)
	}
	if got := c.DoString("SET", "a", "1"); string(got) != "+OK\r\n" {
		t.Fatalf("SET after a good snapshot: %q", got)
	}
	if f.Failing() {
		t.Error("Failing is true after a good snapshot")
	}
}

// TestSaveAndLastSave: LASTSAVE answers the start until a snapshot is
// written, then that snapshot's time; Dirty counts the writes since, and
// the file loads into another server.
func TestSaveAndLastSave(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Dir = t.TempDir()
	clk := clock.NewFake(t0 * 1e9)
	s, f := newServer(t, cfg, clk)
	c := s.NewLocalClient()
	start := ":" + strconv.Itoa(t0) + "\r\n"
	if got := string(c.DoString("LASTSAVE")); got != start {
		t.Fatalf("LASTSAVE before any snapshot = %q, want %q", got, start)
	}
	if !f.LastSave().IsZero() {
		t.Fatal("LastSave is set before any snapshot")
	}
	c.DoString("SET", "a", "1")
	c.DoString("SET", "b", "2")
	if got := f.Dirty(); got != 2 {
		t.Fatalf("Dirty = %d after two writes, want 2", got)
	}
	clk.Advance(90 * time.Second)
	if got := string(c.DoString("SAVE")); got != "+OK\r\n" {
		t.Fatalf("SAVE = %q", got)
	}
	if got, want := string(c.DoString("LASTSAVE")), ":"+strconv.Itoa(t0+90)+"\r\n"; got != want {
		t.Fatalf("LASTSAVE after SAVE = %q, want %q", got, want)
	}
	if got := f.Dirty(); got != 0 {
		t.Fatalf("Dirty = %d after SAVE, want 0", got)
	}
	if got, want := f.SnapshotPath(), filepath.Join(cfg.Dir, cfg.DBFilename); got != want {
		t.Fatalf("SnapshotPath = %q, want %q", got, want)
	}

	s2, f2 := newServer(t, cfg, clk)
	st, err := f2.LoadSnapshot()
	if err != nil || st.Keys != 2 {
		t.Fatalf("LoadSnapshot = %+v, %v; want 2 keys", st, err)
	}
	if got := string(s2.NewLocalClient().DoString("GET", "b")); got != "$1\r\n2\r\n" {
		t.Fatalf("GET b after loading = %q", got)
	}
	if got := string(s2.NewLocalClient().DoString("INFO", "persistence")); !strings.Contains(got, "rdb_last_load_keys_loaded:2\r\n") {
		t.Fatalf("INFO persistence after loading lacks rdb_last_load_keys_loaded:2:\n%s", got)
	}
}

// TestLoadWithoutFiles: with neither a snapshot nor an append-only file,
// loading finds nothing and is no error.
func TestLoadWithoutFiles(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Dir = t.TempDir()
	cfg.AppendOnly.AppendOnly = true
	_, f := newServer(t, cfg, clock.NewFake(t0*1e9))
	if _, loaded, err := f.LoadAOF(); loaded || err != nil {
		t.Fatalf("LoadAOF with no file = %v, %v", loaded, err)
	}
	if st, err := f.LoadSnapshot(); err != nil || !st.Created.IsZero() {
		t.Fatalf("LoadSnapshot with no file = %+v, %v", st, err)
	}
}

// TestBGSave: BGSAVE answers at once and the snapshot follows, which a
// save waits for; arguments other than SCHEDULE are a syntax error.
func TestBGSave(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Dir = t.TempDir()
	s, f := newServer(t, cfg, clock.NewFake(t0*1e9))
	c := s.NewLocalClient()
	c.DoString("SET", "a", "1")
	if got := string(c.DoString("BGSAVE", "NOW")); got != "-ERR syntax error\r\n" {
		t.Fatalf("BGSAVE NOW = %q", got)
	}
	if got := string(c.DoString("BGSAVE")); got != "+Background saving started\r\n" {
		t.Fatalf("BGSAVE = %q", got)
	}
	if err := f.Save(); err != nil { // waits for the BGSAVE to end
		t.Fatal(err)
	}
	if got := string(c.DoString("INFO", "persistence")); !strings.Contains(got, "rdb_saves:2\r\n") || !strings.Contains(got, "rdb_bgsave_in_progress:0\r\n") {
		t.Fatalf("INFO persistence after BGSAVE and a save lacks rdb_saves:2:\n%s", got)
	}
}

// TestInfoPersistence: INFO persistence names its fields in Redis's order,
// the aof_* ones last, with the snapshot's file.
func TestInfoPersistence(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Dir = t.TempDir()
	s, _ := newServer(t, cfg, clock.NewFake(t0*1e9))
	got := string(s.NewLocalClient().DoString("INFO", "persistence"))
	var names []string
	for _, line := range strings.Split(got, "\r\n") {
		if k, _, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
			names = append(names, k)
		}
	}
	want := []string{"loading", "rdb_changes_since_last_save", "rdb_bgsave_in_progress", "rdb_last_save_time",
		"rdb_last_bgsave_status", "rdb_last_bgsave_time_sec", "rdb_current_bgsave_time_sec", "rdb_saves",
		"rdb_last_save_duration_ms", "rdb_last_save_keys", "rdb_last_save_bytes", "rdb_last_save_max_shard_hold_us",
		"rdb_last_save_mean_shard_hold_us", "rdb_last_load_keys_loaded", "rdb_last_load_keys_expired", "rdb_file",
		"aof_enabled", "aof_rewrite_in_progress", "aof_rewrite_scheduled", "aof_last_rewrite_time_sec",
		"aof_current_rewrite_time_sec", "aof_last_bgrewrite_status", "aof_rewrites", "aof_rewrites_consecutive_failures",
		"aof_last_write_status", "aof_last_cow_size", "aof_last_load_records", "aof_last_load_truncated_bytes"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("INFO persistence fields:\n got %v\nwant %v", names, want)
	}
	for _, line := range []string{"rdb_last_save_time:" + strconv.Itoa(t0), "rdb_last_bgsave_status:ok", "rdb_saves:0",
		"rdb_file:" + filepath.Join(cfg.Dir, cfg.DBFilename), "aof_enabled:0", "aof_last_write_status:ok"} {
		if !strings.Contains(got, "\r\n"+line+"\r\n") {
			t.Errorf("INFO persistence lacks %q:\n%s", line, got)
		}
	}
}
