package command_test

import (
	"io"
	"log"
	"testing"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
)

// holdingGate stands in the cluster gate's slot: it takes a hold on every
// command it admits and counts the holds AfterRun ends.
type holdingGate struct{ taken, ended int }

func (h *holdingGate) Register(t *command.Table, _ command.Env) {
	t.SetGate(command.GateCluster, func(c *command.Client, _ *command.Command, _ [][]byte) bool {
		h.taken++
		c.AfterRun(func(*command.Client) { h.ended++ })
		return true
	})
}

// TestAfterRunEndsWithEveryCommand: what a gate took for a command ends
// whether the command ran or a later gate answered it instead (MULTI's
// queueing, the case a cluster's migrating slot met), so that no hold
// outlives its command.
func TestAfterRunEndsWithEveryCommand(t *testing.T) {
	t.Parallel()
	h := &holdingGate{}
	s := command.New(config.Default(), engine.New(clock.NewFake(1_700_000_000e9), 0), log.New(io.Discard, "", 0), append(families(), h)...)
	if err := s.Prepare(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := s.NewLocalClient()
	for i, st := range []struct {
		args    []string
		want    string
		refused bool // by a gate after the one that took the hold
	}{
		{[]string{"SET", "k", "v"}, "+OK\r\n", false},
		{[]string{"MULTI"}, "+OK\r\n", false},
		// queued by the MULTI gate, after the one that took the hold
		{[]string{"GET", "k"}, "+QUEUED\r\n", true},
		{[]string{"INCR", "k"}, "+QUEUED\r\n", true},
		{[]string{"DISCARD"}, "+OK\r\n", false},
	} {
		before := h.taken
		if got := string(c.DoString(st.args...)); got != st.want {
			t.Fatalf("step %d: %q = %q, want %q", i, st.args, got, st.want)
		}
		if st.refused && h.taken == before {
			t.Fatalf("step %d: %q never reached the gate: the step covers nothing", i, st.args)
		}
		if h.taken != h.ended {
			t.Fatalf("step %d, %q: %d holds taken, %d ended", i, st.args, h.taken, h.ended)
		}
	}
}
