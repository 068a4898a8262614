package archtest

import (
	"go/ast"
	"go/token"
	"strings"
	"testing"
)

// TestNoFamilyReachesIntoAServer: a family's code names no server object
// (command.Server) and asks no client for one (Client.Server): what it
// needs comes in command.Env, through the table's registration points or a
// small interface.
func TestNoFamilyReachesIntoAServer(t *testing.T) {
	pkgs := load(t)
	for _, dir := range sorted(pkgs) {
		if !family(dir) {
			continue
		}
		p := pkgs[dir]
		for _, name := range sorted(p.files) {
			f := p.files[name]
			cmd := importName(f, module+"command")
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); ok && cmd != "" && id.Name == cmd && sel.Sel.Name == "Server" {
					t.Errorf("%s/%s:%d names command.Server: a family is handed what it needs, never the server", dir, name, p.fset.Position(sel.Pos()).Line)
				}
				return true
			})
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Server" && len(call.Args) == 0 {
					t.Errorf("%s/%s:%d calls .Server(): a family is handed what it needs, never the server", dir, name, p.fset.Position(call.Pos()).Line)
				}
				return true
			})
		}
	}
}

// TestTheGateOrderIsOneList: the gates, and their order, are declared in
// one file of the core, command/gate.go, as Redis keeps its checks in one
// function; no other file declares a Gate or orders gates by number.
func TestTheGateOrderIsOneList(t *testing.T) {
	p := load(t)["command"]
	if p == nil {
		t.Fatal("no command package")
	}
	found := false
	for _, name := range sorted(p.files) {
		for _, d := range p.files[name].Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				for _, id := range spec.(*ast.ValueSpec).Names {
					if !strings.HasPrefix(id.Name, "Gate") {
						continue
					}
					if name != "gate.go" {
						t.Errorf("command/%s declares gate %s: the gate order lives in command/gate.go alone", name, id.Name)
					}
					found = true
				}
			}
		}
	}
	if !found {
		t.Error("command/gate.go declares no gates")
	}
}

// maxShare is the most of the module's non-test code one package may hold:
// past it, a package has grown more than one concern.
const maxShare = 0.15

// TestNoPackageHoldsTooMuch: no package, the command core included, holds
// more than maxShare of the module's non-test lines, so that a new
// capability gets a package of its own rather than growing one that every
// capability reaches into.
func TestNoPackageHoldsTooMuch(t *testing.T) {
	pkgs := load(t)
	lines := map[string]int{}
	total := 0
	for _, dir := range sorted(pkgs) {
		p := pkgs[dir]
		for _, f := range p.files {
			n := p.fset.Position(f.End()).Line
			lines[dir] += n
			total += n
		}
	}
	for _, dir := range sorted(lines) {
		if share := float64(lines[dir]) / float64(total); share > maxShare {
			t.Errorf("%s holds %d of the module's %d non-test lines (%.0f%%, at most %.0f%%): split it", dir, lines[dir], total, 100*share, 100*maxShare)
		}
	}
	if lines["command"] == 0 {
		t.Error("no command core found")
	}
	t.Logf("command core: %d of %d non-test lines (%.1f%%)", lines["command"], total, 100*float64(lines["command"])/float64(total))
}
