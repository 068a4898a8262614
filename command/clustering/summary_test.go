package clustering_test

import (
	"io"
	"log"
	"testing"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/command/admin"
	"github.com/limitdb/limitdb/command/clustering"
	"github.com/limitdb/limitdb/command/conn"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
)

// TestSummary: the summary says what CLUSTER INFO says, and that cluster
// mode is off when it is.
func TestSummary(t *testing.T) {
	for _, tc := range []struct {
		mode string
		want clustering.Summary
	}{
		{"no", clustering.Summary{}},
		{"emulated", clustering.Summary{Enabled: true, Emulated: true, State: "ok", SlotsAssigned: 16384, SlotsOK: 16384, KnownNodes: 1, Size: 1}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			cfg := config.Default()
			cfg.ClusterEnabled = tc.mode
			cfg.Dir = t.TempDir()
			f := clustering.New()
			s := command.New(cfg, engine.New(clock.NewFake(1_700_000_000e9), 0), log.New(io.Discard, "", 0), conn.New(), admin.New(), f)
			if err := s.Prepare(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			got := f.Summary()
			if tc.want.Enabled && len(got.MyID) != 40 {
				t.Errorf("MyID = %q, want the node's 40-digit id", got.MyID)
			}
			got.MyID = ""
			if got != tc.want {
				t.Errorf("Summary() = %+v, want %+v", got, tc.want)
			}
		})
	}
}
