package node

import (
	"flag"
	"io"
	"log"
	"os"
	"testing"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
)

// table is the command table a node serves: the core's and every family's.
func table(t *testing.T) *command.Table {
	t.Helper()
	n := New(config.Default(), engine.New(clock.NewFake(1_700_000_000e9), 0), log.New(io.Discard, "", 0))
	t.Cleanup(func() { n.Close() })
	return n.CommandServer().Commands()
}

var update = flag.Bool("update", false, "rewrite docs/commands.md from the command table")

func TestCommandReference(t *testing.T) {
	t.Parallel()
	const path = "../docs/commands.md"
	want := table(t).Reference()
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatal("docs/commands.md is out of date: run go test ./node -run TestCommandReference -update")
	}
}

func TestEveryCommandIsDocumented(t *testing.T) {
	t.Parallel()
	var check func(cmds []*command.Command)
	check = func(cmds []*command.Command) {
		for _, c := range cmds {
			if c.Summary == "" || c.Group == "" || c.Since == "" || c.Complexity == "" {
				t.Errorf("%s lacks docs: %+v", c.Name, c)
			}
			if c.Handler == nil && len(c.Subs) == 0 {
				t.Errorf("%s has no handler", c.Name)
			}
			check(c.Subs)
		}
	}
	check(table(t).Sorted())
}
