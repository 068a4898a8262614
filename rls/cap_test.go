package rls

import (
	"errors"
	"io"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/engine"
)

// TestRulesOverTheCapAreRefused: a rules directory larger than
// rls-config-max-bytes is refused with an error naming the directive,
// without reading it whole (a 64 MiB file costs the load no more than a
// few MiB), and the rules in use stay; at the cap it loads.
func TestRulesOverTheCapAreRefused(t *testing.T) {
	s := New(engine.New(clock.NewFake(0), 0), nil)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(readmeMongo), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.LoadDir(dir, log.New(io.Discard, "", 0)); err != nil {
		t.Fatal(err)
	}
	big, err := os.Create(filepath.Join(dir, "b.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(64 << 20); err != nil { // sparse: nothing written to disk
		t.Fatal(err)
	}
	big.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err = s.Reload()
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "rls-config-max-bytes") {
		t.Fatalf("loading 64 MiB of rules: %v, want an error naming rls-config-max-bytes", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 3*DefaultMaxConfigBytes {
		t.Errorf("refusing 64 MiB of rules allocated %d MiB", grew>>20)
	}
	if got := strings.Join(s.Rules().Domains(), ","); got != "mongo_cps" {
		t.Errorf("after the refused load the rules are of %q, want the last good ones", got)
	}

	exact := int64(len(readmeMongo))
	if err := os.Remove(filepath.Join(dir, "b.yaml")); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadDir(dir, false, exact); err != nil {
		t.Errorf("rules of exactly the cap: %v", err)
	}
	if _, err := LoadDir(dir, false, exact-1); err == nil || !strings.Contains(err.Error(), "rls-config-max-bytes") {
		t.Errorf("rules a byte over the cap: %v", err)
	}
}
