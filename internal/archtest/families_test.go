package archtest

import (
	"go/ast"
	"testing"
)

// TestFamiliesReachNoServer: a family of commands never names the core's
// server type nor asks a client for its server (Client.Server): what it
// needs comes in command.Env or through the core's documented entry points
// on the Table and the Client, so that its state and the server's stay
// apart.
func TestFamiliesReachNoServer(t *testing.T) {
	pkgs := load(t)
	for _, dir := range sorted(pkgs) {
		if !family(dir) {
			continue
		}
		p := pkgs[dir]
		for _, name := range sorted(p.files) {
			ast.Inspect(p.files[name], func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.SelectorExpr:
					if x, ok := n.X.(*ast.Ident); ok && x.Name == "command" && n.Sel.Name == "Server" {
						t.Errorf("%s: family %s names command.Server", p.fset.Position(n.Pos()), dir)
					}
				case *ast.CallExpr:
					if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Server" && len(n.Args) == 0 {
						t.Errorf("%s: family %s asks for a server", p.fset.Position(n.Pos()), dir)
					}
				}
				return true
			})
		}
	}
}
