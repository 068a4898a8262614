package command

import (
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/commands.md from the command table")

func TestCommandReference(t *testing.T) {
	t.Parallel()
	const path = "../docs/commands.md"
	want := NewTable().Reference()
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
		t.Fatal("docs/commands.md is out of date: run go test ./command -run TestCommandReference -update")
	}
}

func TestEveryCommandIsDocumented(t *testing.T) {
	t.Parallel()
	var check func(cmds []*Command)
	check = func(cmds []*Command) {
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
	check(NewTable().Sorted())
}
