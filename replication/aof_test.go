package replication

import (
	"bytes"
	"io"
	"log"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/engine"
)

// TestAOFWritesTheStreamAndLoadsItBack: a file started on a keyspace
// begins with a rewrite; what the engine writes afterwards reaches the
// file by the time CatchUp returns, and another server loads the same
// keys from it.
func TestAOFWritesTheStreamAndLoadsItBack(t *testing.T) {
	const now = int64(1_700_000_000e9)
	clk := clock.NewFake(now)
	cfg := AOFConfig{On: true, Dir: t.TempDir(), Name: "appendonly.aof", Fsync: "always", LoadTruncated: true}
	open := func() (*engine.Engine, *Manager, *AOF) {
		eng := engine.New(clk, 4)
		m := New(eng, log.New(io.Discard, "", 0), &benchHost{}, 1<<20)
		return eng, m, m.NewAOF(func() AOFConfig { return cfg }, nil)
	}

	eng, m, a := open()
	eng.SetString([]byte("before"), now, []byte("base"), engine.SetOptions{}, nil)
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for st := a.Status(); st.Rewrites == 0; st = a.Status() {
		if st.LastErr != nil || time.Now().After(deadline) {
			t.Fatalf("the first rewrite did not finish: %+v", st)
		}
		time.Sleep(time.Millisecond)
	}
	eng.SetString([]byte("a"), now, []byte("1"), engine.SetOptions{}, nil)
	if _, err := eng.IncrBy([]byte("n"), now, 42); err != nil {
		t.Fatal(err)
	}
	m.Publish()
	a.CatchUp()
	if st := a.Status(); !st.Enabled || !st.WriteOK || st.Buffered != 0 {
		t.Fatalf("after CatchUp: %+v", st)
	}
	if err := a.WriteError(); err != nil {
		t.Fatal(err)
	}
	a.Stop()
	m.Close()

	eng2, m2, a2 := open()
	defer m2.Close()
	st, loaded, err := a2.Load()
	if err != nil || !loaded {
		t.Fatalf("Load = %+v, %v, %v", st, loaded, err)
	}
	for _, k := range []string{"before", "a", "n"} {
		want, _ := eng.Get([]byte(k), now)
		got, ok := eng2.Get([]byte(k), now)
		wb, _ := want.AppendBinary(nil)
		gb, _ := got.AppendBinary(nil)
		if !ok || !bytes.Equal(gb, wb) {
			t.Errorf("key %s: loaded %+v, want %+v", k, got, want)
		}
	}
}

// TestAOFRewriteWhileOneRuns: a rewrite asked for while one runs is
// refused with ErrAOFRewriting, which the command layer answers as Redis
// does.
func TestAOFRewriteWhileOneRuns(t *testing.T) {
	clk := clock.NewFake(1_700_000_000e9)
	m := New(engine.New(clk, 4), log.New(io.Discard, "", 0), &benchHost{}, 1<<20)
	defer m.Close()
	cfg := AOFConfig{Dir: t.TempDir(), Name: "appendonly.aof"}
	a := m.NewAOF(func() AOFConfig { return cfg }, nil)
	if !a.beginRewrite() {
		t.Fatal("no rewrite could begin")
	}
	if err := a.Rewrite(); err != ErrAOFRewriting {
		t.Fatalf("Rewrite during a rewrite = %v, want ErrAOFRewriting", err)
	}
	a.rewriteDone(nil, 0) // the running one ends: one rewrite counted
	if err := a.Rewrite(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for st := a.Status(); st.Rewrites < 2 || st.Rewriting; st = a.Status() {
		if time.Now().After(deadline) {
			t.Fatalf("the rewrite did not finish: %+v", a.Status())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestAOFRewriteAskedDuringOneRunsAfterIt: a rewrite the writer needs
// while one runs (a replica's full copy arriving during the first
// rewrite) is scheduled, and starts when the running one ends.
func TestAOFRewriteAskedDuringOneRunsAfterIt(t *testing.T) {
	clk := clock.NewFake(1_700_000_000e9)
	m := New(engine.New(clk, 4), log.New(io.Discard, "", 0), &benchHost{}, 1<<20)
	defer m.Close()
	cfg := AOFConfig{On: true, Dir: t.TempDir(), Name: "appendonly.aof", Fsync: "everysec"}
	a := m.NewAOF(func() AOFConfig { return cfg }, nil)
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	until := func(what string, ok func(AOFStatus) bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !ok(a.Status()) {
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %s: %+v", what, a.Status())
			}
			time.Sleep(time.Millisecond)
		}
	}
	until("the first rewrite", func(st AOFStatus) bool { return st.Rewrites == 1 && !st.Rewriting })
	if !a.beginRewrite() { // one runs
		t.Fatal("no rewrite could begin")
	}
	a.run.Load().rewrite <- struct{}{} // the writer needs one
	until("the rewrite scheduled", func(st AOFStatus) bool { return st.Scheduled })
	a.rewriteDone(nil, 0) // the running one ends
	until("the scheduled rewrite", func(st AOFStatus) bool { return st.Rewrites == 3 && !st.Rewriting && !st.Scheduled })
}
